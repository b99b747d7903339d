"""What a followed run reports: the trigger events as types, the XCom summary and the failure message."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any, TypedDict

from airflow_provider_volcano_argo.models.names import VOLCANO_TASK_SPEC_LABEL
from airflow_provider_volcano_argo.models.phases import PhaseVerdict, job_phase, workflow_message, workflow_phase

#: What the last log lines may take of a trigger event in all: the event is stored in the task instance's
#: ``next_kwargs`` and Airflow logs it in full.
TAIL_BUDGET_BYTES = 64 * 1024
#: What one line may take of it (the rest is cut and said so), so that one huge line cannot crowd out the others.
TAIL_LINE_BYTES = 4 * 1024


class WorkflowSummary(TypedDict):
    """The followed Workflow in an event."""

    name: str
    uid: str | None
    phase: str
    message: str
    started_at: str | None
    finished_at: str | None


class JobSummary(TypedDict):
    """One Volcano Job in an event and in the XCom result."""

    name: str
    namespace: str | None
    uid: str | None
    phase: str
    retry_count: int
    task_status_count: dict[str, Any]
    succeeded: int
    failed: int
    created_at: str | None
    finished_at: str | None


class ExitCode(TypedDict):
    """A non-zero exit of the followed container."""

    pod: str
    container: str
    exit_code: int
    reason: str
    restart_count: int


class FollowEvent(TypedDict):
    """The event of ``ArgoWorkflowTrigger`` (and the result of blocking mode)."""

    status: str  # models.follow.OutcomeStatus
    message: str
    reason: str
    details: list[str]
    namespace: str
    workflow: WorkflowSummary
    jobs: list[JobSummary]
    tails: dict[str, list[str]]
    lines_streamed: int
    exit_codes: list[ExitCode]
    log_book: dict[str, Any]


class PhaseEvent(TypedDict, total=False):
    """The event of ``ObjectPhaseTrigger``: ``status`` is a ``PhaseVerdict``, ``timeout`` or ``error``."""

    status: PhaseVerdict | str
    phase: str
    name: str
    namespace: str
    kind: str
    message: str


def workflow_summary(name: str, uid: str | None, workflow: dict | None) -> WorkflowSummary:
    """Summarize the followed Workflow (``name`` and ``uid`` as followed, the rest as last seen)."""
    status = (workflow or {}).get("status") or {}
    return {
        "name": name,
        "uid": uid,
        "phase": workflow_phase(workflow),
        "message": workflow_message(workflow),
        "started_at": status.get("startedAt"),
        "finished_at": status.get("finishedAt"),
    }


def task_status_count(pods: Iterable[dict]) -> dict[str, Any]:
    """Count a Job's pods per task and phase, in the shape of Volcano's ``taskStatusCount``.

    Pods being deleted are left out, as ``syncJob`` (``calcPodStatus``) leaves them out. From the pods, not the
    Job's status: since Volcano v1.11 a Completed or Failed Job reports no ``taskStatusCount`` and 0 succeeded and
    failed (``killPods`` counts only pods whose deletion failed, volcano#4616), while its finished pods remain.
    """
    counts: dict[str, Any] = {}
    for pod in pods:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            continue
        task = (meta.get("labels") or {}).get(VOLCANO_TASK_SPEC_LABEL, "")
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        bucket = counts.setdefault(task, {"phase": {}})["phase"]
        bucket[phase] = bucket.get(phase, 0) + 1
    return counts


def job_summary(job: dict, pods: list[dict] | None = None) -> JobSummary:
    """Summarize one Volcano Job for the XCom result: per-task counts from its ``pods`` when they were listed."""
    status = job.get("status") or {}
    state = status.get("state") or {}
    if pods is None:  # not listed: what the Job's status says
        per_task = status.get("taskStatusCount") or {}
        succeeded, failed = int(status.get("succeeded", 0) or 0), int(status.get("failed", 0) or 0)
    else:
        per_task = task_status_count(pods)
        succeeded = sum(t["phase"].get("Succeeded", 0) for t in per_task.values())
        failed = sum(t["phase"].get("Failed", 0) for t in per_task.values())
    return {
        "name": job["metadata"]["name"],
        "namespace": job["metadata"].get("namespace"),
        "uid": job["metadata"].get("uid"),
        "phase": job_phase(job),
        "retry_count": int(status.get("retryCount", 0) or 0),
        "task_status_count": per_task,
        "succeeded": succeeded,
        "failed": failed,
        "created_at": job["metadata"].get("creationTimestamp"),
        "finished_at": state.get("lastTransitionTime"),
    }


def summarize(event: FollowEvent) -> dict[str, Any]:
    """Build the XCom result: Workflow, Jobs, final phase, retries, task status counts, timings."""
    jobs = event.get("jobs", [])
    wf = event["workflow"]
    first = jobs[0] if len(jobs) == 1 else None
    started = wf.get("started_at") or (first or {}).get("created_at")
    finished = wf.get("finished_at") or (first or {}).get("finished_at")
    return {
        "status": event["status"],
        "namespace": event["namespace"],
        "workflow_name": wf["name"],
        "workflow_uid": wf["uid"],
        "workflow_phase": wf["phase"],
        "job_name": first["name"] if first else None,
        "phase": first["phase"] if first else wf["phase"],
        "retry_count": first["retry_count"] if first else None,
        "task_status_count": first["task_status_count"] if first else None,
        "jobs": jobs,
        "started_at": started,
        "finished_at": finished,
        "duration_seconds": _duration(started, finished),
        "log_lines": event.get("lines_streamed", 0),
    }


def _duration(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None

    def parse(stamp: str) -> datetime.datetime:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    return (parse(end) - parse(start)).total_seconds()


def failure_message(event: FollowEvent, log_task: str) -> str:
    """Explain a failed run: phase, the Volcano/Workflow message, scheduler reasons, exit codes, last log lines."""
    lines = [event["message"]]
    wf = event["workflow"]
    if wf.get("message"):
        lines.append(f"Argo Workflow {wf['name']} {wf.get('phase') or ''}: {wf['message']}")
    for job in event.get("jobs", []):
        lines.append(
            f"Volcano Job {job['name']}: phase {job['phase'] or 'unknown'}, retries {job['retry_count']}, "
            f"task status {job['task_status_count']}"
        )
    lines.extend(event.get("details") or [])
    for code in event.get("exit_codes") or []:
        lines.append(
            f"Container {code['container']} of pod {code['pod']} exited with code {code['exit_code']} "
            f"({code['reason'] or 'no reason'}; restarts: {code['restart_count']})"
        )
    for job, tail in (event.get("tails") or {}).items():
        if tail:
            lines.append(f"Last {len(tail)} lines of {log_task} ({job}):")
            lines.extend(f"  {line}" for line in tail)
    return "\n".join(lines)


def _cut(line: str, limit: int) -> str:
    """Return ``line`` within ``limit`` bytes, the note of what was cut included (else it would not fit a share)."""
    data = line.encode()
    if len(data) <= limit:
        return line
    keep = max(limit - len(f" ... [{len(data)} bytes cut]"), 0)  # the count cut has at most as many digits
    return data[:keep].decode(errors="ignore") + f" ... [{len(data) - keep} bytes cut]"


def bounded_tails(tails: dict[str, list[str]], budget: int = TAIL_BUDGET_BYTES) -> dict[str, list[str]]:
    """Return the newest lines of each job's tail that fit an equal share of ``budget`` bytes, long lines cut."""
    share = budget // max(len(tails), 1)
    bounded: dict[str, list[str]] = {}
    for job, lines in tails.items():
        kept: list[str] = []
        used = 0
        for line in reversed(lines):
            line = _cut(line, min(TAIL_LINE_BYTES, share))
            size = len(line.encode())
            if used + size > share:
                break
            kept.append(line)
            used += size
        bounded[job] = kept[::-1]
    return bounded
