"""Container instances of a Volcano task's pods: which logs exist, how to read each, how each exited.

A container instance is one run of a container: a pod uid, a container name and a restart count. A restart or a
pod re-created under the same name (``RestartJob``) starts a new instance with a log of its own.

``pods/log`` names a pod, not a uid, and serves two instances of a container: the current one, and with
``previous=true`` the kubelet's ``lastState`` (``kubelet_pods.go: validateContainerLogStatus``). While an exited
container waits for its restart (CrashLoopBackOff) its status is *waiting* with the exited instance as ``lastState``
and its ``restartCount`` (``convertToAPIContainerStatuses``); once the next instance runs, ``lastState`` is the one
before. An instance is read through whichever of the two holds it, and not at all once neither does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.models.log_cursor import parse_timestamp
from airflow_provider_volcano_argo.models.names import VOLCANO_JOB_NAME_LABEL, VOLCANO_RETRY_COUNT_ANNOTATION

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.models.results import ExitCode


def instance_key(pod_uid: str, container: str, restart_count: int) -> str:
    """Return the cursor key of one container instance."""
    return f"{pod_uid}/{container}/{restart_count}"


@dataclass(frozen=True)
class LogInstance:
    """One container instance whose log can be read (started, or already ended)."""

    key: str
    pod: str
    retry: int
    restart: int

    def header(self, job: str, prefixed: bool) -> str:
        who = f"[{job}] " if prefixed else ""
        return f"{who}----- log of {self.pod} (job attempt {self.retry + 1}, container restart {self.restart}) -----"


def job_of_pod(pod: dict) -> str:
    """Return the name of the Volcano Job a pod belongs to ("" for none)."""
    return (pod["metadata"].get("labels") or {}).get(VOLCANO_JOB_NAME_LABEL, "")


def _container_status(pod: dict, container: str) -> dict | None:
    status = pod.get("status") or {}
    for item in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if item.get("name") == container:
            return item
    return None


@dataclass(frozen=True)
class LogRead:
    """How ``pods/log`` reaches one instance now: through ``previous=true`` or not, and whether it has ended.

    ``restart_due``: shown ended as the current instance, but its container is restarted in its pod (``restarts``);
    the kubelet may serve the next instance to a read by name before the status shows it, so not to be read yet.
    """

    previous: bool
    ended: bool
    restart_due: bool = False


def _current(status: dict) -> int | None:
    """Return the restart count of the instance a plain read serves as running or terminated, or None."""
    started = {"running", "terminated"} & set(status.get("state") or {})
    return int(status.get("restartCount", 0) or 0) if started else None


def _last_terminated(status: dict) -> int | None:
    """Return the restart count of the instance ``lastState`` holds (what ``previous=true`` serves), or None."""
    last = (status.get("lastState") or {}).get("terminated")
    if not last:
        return None
    restart = int(status.get("restartCount", 0) or 0)
    waiting = "waiting" in (status.get("state") or {})
    # waiting in back-off, the status still describes the exited container: lastState is that very instance (same
    # containerID); a new container created but not started yet has an ID of its own and the previous as lastState
    if waiting and last.get("containerID", "") in ("", status.get("containerID", "")):
        return restart
    return restart - 1 if restart > 0 else None


def log_instances(pods: Iterable[dict], container: str, jobs: set[str]) -> list[tuple[dict, LogInstance]]:
    """Return the instances of ``container`` that have started, in pods of ``jobs``, oldest attempt first.

    Both that ``pods/log`` serves: the current one and ``lastState`` (one that ended between two watch events,
    or before the watch began, is read through ``previous``).
    """
    found = []
    for pod in pods:
        meta = pod["metadata"]
        if job_of_pod(pod) not in jobs:
            continue
        status = _container_status(pod, container)
        if not status:
            continue
        retry = int((meta.get("annotations") or {}).get(VOLCANO_RETRY_COUNT_ANNOTATION, 0) or 0)
        for restart in sorted({r for r in (_last_terminated(status), _current(status)) if r is not None}):
            found.append(
                (pod, LogInstance(instance_key(meta["uid"], container, restart), meta["name"], retry, restart))
            )
    return sorted(
        found, key=lambda item: (item[1].retry, item[0]["metadata"].get("creationTimestamp", ""), item[1].restart)
    )


def log_read(pods: Iterable[dict], key: str) -> LogRead | None:
    """Return how to read an instance's log now, or None when ``pods/log`` no longer serves it.

    None when its pod is gone: its name may already belong to a pod re-created by ``RestartJob`` (another uid),
    whose log a read by name would return; and when the container restarted again since (neither current nor
    ``lastState``). The kubelet serves a read by name from its own status (``kubelet_pods.go:
    GetKubeletContainerLogs``), which runs ahead of the one the pod watch shows: an instance shown ended whose
    container restarts (``restart_due``) is read once the status shows the restart, through ``previous``.
    """
    uid, container, restart = key.rsplit("/", 2)
    for pod in pods:
        if pod["metadata"]["uid"] != uid:
            continue
        status = _container_status(pod, container)
        if status is None:
            return None
        if _last_terminated(status) == int(restart):
            return LogRead(previous=True, ended=True)
        if _current(status) == int(restart):
            ended = (status.get("state") or {}).get("terminated")
            due = ended is not None and restarts(pod, ended)
            return LogRead(previous=False, ended=ended is not None, restart_due=due)
        return None
    return None


def started_instances(pod: dict, container: str) -> set[str]:
    """Return the keys of the instances of ``container`` in ``pod`` that have started (current or ``lastState``)."""
    status = _container_status(pod, container)
    if not status:
        return set()
    uid = pod["metadata"]["uid"]
    restarts = {r for r in (_last_terminated(status), _current(status)) if r is not None}
    return {instance_key(uid, container, r) for r in restarts}


def instance_started_at(pods: Iterable[dict], key: str) -> int | None:
    """Return when an instance started (ns since the epoch, as its status says: whole seconds), or None.

    ``state.running.startedAt`` or ``state.terminated.startedAt`` for the current instance, ``lastState``'s for the
    one before; None when the status no longer holds it (see ``log_read``) or gives no valid time.
    """
    uid, container, restart = key.rsplit("/", 2)
    for pod in pods:
        if pod["metadata"]["uid"] != uid:
            continue
        status = _container_status(pod, container) or {}
        if _last_terminated(status) == int(restart):
            states = [(status.get("lastState") or {}).get("terminated")]
        elif _current(status) == int(restart):
            states = [(status.get("state") or {}).get(s) for s in ("running", "terminated")]
        else:
            return None
        for state in states:
            try:
                return parse_timestamp((state or {})["startedAt"])
            except (KeyError, TypeError, ValueError):
                continue
        return None
    return None


def instance_finished(pods: Iterable[dict], key: str) -> bool:
    """Tell whether an instance has finished: it ended, or its log is no longer served (see ``log_read``)."""
    read = log_read(pods, key)
    return read is None or read.ended


def restarts(pod: dict, terminated: dict) -> bool:
    """Tell whether the kubelet restarts a container of ``pod`` that ended as ``terminated`` says.

    Under ``restartPolicy: Always``, or ``OnFailure`` with a non-zero code, the first time at once
    (``kuberuntime_manager.go: computePodActions``, ``doBackOff``); not once the pod is being deleted.
    """
    if pod["metadata"].get("deletionTimestamp"):
        return False
    policy = (pod.get("spec") or {}).get("restartPolicy", "Always")  # the API server's default
    return policy == "Always" or (policy == "OnFailure" and terminated.get("exitCode", 0) != 0)


def exit_codes(pods: Iterable[dict], container: str, jobs: set[str]) -> list[ExitCode]:
    """Return the non-zero exit codes of ``container`` (current or last instance) in pods of ``jobs``.

    The pod watch of a Workflow follower sees the task's pods of every Job in the namespace: only its own count.
    """
    found: list[ExitCode] = []
    for pod in pods:
        if job_of_pod(pod) not in jobs:
            continue
        status = _container_status(pod, container) or {}
        for when in ("state", "lastState"):
            ended = (status.get(when) or {}).get("terminated")
            if ended and ended.get("exitCode"):
                found.append(
                    {
                        "pod": pod["metadata"]["name"],
                        "container": container,
                        "exit_code": ended["exitCode"],
                        "reason": ended.get("reason", ""),
                        "restart_count": int(status.get("restartCount", 0) or 0),
                    }
                )
    return found
