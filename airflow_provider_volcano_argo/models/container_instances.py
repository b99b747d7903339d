"""Container instances of a Volcano task's pods: which logs exist, when each has ended, how each exited.

A container instance is one run of a container: a pod uid, a container name and a restart count. A restart or a
pod re-created under the same name (``RestartJob``) starts a new instance with a log of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

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


def log_instances(pods: Iterable[dict], container: str, jobs: set[str]) -> list[tuple[dict, LogInstance]]:
    """Return the instances of ``container`` that have started, in pods of ``jobs``, oldest attempt first."""
    found = []
    for pod in pods:
        meta = pod["metadata"]
        if job_of_pod(pod) not in jobs:
            continue
        status = _container_status(pod, container)
        if not status or not ({"running", "terminated"} & set(status.get("state") or {})):
            continue
        retry = int((meta.get("annotations") or {}).get(VOLCANO_RETRY_COUNT_ANNOTATION, 0) or 0)
        restart = int(status.get("restartCount", 0) or 0)
        key = instance_key(meta["uid"], container, restart)
        found.append((pod, LogInstance(key, meta["name"], retry, restart)))
    return sorted(
        found, key=lambda item: (item[1].retry, item[0]["metadata"].get("creationTimestamp", ""), item[1].restart)
    )


def instance_finished(pods: Iterable[dict], key: str) -> bool:
    """Tell whether an instance has finished: its pod is gone, it was restarted, or it is terminated."""
    uid, container, restart = key.rsplit("/", 2)
    for pod in pods:
        if pod["metadata"]["uid"] != uid:
            continue
        status = _container_status(pod, container)
        if status is None:
            return True
        if int(status.get("restartCount", 0) or 0) > int(restart):
            return True
        return "terminated" in (status.get("state") or {})
    return True


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
