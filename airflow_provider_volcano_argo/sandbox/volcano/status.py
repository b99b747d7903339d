"""How Volcano's job controller reads a Job's pods and writes the Job's status.

Pod phases and restarts, counts per phase and per task, and the status itself. Follows volcano-sh/volcano
``pkg/controllers/job/job_controller_actions.go`` (``classifyAndAddUpPodBaseOnPhase``, ``calcPodStatus``, the status
``syncJob`` and ``killJob`` write; pods of an older job version are not counted; ``killPods``' counts).
"""

from __future__ import annotations

from airflow_provider_volcano_argo.sandbox.emulation.cluster import now_rfc3339
from airflow_provider_volcano_argo.sandbox.volcano.rules import Counts


def pod_phase(pod: dict) -> str:
    """Return the pod's phase, ``Terminating`` once it is being deleted."""
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return (pod.get("status") or {}).get("phase", "Pending") or "Pending"


def restarts(pod: dict) -> int:
    """Return the restarts of all the pod's containers, init containers included."""
    status = pod.get("status") or {}
    return sum(
        int(c.get("restartCount", 0))
        for c in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])
    )


def count_pods(pods: list[dict], version: int) -> tuple[Counts, dict[str, dict[str, int]]]:
    """Count the Job's pods per phase, and per task and phase; live pods of an older job version do not count."""
    counts = Counts()
    per_task: dict[str, dict[str, int]] = {}
    for pod in pods:
        annotations = pod["metadata"].get("annotations", {})
        if (
            int(annotations.get("volcano.sh/job-version", 0)) < version
            and not pod["metadata"].get("deletionTimestamp")
            and pod_phase(pod) not in ("Succeeded", "Failed")
        ):
            continue
        phase = pod_phase(pod)
        field = {
            "Pending": "pending",
            "Running": "running",
            "Succeeded": "succeeded",
            "Failed": "failed",
            "Terminating": "terminating",
        }.get(phase, "unknown")
        setattr(counts, field, getattr(counts, field) + 1)
        task = pod["metadata"].get("labels", {}).get("volcano.sh/task-spec", "")
        bucket = per_task.setdefault(task, {})
        shown = phase if phase in ("Pending", "Running", "Succeeded", "Failed") else "Unknown"
        bucket[shown] = bucket.get(shown, 0) + 1
    return counts, per_task


#: Phases whose state runs ``KillJob`` on every sync (``state/restarting.go``, ``completing.go``, ``terminating.go``,
#: ``aborting.go``, ``aborted.go``, ``finished.go``): their counts are those ``killPods`` writes.
KILLING_PHASES = frozenset(
    {"Restarting", "Completing", "Terminating", "Aborting", "Aborted", "Completed", "Failed", "Terminated"}
)


def kill_counts(pods: list[dict], retain_finished: bool) -> Counts:
    """Count as ``killPods`` does since Volcano v1.11 (volcano#4616).

    Only the pods it kills or finds terminating count (``terminating``); retained Succeeded/Failed pods are
    classified only when their deletion fails, which never happens here, so ``succeeded``, ``failed`` and the
    per-task counts stay 0 and empty.
    """
    counts = Counts()
    for pod in pods:
        retained = retain_finished and pod_phase(pod) in ("Succeeded", "Failed")
        if not retained:
            counts.terminating += 1
    return counts


def job_status(job: dict, status: dict, phase: str, counts: Counts, per_task: dict[str, dict[str, int]]) -> dict:
    """Return the Job's new status: ``phase`` (a new transition time and condition when it changed) and counts."""
    old = job.get("status") or {}
    state = dict(old.get("state") or {})
    conditions = list(old.get("conditions") or [])
    if state.get("phase") != phase:
        now = now_rfc3339()
        state = {"phase": phase, "lastTransitionTime": now}
        conditions = [c for c in conditions if c.get("status") != phase] + [
            {"status": phase, "lastTransitionTime": now}
        ]
    status_out = {
        "state": state,
        "minAvailable": int(job["spec"]["minAvailable"]),
        "pending": counts.pending,
        "running": counts.running,
        "succeeded": counts.succeeded,
        "failed": counts.failed,
        "terminating": counts.terminating,
        "unknown": counts.unknown,
        "version": int(status.get("version", 0)),
        "retryCount": int(status.get("retryCount", 0)),
        "taskStatusCount": {t: {"phase": c} for t, c in per_task.items()},  # omitempty: dropped below when empty
        "controlledResources": status.get("controlledResources", {}),
        "conditions": conditions,
    }
    if not per_task:
        del status_out["taskStatusCount"]
    return status_out
