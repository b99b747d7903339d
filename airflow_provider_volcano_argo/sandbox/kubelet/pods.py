"""One pod's life on an emulated node.

Init containers in order, then containers, with restart policy, readiness, ``activeDeadlineSeconds``, and the
status the kubelet reports (``pkg/kubelet/kubelet_pods.go``, ``pkg/kubelet/status/generate.go``,
``pkg/kubelet/prober``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.sandbox.emulation.cluster import now_rfc3339
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, KubeApi
from airflow_provider_volcano_argo.sandbox.kubelet.backoff import BACKOFF_MAX, BACKOFF_START, CrashLoopBackOff
from airflow_provider_volcano_argo.sandbox.kubelet.envvars import expand
from airflow_provider_volcano_argo.sandbox.kubelet.pod_setup import PodSetup
from airflow_provider_volcano_argo.sandbox.kubelet.pod_status import ContainerRun, pod_status
from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext, ProgramRegistry
from airflow_provider_volcano_argo.sandbox.kubelet.volumes import PodVolumes

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.kubelet.logstore import LogStore

log = logging.getLogger(__name__)

MINIMUM_GRACE_SECONDS = 2.0  # kuberuntime_manager.go: minimumGracePeriodInSeconds
#: record(pod, type, reason, message, field_path): an Event on the pod from the kubelet
Recorder = Callable[[dict, str, str, str, "str | None"], None]


def grace_seconds(pod: dict) -> float:
    """Return the grace period the kubelet gives a deleted pod's containers (``killContainer``).

    The deletion's ``deletionGracePeriodSeconds``, else the spec's ``terminationGracePeriodSeconds``, at least 2 s.
    """
    grace = pod["metadata"].get("deletionGracePeriodSeconds")
    if grace is None:
        grace = pod["spec"].get("terminationGracePeriodSeconds", MINIMUM_GRACE_SECONDS)
    return max(float(grace), MINIMUM_GRACE_SECONDS)


class PodRunner(PodSetup):
    """Runs a pod bound to this kubelet's node until it ends or is deleted."""

    def __init__(
        self,
        pod: dict,
        api: KubeApi,
        programs: ProgramRegistry,
        logs: LogStore,
        time_scale: float,
        creating_seconds: float = 0.0,
        node_api: KubeApi | None = None,
        pod_dir: Path | None = None,
        node_root: Path | None = None,
        record: Recorder | None = None,
    ):
        self.pod = pod
        self.api = api
        # Secrets, ConfigMaps and claims are read as the node (system:node:<name>), which the Node authorizer
        # allows only for objects the node's pods reference
        self.node_api = node_api or api
        self.record: Recorder = record or (lambda *_: None)
        self.volumes = (
            PodVolumes(pod, pod_dir, node_root, self._object, self._token)
            if pod_dir is not None and node_root is not None
            else None
        )
        self.programs = programs
        self.logs = logs
        self.time_scale = time_scale
        self.stop = threading.Event()
        self.lock = threading.RLock()
        spec = pod["spec"]
        self.init = [ContainerRun(c) for c in spec.get("initContainers", []) or []]
        self.main = [ContainerRun(c) for c in spec.get("containers", [])]
        if not self.init:  # kubelet_pods.go convertToAPIContainerStatuses: the default waiting reason
            for run in self.main:
                run.state = {"waiting": {"reason": "ContainerCreating"}}
        self.creating_seconds = creating_seconds
        self.phase = "Pending"
        self.reason: str | None = None
        self.message: str | None = None
        self.start_time = now_rfc3339()
        self.initialized = not self.init
        self.dirty = False  # a status write failed (API server restarting): the kubelet retries it
        self.reporting = threading.Lock()  # one status write at a time, each of the state as it is when it starts
        # the pod's own thread sleeps until a container starts or ends (no polling: a node may hold 1,000 pods)
        self.changed = threading.Event()
        self.containers_running = 0
        self.thread = threading.Thread(target=self._run, name=f"pod-{pod['metadata']['name']}", daemon=True)

    @property
    def key(self) -> tuple[str, str]:
        return self.pod["metadata"]["namespace"], self.pod["metadata"]["name"]

    def start(self) -> None:
        self.thread.start()

    def kill(self) -> None:
        """Stop every container (deletion, shutdown)."""
        self.stop.set()
        with self.lock:
            for run in self.init + self.main:
                if run.context:
                    run.context.stopped.set()
        self.changed.set()

    def terminate(self, grace: float) -> None:
        """Stop the pod as the kubelet does on deletion (``kuberuntime_container.go: killContainer``).

        SIGTERM to each container's PID 1 (containerd ``StopContainer``), then SIGKILL to whatever still runs after
        ``grace`` seconds; no container is restarted meanwhile.
        """
        self.stop.set()
        with self.lock:
            contexts = [r.context for r in self.init + self.main if r.context]
        for context in contexts:
            context.sigterm()
        self.changed.set()
        deadline = time.monotonic() + grace
        for context in contexts:
            context.exited.wait(max(deadline - time.monotonic(), 0))
        with self.lock:
            for run in self.init + self.main:
                if run.context:
                    run.context.sigkill()
        self.changed.set()

    def evict(self, message: str) -> None:
        """Evict under node pressure (``eviction_manager.go: evictPod``).

        Kill every container at once (a hard threshold's grace override is 0) and end the pod Failed, reason Evicted;
        the pod is not deleted.
        """
        with self.lock:
            self.reason, self.message = "Evicted", message
        self.terminate(0.0)
        self.thread.join(10)
        self._end("Failed")

    def fail_container(self, name: str, exit_code: int, reason: str | None = None) -> bool:
        with self.lock:
            for run in self.init + self.main:
                if run.spec["name"] == name and run.context and "running" in run.state:
                    run.context.fail_now(exit_code, reason)
                    return True
        return False

    # -- what the kubelet reads as the node ---------------------------------------------------------------
    # -- running containers -------------------------------------------------------------------------------
    def _execute(self, run: ContainerRun) -> int:
        """One instance of a container: resolve its env, run its program, record its log."""
        env = self._environment(run)
        if env is None:
            return 137  # the pod stopped before the container could be created
        spec = dict(run.spec)
        for key in ("command", "args"):  # kubecontainer.ExpandContainerCommandAndArgs: $(VAR) from the env
            if spec.get(key):
                spec[key] = [expand(str(word), env) for word in spec[key]]
        meta = self.pod["metadata"]
        instance = self.logs.new_instance(meta["namespace"], meta["name"], run.spec["name"])
        context = ContainerContext(
            self.pod, spec, instance.write, threading.Event(), self.api, self.time_scale, run.restart_count
        )
        context.environment, context.volumes = env, self.volumes
        with self.lock:
            run.context = context
            run.started_at = time.monotonic()
            run.state = {"running": {"startedAt": now_rfc3339()}}
            run.ready = "readinessProbe" not in run.spec
        self.changed.set()  # its readiness probe is now due at a known time
        self.report()
        started = now_rfc3339()
        try:
            code = self.programs.resolve(self.pod, run.spec).run(context)
        except Exception as exc:  # a program's bug shows as a crashed container, not a dead kubelet
            instance.write(f"emulated program failed: {exc!r}")
            code = 2
        if context._fail_code:
            code = context._fail_code[-1]
        if context.killed:
            code = 137  # 128 + SIGKILL
        context.exited.set()
        instance.finish()
        with self.lock:
            run.ready = False
            run.finished_at = time.monotonic()
            run.state = {
                "terminated": {
                    "exitCode": code,
                    "reason": context.fail_reason or ("Completed" if code == 0 else "Error"),
                    "startedAt": started,
                    "finishedAt": now_rfc3339(),
                    "containerID": self._container_id(run),
                }
            }
            if context.termination_message:  # kuberuntime: the container's terminationMessagePath
                run.state["terminated"]["message"] = context.termination_message
        return code

    def _container_id(self, run: ContainerRun) -> str:
        return f"emulated://{self.pod['metadata']['uid']}/{run.spec['name']}/{run.restart_count}"

    def _back_off(self, run: ContainerRun) -> bool:
        """Wait as the kubelet does before starting an exited container again; False once the pod is stopping.

        ``kuberuntime_manager.go: doBackOff``: the first restart is immediate, later ones wait (``backoff.py``).
        While it waits, ``kubelet_pods.go: convertToAPIContainerStatuses`` reports the container *Waiting*
        (``CrashLoopBackOff``) with the exited one as ``lastState`` and its ``restartCount``; ``previous`` logs
        then serve that exited instance (``validateContainerLogStatus``).
        """
        scale = self.time_scale
        backoff = run.backoff = run.backoff or CrashLoopBackOff(BACKOFF_START * scale, BACKOFF_MAX * scale)
        ended = run.state
        delay = backoff.remaining(run.finished_at, time.monotonic())
        if delay > 0:
            meta, name = self.pod["metadata"], run.spec["name"]
            message = (
                f"back-off {(backoff.delay or 0) / scale:.0f}s restarting failed container={name} "
                f"pod={meta['name']}_{meta['namespace']}({meta['uid']})"
            )
            with self.lock:
                run.state = {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
                run.last_state = ended
            self.logs.back_off(meta["namespace"], meta["name"], name)
            self.report()
            if self.stop.wait(delay):
                return False
        backoff.next(run.finished_at, time.monotonic())
        with self.lock:
            run.last_state, run.restart_count = ended, run.restart_count + 1
        return True

    def _should_restart(self, code: int) -> bool:
        policy = self.pod["spec"].get("restartPolicy", "Always")
        return not self.stop.is_set() and (policy == "Always" or (policy == "OnFailure" and code != 0))

    def _container_loop(self, run: ContainerRun) -> None:
        try:
            self._restarting(run)
        finally:
            with self.lock:
                self.containers_running -= 1
            self.changed.set()

    def _restarting(self, run: ContainerRun) -> None:
        while not self.stop.is_set():
            code = self._execute(run)
            self.report()
            if not self._should_restart(code) or not self._back_off(run):
                return

    def _run(self) -> None:
        try:
            self._lifecycle()
        except Exception:
            if not self.stop.is_set():
                log.exception("pod %s/%s failed in the emulated kubelet", *self.key)

    def _lifecycle(self) -> None:
        self.report()
        if not self._mount_volumes():
            return
        # image pull and sandbox creation (kuberuntime_container.go startContainer: EnsureImageExists first):
        # the pod stays Pending, its containers waiting, though the gang was admitted and the pod is bound
        if self.creating_seconds and self.stop.wait(self.creating_seconds):
            return
        for run in self.init:  # init containers: in order, each must succeed (restarting per policy)
            while True:
                code = self._execute(run)
                if code == 0 or self.stop.is_set():
                    break
                if self.pod["spec"].get("restartPolicy", "Always") == "Never":
                    self._end("Failed")
                    return
                self.report()
                if not self._back_off(run):
                    return
            if self.stop.is_set():
                return
        self.initialized = True
        with self.lock:
            self.phase = "Running"
        threads = [threading.Thread(target=self._container_loop, args=(r,), daemon=True) for r in self.main]
        self.containers_running = len(threads)
        for thread in threads:
            thread.start()
        deadline = self.pod["spec"].get("activeDeadlineSeconds")
        deadline_at = time.monotonic() + float(deadline) if deadline is not None else None
        while True:
            self.changed.clear()  # before looking: a container ending after this point wakes the wait below
            with self.lock:
                if self.containers_running == 0:
                    break
            if deadline_at is not None and time.monotonic() > deadline_at:
                self.reason, self.message = (
                    "DeadlineExceeded",
                    "Pod was active on the node longer than the specified deadline",
                )
                self.kill()
                for thread in threads:
                    thread.join(10)
                self._end("Failed")
                return
            due = [t for t in (deadline_at, self._probe()) if t is not None]
            self.changed.wait(max(min(due) - time.monotonic(), 0.01) if due else None)
        if self.stop.is_set():
            return
        codes = [r.state.get("terminated", {}).get("exitCode", 1) for r in self.main]
        self._end("Succeeded" if all(c == 0 for c in codes) else "Failed")

    def _probe(self) -> float | None:
        """Turn ready the running containers whose readiness probe's delay has passed.

        Return when the next pending one is due (monotonic), or None.
        """
        changed, pending = False, []
        now = time.monotonic()
        with self.lock:
            for run in self.main:
                probe = run.spec.get("readinessProbe")
                if probe and "running" in run.state and not run.ready:
                    due = run.started_at + float(probe.get("initialDelaySeconds", 0)) * self.time_scale
                    if now >= due:
                        run.ready = changed = True
                    else:
                        pending.append(due)
        if changed:
            self.report()
        return min(pending) if pending else None

    def _end(self, phase: str) -> None:
        with self.lock:
            self.phase = phase
        self.report()

    # -- status -------------------------------------------------------------------------------------------
    def status(self) -> dict:
        return pod_status(self)

    def report(self) -> None:
        """Write the status through ``pods/{name}/status`` (a pod being deleted may already be gone).

        Writes are serialized, so an older status never lands after a newer one: the container's thread and the
        pod's (readiness) both report, and two concurrent PATCHes may reach the API server in either order. The
        kubelet writes from one status manager that never sends a status older than the last one sent
        (``pkg/kubelet/status/status_manager.go: syncPod``, ``needsUpdate``).
        """
        namespace, name = self.key
        with self.reporting:
            try:
                self.api.patch("pods", name, {"status": self.status()}, namespace, subresource="status")
                self.dirty = False
            except ApiException as exc:
                self.dirty = exc.status not in (404,)
                log.debug("status of %s/%s: %s", namespace, name, exc)
            except Exception as exc:  # the API server may be restarting
                self.dirty = True
                log.debug("status of %s/%s: %s", namespace, name, exc)
