"""What an emulated container does: scripted programs for tests, faithful defaults per image.

Defaults: ``volcanosh/example-mpi`` runs its shell script through ``shell.py`` (the master prints the
``mpi_hello_world`` lines for the workers of its hosts file, as in the upstream README's expected output; workers
run ``sshd -D`` until stopped); kubectl images run the ``kubectl wait`` / follow-logs scripts of the upstream
example (``kubectl.py``); ``docker/whalesay`` prints cowsay's whale; ``argoexec`` runs a resource step
(``argo/executor.py``). Anything else exits 0 at once.
"""

from __future__ import annotations

import fnmatch
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, KubeApi
from airflow_provider_volcano_argo.sandbox.kubelet.envvars import resolve_env
from airflow_provider_volcano_argo.sandbox.kubelet.volumes import PodVolumes, object_data


@dataclass
class ContainerContext:
    """What a running program sees: its pod and container, output, the API, mounted files, env."""

    pod: dict
    container: dict
    write: Callable[..., None]  # write(text, stamp_ns=None): one line of the container's output
    stopped: threading.Event
    api: KubeApi
    time_scale: float = 1.0
    restart_count: int = 0
    termination_message: str = ""  # what the program wrote to /dev/termination-log (the terminated state's message)
    _fail_code: list[int] = field(default_factory=list)
    fail_reason: str | None = None  # the terminated state's reason of an injected end (e.g. OOMKilled)
    # whether the container's PID 1 acts on SIGTERM: a default-action signal sent to a PID namespace's init is
    # dropped by the kernel (kernel/signal.c: sig_task_ignored, SIGNAL_UNKILLABLE), so a shell left as PID 1
    # ignores it and the kubelet's grace period runs out; programs set it when they install a handler or are exec'ed
    handles_sigterm: bool = False
    forwards_sigterm: bool = False  # PID 1 passes SIGTERM on to the program, not PID 1 itself (argoexec emissary)
    killed: bool = False
    exited: threading.Event = field(default_factory=threading.Event)
    environment: dict[str, str] | None = None  # resolved by the kubelet before the container started
    volumes: PodVolumes | None = None  # the pod's mounted volumes (read_file, write_file)

    def sigterm(self) -> None:
        """Deliver SIGTERM to PID 1 (containerd's StopContainer): it stops the program only if it handles it."""
        if self.handles_sigterm or self.forwards_sigterm:
            self.stopped.set()

    def sigkill(self) -> None:
        """Deliver SIGKILL once the grace period has run out: the program stops whatever it does (exit code 137)."""
        self.killed = True
        self.stopped.set()

    @property
    def namespace(self) -> str:
        return self.pod["metadata"]["namespace"]

    @property
    def pod_api(self) -> KubeApi:
        """The API as the pod's service account (what kubectl inside the pod would be)."""
        sa = self.pod["spec"].get("serviceAccountName") or "default"
        return self.api.impersonating(f"system:serviceaccount:{self.namespace}:{sa}", ["system:serviceaccounts"])

    def sleep(self, seconds: float) -> bool:
        """Sleep unless stopped; False when the container is being stopped."""
        return not self.stopped.wait(max(seconds, 0))

    def fail_now(self, exit_code: int, reason: str | None = None) -> None:
        """Fault injection: end the program with ``exit_code`` (and that terminated ``reason``)."""
        self._fail_code.append(exit_code)
        self.fail_reason = reason
        self.stopped.set()

    @property
    def env(self) -> dict[str, str]:
        """The container's environment as the kubelet resolved it before starting it (``envvars.py``)."""
        if self.environment is None:  # a context built outside a pod runner (unit tests): resolve as the admin
            self.environment = resolve_env(self.pod, self.container, self._data)
        return self.environment

    def _data(self, kind: str, name: str) -> dict[str, str] | None:
        try:
            obj = self.api.get(kind, name, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return {k: v.decode("utf-8", "replace") for k, v in (object_data(obj, kind) or {}).items()}

    def _host_file(self, path: str):
        return self.volumes.host_path(self.container, path) if self.volumes is not None else None

    def read_file(self, path: str) -> str | None:
        """Read ``path`` as the container sees it: from its mounted volumes (``subPath``, ``items`` applied), else None.

        A ConfigMap/Secret volume holds what the kubelet wrote when it mounted it (``volumes.py``); an emptyDir is
        shared by the pod's containers; a hostPath is the node's file (``Kubelet.node_root``).
        """
        host = self._host_file(path)
        if host is not None and host.is_file():
            return host.read_bytes().decode("utf-8", "replace")
        if path == "/var/run/secrets/kubernetes.io/serviceaccount/namespace":
            return self.namespace
        return None

    def write_file(self, path: str, text: str) -> bool:
        """Write ``path`` in a writable mount (emptyDir, hostPath, a claim); False where the container cannot.

        ConfigMap, Secret, downwardAPI and projected volumes are mounted read-only (``pkg/volume``: their
        ``GetAttributes`` ReadOnly), as is any ``readOnly`` mount.
        """
        host = self._host_file(path)
        if host is None or self.volumes is None:
            return False
        mount = self.volumes.mount_of(self.container, path)
        if mount is None or self.volumes.read_only(mount):
            return False
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text(text)
        return True


class Program:
    """A container's behaviour: ``run(ctx)`` returns the exit code."""

    def run(self, ctx: ContainerContext) -> int:
        return 0


@dataclass
class ScriptedProgram(Program):
    """Print ``lines`` (or ``count`` lines of ``line_template``), stay up a while, then exit.

    Lines come at ``rate`` lines/s if given; the program stays up for ``duration`` seconds, then exits with
    ``exit_code`` (or ``exit_codes[restart]`` per container restart). The lines numbered in ``stamped_early`` go
    to stderr and were stamped just before the line ahead of them (stdout): containerd stamps each stream's lines
    in that stream's goroutine before the shared write (``internal/cri/io/logger.go: redirectLogs``), so such a
    line lands in the file after a newer stamp.
    """

    lines: list[str] | None = None
    count: int = 0
    line_template: str = "line {i}"
    line_bytes: int | None = None
    rate: float | None = None
    duration: float = 0.0
    exit_code: int = 0
    exit_codes: list[int] | None = None
    stamped_early: tuple[int, ...] = ()
    ignores_sigterm: bool = False  # as a shell left as PID 1 does: a kill then waits the whole grace period

    def _lines(self):
        if self.lines is not None:
            yield from self.lines
        for i in range(self.count):
            text = self.line_template.format(i=i)
            yield text.ljust(self.line_bytes, "x") if self.line_bytes else text

    def run(self, ctx: ContainerContext) -> int:
        ctx.handles_sigterm = not self.ignores_sigterm
        started = time.monotonic()
        early: int | None = None
        for n, text in enumerate(self._lines()):
            if ctx.stopped.is_set():
                return 137
            if n in self.stamped_early and early is not None:
                ctx.write(text, stamp_ns=early)
            elif n + 1 in self.stamped_early:
                early = time.time_ns()  # the stderr goroutine stamps the next line first
                ctx.write(text, stamp_ns=max(time.time_ns(), early + 1))
            else:
                ctx.write(text)
            if self.rate:
                delay = started + (n + 1) / self.rate - time.monotonic()
                if delay > 0 and not ctx.sleep(delay):
                    return 137
        if not ctx.sleep(self.duration - (time.monotonic() - started)):
            return 137
        if self.exit_codes:
            return self.exit_codes[min(ctx.restart_count, len(self.exit_codes) - 1)]
        return self.exit_code


@dataclass
class _Rule:
    program: Program
    namespace: str
    pod: str
    container: str
    image: str


class ProgramRegistry:
    """Scripted programs by (namespace, pod, container, image) patterns; the newest matching rule wins.

    Argo's ``argoexec`` pods (resource steps) match only rules whose image pattern is not ``*``.
    """

    def __init__(self, executables: Mapping[str, Path] | None = None, server: str = "") -> None:
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        # upstream binaries that run as real processes (``kubelet/process.py``) in the images named after them
        self.executables, self.server = dict(executables or {}), server

    def script(
        self, program: Program, namespace: str = "*", pod: str = "*", container: str = "*", image: str = "*"
    ) -> None:
        with self._lock:
            self._rules.append(_Rule(program, namespace, pod, container, image))

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def resolve(self, pod: dict, container: dict) -> Program:
        from airflow_provider_volcano_argo.sandbox.argo.emissary import EmissaryProgram, inner_command

        inner = inner_command([str(w) for w in (container.get("command") or []) + (container.get("args") or [])])
        if inner is not None:
            return EmissaryProgram(self.resolve(pod, {**container, "command": inner, "args": []}))
        meta = pod["metadata"]
        with self._lock:
            rules = list(reversed(self._rules))
        system = "argoexec" in container.get("image", "")
        for rule in rules:
            if system and rule.image == "*":
                continue  # Argo's executor is not a workload: only a rule naming its image scripts it
            if all(
                fnmatch.fnmatchcase(value, pattern)
                for value, pattern in (
                    (meta["namespace"], rule.namespace),
                    (meta["name"], rule.pod),
                    (container["name"], rule.container),
                    (container.get("image", ""), rule.image),
                )
            ):
                return rule.program
        return self.default_program(container.get("image", ""))

    def default_program(self, image: str) -> Program:
        """Return the image's default behaviour: an upstream binary the image is named after, else emulated."""
        from airflow_provider_volcano_argo.sandbox.kubelet.process import HostProcess

        name = image.split("@")[0].split(":")[0].rsplit("/", 1)[-1]
        if name in self.executables:
            return HostProcess(self.executables[name], self.server)
        return default_program(image)


def default_program(image: str) -> Program:
    """Return the image's emulated behaviour."""
    from airflow_provider_volcano_argo.sandbox.kubelet.kubectl import KubectlProgram
    from airflow_provider_volcano_argo.sandbox.kubelet.shell import ShellProgram

    name = image.split("@")[0]
    if "example-mpi" in name:
        return ShellProgram()
    if "kubectl" in name:
        return KubectlProgram()
    if "whalesay" in name:
        return CowsayProgram()
    if "argoexec" in name:
        from airflow_provider_volcano_argo.sandbox.argo.executor import ArgoexecProgram

        return ArgoexecProgram()
    return Program()


def cowsay(message: str) -> list[str]:
    """Draw cowsay's speech bubble and whale (docker/whalesay)."""
    border = "_" * (len(message) + 2)
    whale = [
        "    \\",
        "     \\",
        "      \\",
        "                    ##        .",
        "              ## ## ##       ==",
        "           ## ## ## ##      ===",
        '       /""""""""""""""""___/ ===',
        "  ~~~ {~~ ~~~~ ~~~ ~~~~ ~~ ~ /  ===- ~~~",
        "       \\______ o          __/",
        "        \\    \\        __/",
        "          \\____\\______/",
    ]
    return [f" {border}", f"< {message} >", f" {'-' * (len(message) + 2)}", *whale]


class CowsayProgram(Program):
    """``docker/whalesay`` with ``command: [cowsay]``: the whale says ``args[0]``."""

    def run(self, ctx: ContainerContext) -> int:
        args: list[Any] = (ctx.container.get("command") or [])[1:] + (ctx.container.get("args") or [])
        for line in cowsay(" ".join(str(a) for a in args)):
            ctx.write(line)
        return 0
