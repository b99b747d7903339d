"""Gang admission of a Volcano Job, per attempt: what says the gang scheduler admitted it, since when it waits.

A Job is ``Pending`` with no running, succeeded or failed pod both while the gang scheduler has not admitted it and
after it has: after ``RestartJob`` (``state/restarting.go``: back to ``Pending``, counts from ``killPods``), and while
the admitted pods pull images or run init containers (``syncJob`` counts pods by phase, and they are ``Pending``).
Only the PodGroup and the pods tell the two apart: ``session.go getPodGroupPhase`` makes the PodGroup ``Running``
once ``minMember`` tasks are scheduled, and the gang binds its pods all at once (``gang.go``).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable

from airflow_provider_volcano_argo.models.names import VOLCANO_JOB_NAME_LABEL, VOLCANO_RETRY_COUNT_ANNOTATION
from airflow_provider_volcano_argo.models.phases import VolcanoJobPhase, job_phase, job_started

#: PodGroup phases that say the gang was scheduled (``getPodGroupPhase``). ``Inqueue`` is not one: it only passed
#: the enqueue check (the overcommit factor lets gangs larger than the free capacity in), and its pods may wait
#: unbound for ever under the gang plugin's ``Unschedulable`` condition.
ADMITTED_PODGROUP_PHASES = frozenset({"Running", "Completed"})


def _stamp(value: str | None) -> float | None:
    if not value:
        return None
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def attempt_key(job: dict) -> str:
    """Return the key of the Job's current attempt: its uid and ``retryCount``."""
    status = job.get("status") or {}
    return f"{job['metadata'].get('uid', '')}/{int(status.get('retryCount', 0) or 0)}"


def waiting_since(job: dict) -> float:
    """Return since when (epoch seconds) the Job's current attempt has waited in ``Pending``.

    The last transition of its state (a restart moves it to ``Restarting``, then ``Pending`` again); the
    ``creationTimestamp`` before the controller has written one.
    """
    meta = job["metadata"]
    state = (job.get("status") or {}).get("state") or {}
    times = [t for t in (_stamp(meta.get("creationTimestamp")), _stamp(state.get("lastTransitionTime"))) if t]
    return max(times, default=0.0)


def pods_bound(pods: Iterable[dict], job: dict) -> bool:
    """Tell whether a live pod of the Job's current attempt is bound to a node (the gang was allocated)."""
    name = job["metadata"]["name"]
    retry = str(int((job.get("status") or {}).get("retryCount", 0) or 0))
    for pod in pods:
        meta = pod["metadata"]
        if (meta.get("labels") or {}).get(VOLCANO_JOB_NAME_LABEL) != name or meta.get("deletionTimestamp"):
            continue
        if (meta.get("annotations") or {}).get(VOLCANO_RETRY_COUNT_ANNOTATION, "0") != retry:
            continue
        if (pod.get("spec") or {}).get("nodeName"):
            return True
    return False


def podgroup_admitted(group: dict | None) -> bool:
    """Tell whether a PodGroup's phase says its gang was scheduled."""
    return ((group or {}).get("status") or {}).get("phase") in ADMITTED_PODGROUP_PHASES


def overdue_for_admission(jobs: dict[str, dict], admitted: set[str], schedule_timeout: float, now: float) -> list[str]:
    """Return the Jobs whose current attempt has waited ``schedule_timeout`` without being admitted.

    ``admitted`` holds the ``attempt_key`` of attempts known to be admitted (bound pods, PodGroup ``Running``).
    """
    overdue = []
    for name, job in sorted(jobs.items()):
        if job_phase(job) not in (VolcanoJobPhase.PENDING, "") or job_started(job):
            continue
        if attempt_key(job) in admitted:
            continue
        if now - waiting_since(job) >= schedule_timeout:
            overdue.append(name)
    return overdue


def _event_time(event: dict) -> str:
    return event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or ""


def unschedulable_reasons(group: dict | None, events: list[dict]) -> list[str]:
    """Say why a gang waits: the PodGroup's ``Unschedulable`` condition, else the newest ``Unschedulable`` Event.

    The gang plugin (``gang.go OnSessionClose``) sets the condition only once the gang has pods; a gang refused at
    enqueue has none, and the overcommit plugin (``overcommit.go``) records only an Event on the PodGroup
    (``resource in cluster is overused: overused cpu``). ``events`` are the PodGroup's (any order).
    """
    if not group:
        return []
    name = group["metadata"]["name"]
    reasons = [
        f"PodGroup {name}: {cond.get('reason')}: {cond.get('message')}"
        for cond in (group.get("status") or {}).get("conditions") or []
        if cond.get("type") == "Unschedulable" and cond.get("status") == "True"
    ]
    if reasons:
        return reasons
    refusals = sorted((e for e in events if e.get("reason") == "Unschedulable"), key=_event_time)
    return [f"PodGroup {name}: {refusals[-1].get('message')}"] if refusals else []
