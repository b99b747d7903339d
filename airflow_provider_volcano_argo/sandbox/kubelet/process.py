"""Run a container's command as a real process, in a root of its own, as a container runtime runs an image.

For images whose program is an upstream binary the sandbox has (``argoexec``): the process runs under bubblewrap
(Debian's ``bwrap``) with

- a root of its own: the node's ``/usr`` and ``/etc`` read-only, a fresh ``/tmp``, ``/dev`` and ``/proc``, and the
  image's binary in ``/usr/local/bin`` (on the image's ``PATH``);
- its own PID namespace with the command as PID 1 (``--as-pid-1``): the kernel then drops a signal the command has
  no handler for, SIGKILL aside, as for a container's PID 1 (``kernel/signal.c: sig_task_ignored``);
- every ``volumeMount`` bound at its ``mountPath`` (``subPath`` applied, read-only where the kubelet mounts it so),
  and ``/dev/termination-log`` (``terminationMessagePath``'s default), read back as the terminated state's message
  (at most 4096 bytes: ``pkg/kubelet/kuberuntime/kuberuntime_container.go: getTerminationMessage``);
- the node's network (the API server listens on loopback) and the environment the kubelet resolved, plus the
  ``kubernetes`` Service's variables as the kubelet adds them to every container (``pkg/kubelet/kubelet_pods.go:
  getServiceEnvVarMap``), pointing where kube-proxy would send them: the API server's own address.

SIGTERM and SIGKILL from the pod's life cycle go to the process itself.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import threading
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext, Program

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.kubelet.volumes import PodVolumes

#: the PATH of an image that sets none (Docker's default; Argo's images keep it)
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TERMINATION_LOG = "/dev/termination-log"
TERMINATION_MESSAGE_MAX = 4096  # kubecontainer.MaxContainerTerminationMessageLength


class RuntimeUnavailable(RuntimeError):
    """The node cannot run a real process in a root of its own (no ``bwrap``)."""


def bwrap() -> str:
    """Return the ``bwrap`` command, or raise with how to get it."""
    found = shutil.which("bwrap")
    if not found:
        raise RuntimeUnavailable("bubblewrap is not installed: `apt-get install bubblewrap` (Debian's package)")
    return found


def service_environment(server: str) -> dict[str, str]:
    """Return the ``kubernetes`` Service's variables for an API server at ``server`` (``https://HOST:PORT``)."""
    url = urllib.parse.urlsplit(server)
    host, port = url.hostname or "127.0.0.1", str(url.port or 443)
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
        "KUBERNETES_SERVICE_PORT_HTTPS": port,
        "KUBERNETES_PORT": f"tcp://{host}:{port}",
        "KUBERNETES_PORT_443_TCP": f"tcp://{host}:{port}",
        "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_443_TCP_PORT": port,
        "KUBERNETES_PORT_443_TCP_ADDR": host,
    }


def container_mounts(container: dict, volumes: PodVolumes) -> list[tuple[Path, str, bool]]:
    """Return (node path, mount path, read-only) of each of the container's mounts, outermost first."""
    mounts = []
    for mount in sorted(container.get("volumeMounts") or [], key=lambda m: len(m["mountPath"].rstrip("/"))):
        base = volumes.mounted.get(mount["name"])
        if base is None:
            continue
        source = base / mount["subPath"] if mount.get("subPath") else base
        # a missing subPath is made a directory before the container starts (pkg/kubelet/kubelet_pods.go:
        # makeMounts, SafeMakeDir)
        if not source.exists():
            source.mkdir(parents=True)
        mounts.append((source, mount["mountPath"], volumes.read_only(mount)))
    return mounts


def bwrap_argv(
    binary: Path, mounts: list[tuple[Path, str, bool]], termination_log: Path, command: list[str], info_fd: int
) -> list[str]:
    """Return the ``bwrap`` command line that runs ``command`` in the container's root (see the module)."""
    argv = [bwrap(), "--unshare-pid", "--as-pid-1", "--die-with-parent", "--info-fd", str(info_fd)]
    argv += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for link in ("bin", "sbin", "lib", "lib64"):
        if Path(f"/usr/{link}").exists():
            argv += ["--symlink", f"usr/{link}", f"/{link}"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/usr/local/bin"]
    argv += ["--ro-bind", str(binary), f"/usr/local/bin/{binary.name}"]
    for source, target, read_only in mounts:
        argv += ["--ro-bind" if read_only else "--bind", str(source), target]
    argv += ["--bind", str(termination_log), TERMINATION_LOG, "--", *command]
    return argv


def exit_code(returncode: int) -> int:
    """Return the container's exit code for a ``Popen`` return code (a signal N is 128 + N, as runc reports)."""
    return 128 - returncode if returncode < 0 else returncode


class HostProcess(Program):
    """Run the container's ``command`` + ``args`` as a real process of ``binary`` (see the module)."""

    def __init__(self, binary: Path, server: str):
        self.binary, self.server = binary, server

    def run(self, ctx: ContainerContext) -> int:
        assert ctx.volumes is not None, "a real process runs only in a pod with its volumes set up"
        command = [str(w) for w in (ctx.container.get("command") or [])] + [
            str(w) for w in ctx.container.get("args") or []
        ]
        if not command:
            command = [self.binary.name]  # the image's ENTRYPOINT
        work = ctx.volumes.pod_dir / "containers" / ctx.container["name"]
        work.mkdir(parents=True, exist_ok=True)
        termination_log = work / f"termination-log-{ctx.restart_count}"
        termination_log.write_bytes(b"")
        env = {"PATH": IMAGE_PATH, "HOSTNAME": ctx.pod["metadata"]["name"], **service_environment(self.server)}
        env.update(ctx.env)
        info_read, info_write = os.pipe()
        mounts = container_mounts(ctx.container, ctx.volumes)
        argv = bwrap_argv(self.binary, mounts, termination_log, command, info_write)
        ctx.handles_sigterm = True  # the signal goes to the process, which decides
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(info_write,),
            start_new_session=True,
        )
        os.close(info_write)
        reader = threading.Thread(target=_forward, args=(proc, ctx), daemon=True)
        reader.start()  # first: bwrap's own errors are the container's log
        try:
            pid = _child_pid(info_read, proc)
        finally:
            os.close(info_read)
        termed = killed = False
        while proc.poll() is None:
            if not ctx.stopped.wait(0.1):
                continue
            if pid and (ctx.killed or ctx._fail_code) and not killed:
                _signal(pid, signal.SIGKILL)
                killed = True
            elif pid and not termed:
                _signal(pid, signal.SIGTERM)
                termed = True
            try:
                proc.wait(0.1)
            except subprocess.TimeoutExpired:
                pass
        # a sandbox child that bwrap left waiting on a failed set-up would outlive it: its session goes too
        _signal(-proc.pid, signal.SIGKILL)
        reader.join(5)
        ctx.termination_message = termination_log.read_bytes()[-TERMINATION_MESSAGE_MAX:].decode("utf-8", "replace")
        return exit_code(proc.returncode)


def _child_pid(info_fd: int, proc: subprocess.Popen) -> int | None:
    """Return the command's host PID from bwrap's ``--info-fd`` JSON (None if bwrap exited without one).

    The JSON is read as far as it parses, not to end of file: a sandbox child that bwrap left behind on a failed
    set-up may hold the pipe open.
    """
    data = b""
    while True:
        ready, _, _ = select.select([info_fd], [], [], 0.1)
        chunk = os.read(info_fd, 4096) if ready else b""
        data += chunk
        try:
            return int(json.loads(data)["child-pid"])
        except (ValueError, KeyError):
            pass
        if (ready and not chunk) or (not ready and proc.poll() is not None):
            return None


def _signal(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to ``pid`` (a negative one: the process group); one that has exited already needs none."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _forward(proc: subprocess.Popen, ctx: ContainerContext) -> None:
    """Copy the process's output into the container's log, a line at a time."""
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            ctx.write(raw.decode("utf-8", "replace").rstrip("\n"))
    except FileNotFoundError:  # the node's log folder went with the sandbox's stop
        pass
