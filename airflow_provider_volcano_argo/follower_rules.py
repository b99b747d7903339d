"""The follower's decisions as pure functions: when a run has ended and how, and which log instances exist."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.phases import JOB_FAILED_PHASES, JOB_SUCCESS_PHASES, WORKFLOW_DONE_PHASES
from airflow_provider_volcano_argo.progress import job_phase

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.follower import FollowSpec

CURSOR_ANNOTATION = "volcano-argo.airflow.apache.org/log-cursors"


@dataclass
class FollowOutcome:
    """``status`` is success, failed, timeout or error; ``reason`` a short machine-readable cause."""

    status: str
    message: str
    reason: str = ""
    details: list[str] = field(default_factory=list)


def owned_by(obj: dict, owner_uid: str | None) -> bool:
    """Whether ``obj`` has an ownerReference to ``owner_uid`` (Argo's setOwnerReference or a manual one)."""
    if not owner_uid:
        return False
    return any(ref.get("uid") == owner_uid for ref in obj["metadata"].get("ownerReferences") or [])


def _created_at(obj: dict) -> float:
    stamp = obj["metadata"].get("creationTimestamp")
    if not stamp:
        return 0.0
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _started(job: dict) -> bool:
    status = job.get("status") or {}
    return any(int(status.get(k, 0) or 0) for k in ("running", "succeeded", "failed"))


def decide(
    spec: FollowSpec,
    workflow: dict | None,
    workflow_gone: bool,
    jobs: dict[str, dict],
    jobs_gone: set[str],
    now: float,
) -> FollowOutcome | None:
    """The outcome once it is known, else None (keep following)."""
    wf_status = (workflow or {}).get("status") or {}
    wf_phase = wf_status.get("phase", "") or ""
    wf_message = wf_status.get("message", "") or ""
    name = spec.workflow_name
    if workflow_gone:
        return FollowOutcome("failed", f"Argo Workflow {name} was deleted while the task was following it.", "deleted")
    for job_name in sorted(jobs_gone):
        if job_phase(jobs.get(job_name)) not in JOB_SUCCESS_PHASES | JOB_FAILED_PHASES:
            return FollowOutcome(
                "failed", f"Volcano Job {job_name} was deleted before it finished (Workflow {name}).", "deleted"
            )
    if spec.job_name:
        job = jobs.get(spec.job_name)
        phase = job_phase(job)
        if phase in JOB_SUCCESS_PHASES:
            return FollowOutcome("success", f"Volcano Job {spec.job_name} {phase}.", "completed")
        if phase in JOB_FAILED_PHASES:
            return FollowOutcome("failed", f"Volcano Job {spec.job_name} ended {phase}.", phase.lower())
        if wf_phase in WORKFLOW_DONE_PHASES and (job is None or wf_phase != "Succeeded"):
            what = "without creating" if job is None else "before"
            return FollowOutcome(
                "failed",
                f"Argo Workflow {name} ended {wf_phase} {what} Volcano Job {spec.job_name}"
                + (f" finished: {wf_message}" if job is not None else f": {wf_message or 'no message'}"),
                "workflow_ended",
            )
    elif wf_phase in WORKFLOW_DONE_PHASES:
        failing = sorted(n for n, j in jobs.items() if job_phase(j) in JOB_FAILED_PHASES)
        if wf_phase == "Succeeded":
            return FollowOutcome("success", f"Argo Workflow {name} Succeeded ({len(jobs)} Volcano Jobs).", "completed")
        named = "; ".join(f"Volcano Job {n} ended {job_phase(jobs[n])}" for n in failing)
        return FollowOutcome(
            "failed", f"Argo Workflow {name} ended {wf_phase}: {named or wf_message or 'no message'}", "workflow_ended"
        )
    if spec.deadline is not None and now >= spec.deadline:
        return FollowOutcome("timeout", f"execution_timeout reached while following Argo Workflow {name}.", "timeout")
    if spec.schedule_timeout is not None:
        for job_name, job in sorted(jobs.items()):
            waited = now - _created_at(job)
            if job_phase(job) in ("", "Pending") and not _started(job) and waited >= spec.schedule_timeout:
                return FollowOutcome(
                    "failed",
                    f"Volcano Job {job_name} was not admitted by the gang scheduler within schedule_timeout "
                    f"({spec.schedule_timeout:.0f} s).",
                    "unschedulable",
                )
    return None


def instance_key(pod_uid: str, container: str, restart_count: int) -> str:
    """Cursor key of one container instance: a restart or a re-created pod starts a new log."""
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


def _container_status(pod: dict, container: str) -> dict | None:
    status = pod.get("status") or {}
    for item in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if item.get("name") == container:
            return item
    return None


def log_instances(pods: Iterable[dict], container: str, jobs: set[str]) -> list[tuple[dict, LogInstance]]:
    """Instances of ``container`` that have started, in pods of the tracked ``jobs``, oldest attempt first."""
    found = []
    for pod in pods:
        meta = pod["metadata"]
        if meta.get("labels", {}).get("volcano.sh/job-name") not in jobs:
            continue
        status = _container_status(pod, container)
        if not status or not ({"running", "terminated"} & set(status.get("state") or {})):
            continue
        retry = int((meta.get("annotations") or {}).get("volcano.sh/job-retry-count", 0) or 0)
        restart = int(status.get("restartCount", 0) or 0)
        key = instance_key(meta["uid"], container, restart)
        found.append((pod, LogInstance(key, meta["name"], retry, restart)))
    return sorted(
        found, key=lambda item: (item[1].retry, item[0]["metadata"].get("creationTimestamp", ""), item[1].restart)
    )


def instance_finished(pods: Iterable[dict], key: str) -> bool:
    """An instance has finished when its pod is gone, it was restarted, or it is terminated."""
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


def exit_codes(pods: Iterable[dict], container: str) -> list[dict]:
    """Non-zero exit codes of ``container`` (current or last instance), for failure diagnostics."""
    found = []
    for pod in pods:
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
