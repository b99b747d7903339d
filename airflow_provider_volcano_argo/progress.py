"""Progress lines for the task log and the summary of a Volcano Job's status (pure functions)."""

from __future__ import annotations

from typing import Any


def job_phase(job: dict | None) -> str:
    """``status.state.phase`` of a Volcano Job ("" until the controller has seen it)."""
    return ((job or {}).get("status") or {}).get("state", {}).get("phase", "") or ""


def gang_summary(job: dict) -> str:
    """E.g. ``3/3 pods running, gang admitted`` or ``0/3 pods running, gang waiting for admission``."""
    status = job.get("status") or {}
    running = int(status.get("running", 0) or 0)
    succeeded = int(status.get("succeeded", 0) or 0)
    failed = int(status.get("failed", 0) or 0)
    pending = int(status.get("pending", 0) or 0)
    total = sum(int(t.get("replicas", 0) or 0) for t in (job.get("spec") or {}).get("tasks", []))
    min_available = int(status.get("minAvailable") or (job.get("spec") or {}).get("minAvailable") or 0)
    parts = [f"{running}/{total} pods running"]
    if succeeded:
        parts.append(f"{succeeded} succeeded")
    if failed:
        parts.append(f"{failed} failed")
    started = running + succeeded + failed
    if min_available and started >= min_available:
        parts.append("gang admitted")
    elif pending or job_phase(job) == "Pending":
        parts.append(f"gang waiting for admission ({started}/{min_available} of minAvailable started)")
    retries = int(status.get("retryCount", 0) or 0)
    if retries:
        parts.append(f"retry {retries}")
    return ", ".join(parts)


def job_change_line(name: str, old: str, new: str, job: dict) -> str:
    """``Volcano Job mpi-x: Pending -> Running (3/3 pods running, gang admitted)``."""
    arrow = f"{old or 'submitted'} -> {new}" if old != new else new
    return f"Volcano Job {name}: {arrow} ({gang_summary(job)})"


def workflow_change_line(name: str, old: str, new: str, message: str | None) -> str:
    """``Argo Workflow wf-x: Pending -> Running`` (+ the Workflow's message when it has one)."""
    line = f"Argo Workflow {name}: {old or 'submitted'} -> {new or 'Pending'}"
    return f"{line} ({message})" if message else line


def job_result(job: dict) -> dict[str, Any]:
    """The per-job fields of the XCom result."""
    status = job.get("status") or {}
    state = status.get("state") or {}
    return {
        "name": job["metadata"]["name"],
        "namespace": job["metadata"].get("namespace"),
        "uid": job["metadata"].get("uid"),
        "phase": state.get("phase", ""),
        "retry_count": int(status.get("retryCount", 0) or 0),
        "task_status_count": status.get("taskStatusCount") or {},
        "succeeded": int(status.get("succeeded", 0) or 0),
        "failed": int(status.get("failed", 0) or 0),
        "created_at": job["metadata"].get("creationTimestamp"),
        "finished_at": state.get("lastTransitionTime"),
    }
