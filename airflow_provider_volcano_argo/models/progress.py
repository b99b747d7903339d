"""Progress lines for the task log: phase changes of the Workflow and its Volcano Jobs, and a heartbeat."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.phases import VolcanoJobPhase, job_phase


def gang_summary(job: dict) -> str:
    """Summarize a Job's pods, e.g. ``3/3 pods running, gang admitted``."""
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
    elif pending or job_phase(job) == VolcanoJobPhase.PENDING:
        parts.append(f"gang waiting for admission ({started}/{min_available} of minAvailable started)")
    retries = int(status.get("retryCount", 0) or 0)
    if retries:
        parts.append(f"retry {retries}")
    return ", ".join(parts)


def job_change_line(name: str, old: str, new: str, job: dict) -> str:
    """Format ``Volcano Job mpi-x: Pending -> Running (3/3 pods running, gang admitted)``."""
    arrow = f"{old or 'submitted'} -> {new}" if old != new else new
    return f"Volcano Job {name}: {arrow} ({gang_summary(job)})"


def workflow_change_line(name: str, old: str, new: str, message: str | None) -> str:
    """Format ``Argo Workflow wf-x: Pending -> Running`` (+ the Workflow's message when it has one)."""
    line = f"Argo Workflow {name}: {old or 'submitted'} -> {new or 'Pending'}"
    return f"{line} ({message})" if message else line


def heartbeat_line(name: str, job: dict, elapsed_seconds: float) -> str:
    """Format the periodic ``Volcano Job mpi-x: Running (...) 3m07s`` line of a run whose phase has not changed."""
    phase, elapsed = job_phase(job), int(elapsed_seconds)
    return f"{job_change_line(name, phase, phase, job)} {elapsed // 60}m{elapsed % 60:02d}s"
