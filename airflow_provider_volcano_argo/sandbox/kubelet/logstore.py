"""Container logs on disk and the kubelet's ``/containerLogs`` HTTPS endpoint that the API server proxies.

Follows the kubelet's log handler (``pkg/kubelet/server/server.go: getContainerLogs``) and CRI log reading
(``pkg/kubelet/kuberuntime/logs/logs.go``): one file per container instance, each line stamped with an
RFC 3339 nanosecond timestamp, rotated at ``containerLogMaxSize`` (only the current file is served; a follow
survives rotation); ``follow``, ``timestamps``, ``sinceTime``, ``sinceSeconds``, ``tailLines``,
``limitBytes`` and ``previous``.
"""

from __future__ import annotations

import datetime
import http.server
import os
import ssl
import threading
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _stamp(ns: int) -> str:
    seconds, nanos = divmod(ns, 1_000_000_000)
    return (_EPOCH + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"


def _parse_stamp(text: str) -> int:
    whole, _, frac = text.rstrip("Z").partition(".")
    base = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int((base - _EPOCH).total_seconds()) * 1_000_000_000 + int((frac or "0").ljust(9, "0")[:9])


def _now_ns() -> int:
    delta = datetime.datetime.now(datetime.timezone.utc) - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


#: The kubelet's default ``containerLogMaxSize`` (``pkg/kubelet/apis/config/v1beta1/defaults.go``:
#: ``SetDefaults_KubeletConfiguration``, "10Mi").
CONTAINER_LOG_MAX_SIZE = 10 * 1024 * 1024


@dataclass
class LogInstance:
    """The log of one container instance (one run of a container; a restart makes the next instance).

    Rotated at ``max_size`` bytes (``pkg/kubelet/logs/container_log_manager.go: rotateLatestLog``): the file is
    renamed and the container writes a new one at the same path, which is all a read is served from afterwards.
    """

    path: Path
    max_size: int | None = CONTAINER_LOG_MAX_SIZE
    done: bool = False
    rotations: int = 0
    cond: threading.Condition = field(default_factory=threading.Condition)

    def write(self, text: str, stamp_ns: int | None = None) -> None:
        """Append ``text`` stamped ``stamp_ns`` (default: now), rotating the file once it reaches ``max_size``.

        containerd takes a line's stamp in its stream's own goroutine before the shared write
        (``internal/cri/io/logger.go: redirectLogs``), so a stdout and a stderr line can land out of stamp order:
        a program passes the stamp it took earlier as ``stamp_ns``; nothing here makes stamps increase.
        """
        with self.cond:
            ns = _now_ns() if stamp_ns is None else stamp_ns
            with open(self.path, "ab") as out:
                out.write(f"{_stamp(ns)} {text}\n".encode("utf-8", "replace"))
                size = out.tell()
            if self.max_size is not None and size >= self.max_size:
                self._rotate()
            self.cond.notify_all()

    def _rotate(self) -> None:
        # rotateLatestLog: rename, then ReopenContainerLog makes the runtime write a new file at the same path.
        # The kubelet checks sizes every containerLogMonitorInterval (10 s) and keeps containerLogMaxFiles - 1
        # rotated files (gzipped); none of them is ever served, so here the check is on each write (no kinder:
        # files rotate no later) and the rotated file is removed at once (a follow holding it open still reads it).
        rotated = self.path.with_name(f"{self.path.name}.{self.rotations}")
        self.path.rename(rotated)
        self.path.write_bytes(b"")
        rotated.unlink()
        self.rotations += 1

    def finish(self) -> None:
        with self.cond:
            self.done = True
            self.cond.notify_all()


class LogStore:
    """Every container instance's log, under ``workdir``, kept until the pod is deleted."""

    def __init__(self, workdir: Path, max_size: int | None = CONTAINER_LOG_MAX_SIZE):
        self.workdir = workdir
        self.max_size = max_size  # containerLogMaxSize of new instances; None: never rotate
        workdir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._instances: dict[tuple[str, str, str], list[LogInstance]] = {}
        self._uids: dict[tuple[str, str], str] = {}  # the pods this kubelet runs, by name
        self._backing_off: set[tuple[str, str, str]] = set()  # containers waiting in CrashLoopBackOff

    def admit_pod(self, namespace: str, pod: str, uid: str) -> None:
        """Start serving the logs of pod ``uid`` under its name; an earlier pod of that name's logs are gone.

        The kubelet finds a pod's logs by name among the pods it runs (``server.go: getContainerLogs``,
        ``GetPodByName``): once ``RestartJob`` re-created a pod under the same name, the name means the new pod.
        """
        with self._lock:
            if self._uids.get((namespace, pod)) not in (None, uid):
                self._drop(namespace, pod)
            self._uids[(namespace, pod)] = uid

    def back_off(self, namespace: str, pod: str, container: str) -> None:
        """Note that ``container`` exited and waits for its restart: its ``lastState`` is now the newest instance."""
        with self._lock:
            self._backing_off.add((namespace, pod, container))

    def new_instance(self, namespace: str, pod: str, container: str) -> LogInstance:
        with self._lock:
            self._backing_off.discard((namespace, pod, container))
            runs = self._instances.setdefault((namespace, pod, container), [])
            path = self.workdir / f"{namespace}_{pod}_{container}_{len(runs)}.log"
            path.write_bytes(b"")
            runs.append(LogInstance(path, self.max_size))
            return runs[-1]

    def lookup(self, namespace: str, pod: str, container: str, previous: bool) -> LogInstance | None:
        """Return the instance a read serves (``kubelet_pods.go: validateContainerLogStatus``), or None.

        Without ``previous``: the running or terminated container, else ``lastState``: the newest instance either
        way. With ``previous``: ``lastState``, which is the newest instance while it waits in CrashLoopBackOff
        (``convertToAPIContainerStatuses`` moves the exited state there) and the one before once it runs again.
        """
        with self._lock:
            key = (namespace, pod, container)
            runs = self._instances.get(key, [])
            index = (-1 if key in self._backing_off else -2) if previous else -1
            return runs[index] if len(runs) >= -index else None

    def known(self, namespace: str, pod: str) -> bool:
        """Tell whether this kubelet runs a pod of that name (it answers 404 for others)."""
        with self._lock:
            return (namespace, pod) in self._uids or any(k[0] == namespace and k[1] == pod for k in self._instances)

    def forget_pod(self, namespace: str, pod: str) -> None:
        with self._lock:
            self._drop(namespace, pod)
            self._uids.pop((namespace, pod), None)

    def _drop(self, namespace: str, pod: str) -> None:
        for key in [k for k in self._instances if k[0] == namespace and k[1] == pod]:
            self._backing_off.discard(key)
            for run in self._instances.pop(key):
                run.finish()
                run.path.unlink(missing_ok=True)


def _select(line: bytes, since: bytes | None) -> bool:
    """Tell whether a line is at or after ``since`` (a stamp from ``_stamp``).

    The stamps this store writes all have the same width, so comparing their bytes orders them as their times;
    parsing every line's stamp with ``strptime`` (which takes a global lock) made each read of a long log cost
    milliseconds per hundred lines.
    """
    return since is None or line[: len(since)] >= since


class _Handler(http.server.BaseHTTPRequestHandler):
    store: LogStore
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes, so streams need no length

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def setup(self) -> None:
        super().setup()
        # the TLS handshake in this connection's thread, not in the accept loop, where one slow handshake held
        # back every other connection (hundreds of log reads at once then timed out)
        try:
            self.request.do_handshake()
            self.handshake_done = True
        except (ssl.SSLError, OSError):
            self.handshake_done = False

    def handle(self) -> None:
        if self.handshake_done:
            super().handle()

    def do_GET(self) -> None:  # http.server's naming
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        if len(parts) != 4 or parts[0] != "containerLogs":
            self.send_error(404, "not found")
            return
        _, namespace, pod, container = parts
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        previous = query.get("previous") == "true"
        instance = self.store.lookup(namespace, pod, container, previous)
        if instance is None:
            # server.go getContainerLogs: 404 for a pod the kubelet does not run; any error of GetContainerLogs
            # (validateContainerLogStatus) is a 400, "waiting to start" for a container that has not started yet
            if not self.store.known(namespace, pod):
                self._fail(404, f'pod "{pod}" does not exist')
            elif previous:
                self._fail(400, f'previous terminated container "{container}" in pod "{pod}" not found')
            else:
                self._fail(400, f'container "{container}" in pod "{pod}" is waiting to start: ContainerCreating')
            return
        since_ns = None
        if "sinceTime" in query:
            since_ns = _parse_stamp(query["sinceTime"])
        elif "sinceSeconds" in query:
            since_ns = _now_ns() - int(query["sinceSeconds"]) * 1_000_000_000
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self._stream(instance, query, since_ns)

    def _fail(self, code: int, message: str) -> None:
        body = message.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, instance: LogInstance, query: dict, since_ns: int | None) -> None:
        since = _stamp(since_ns).encode() if since_ns is not None else None
        follow = query.get("follow") == "true"
        timestamps = query.get("timestamps") == "true"
        limit = int(query["limitBytes"]) if "limitBytes" in query else None
        tail = int(query["tailLines"]) if "tailLines" in query else None
        sent = 0
        log = None
        try:
            with instance.cond:  # the current file (logs.go: ReadLogs opens only the path, never a rotated file)
                log = open(instance.path, "rb")
                opened = instance.rotations
            if tail is not None:
                kept: deque[bytes] = deque(maxlen=max(tail, 0))
                for raw in log:
                    if raw.endswith(b"\n") and _select(raw, since):
                        kept.append(raw)
                pending = list(kept)
            else:
                pending = []
            while True:
                batch = pending or self._read_ready(log)
                for raw in batch:
                    if not _select(raw, since):
                        continue
                    out = raw if timestamps else raw.split(b" ", 1)[1]
                    if limit is not None and sent + len(out) > limit:
                        self.wfile.write(out[: limit - sent])
                        return
                    self.wfile.write(out)
                    sent += len(out)
                pending = []
                self.wfile.flush()
                if not follow:
                    if batch:
                        continue  # the whole log as it is now, not one batch of it
                    return
                with instance.cond:  # writes are whole lines under this lock
                    if log.tell() < os.fstat(log.fileno()).st_size:
                        continue  # the kubelet reads on to EOF and only then waits for more
                    if instance.rotations != opened:
                        # waitLogs: a Rename of the watched file means "recreated", and ReadLogs opens the path
                        # again, from its start: a follow survives rotation
                        log.close()
                        log = open(instance.path, "rb")
                        opened = instance.rotations
                        continue
                    if instance.done:
                        return
                    instance.cond.wait(0.5)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, FileNotFoundError):
            return  # the client went away
        finally:
            if log is not None:
                log.close()

    @staticmethod
    def _read_ready(log) -> list[bytes]:
        """Complete lines available now (a line being written is left for the next pass)."""
        lines = []
        while True:
            position = log.tell()
            raw = log.readline()
            if not raw:
                break
            if not raw.endswith(b"\n"):
                log.seek(position)
                break
            lines.append(raw)
            if len(lines) >= 1024:
                break
        return lines


class LogServer:
    """The HTTPS endpoint on 127.0.0.1 (a free port) serving ``/containerLogs/{ns}/{pod}/{container}``."""

    def __init__(self, store: LogStore, cert_file: Path, key_file: Path):
        handler = type("Handler", (_Handler,), {"store": store})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert_file), str(key_file))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True, do_handshake_on_connect=False)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="kubelet-logs", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
