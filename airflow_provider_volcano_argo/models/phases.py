"""Phases of Volcano Jobs and Argo Workflows: how each is read from an object, and every verdict on one.

The one place that reads ``status.state.phase`` / ``status.phase`` and says what a phase means for a run.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Any, Literal

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - Python 3.10

    class StrEnum(str, Enum):
        """``enum.StrEnum`` of Python 3.11: members are their strings (in comparisons, f-strings and JSON)."""

        __str__ = str.__str__
        __format__ = str.__format__


class VolcanoJobPhase(StrEnum):
    """``status.state.phase`` of a ``batch.volcano.sh/v1alpha1`` Job (volcano-sh/apis ``batch/v1alpha1/job.go``)."""

    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


class WorkflowPhase(StrEnum):
    """``status.phase`` of an Argo Workflow (``workflow_phase.go``); "" while the controller has not seen it."""

    UNKNOWN = ""
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    ERROR = "Error"


JOB_SUCCESS_PHASES = frozenset({VolcanoJobPhase.COMPLETED})
#: Failing ends. Upstream parks ``Aborted`` (``ResumeJob`` can leave it), but nothing in a DAG run resumes it,
#: and the Argo step would hang on it as on ``Terminated`` (volcano#4442): a task treats it as the end.
JOB_FAILED_PHASES = frozenset({VolcanoJobPhase.FAILED, VolcanoJobPhase.TERMINATED, VolcanoJobPhase.ABORTED})
JOB_TERMINAL_PHASES = JOB_SUCCESS_PHASES | JOB_FAILED_PHASES
WORKFLOW_SUCCESS_PHASES = frozenset({WorkflowPhase.SUCCEEDED})
WORKFLOW_FAILED_PHASES = frozenset({WorkflowPhase.FAILED, WorkflowPhase.ERROR})
WORKFLOW_DONE_PHASES = WORKFLOW_SUCCESS_PHASES | WORKFLOW_FAILED_PHASES

#: The kinds of object a sensor waits for, as stored in its trigger's kwargs.
ObjectKind = Literal["volcano_job", "workflow"]

#: The verdict on one watched object: reached a target phase, a failing phase, or deleted after it was seen.
PhaseVerdict = Literal["success", "failed", "deleted"]


def _status(obj: dict | None) -> dict[str, Any]:
    return (obj or {}).get("status") or {}


def job_phase(job: dict | None) -> str:
    """Return ``status.state.phase`` of a Volcano Job ("" until the controller has seen it)."""
    return (_status(job).get("state") or {}).get("phase") or ""


def workflow_phase(workflow: dict | None) -> str:
    """Return ``status.phase`` of an Argo Workflow ("" until the controller has seen it)."""
    return _status(workflow).get("phase") or ""


def workflow_message(workflow: dict | None) -> str:
    """Return ``status.message`` of an Argo Workflow ("" when it has none)."""
    return _status(workflow).get("message") or ""


def phase_of(kind: ObjectKind, obj: dict | None) -> str:
    """Return the phase of a watched object of ``kind``."""
    return job_phase(obj) if kind == "volcano_job" else workflow_phase(obj)


def workflow_done(workflow: dict | None) -> bool:
    """Tell whether a Workflow has ended (Succeeded, Failed or Error)."""
    return workflow_phase(workflow) in WORKFLOW_DONE_PHASES


def job_succeeded(job: dict | None) -> bool:
    """Tell whether a Volcano Job ended in success (``Completed``)."""
    return job_phase(job) in JOB_SUCCESS_PHASES


def job_failed(job: dict | None) -> bool:
    """Tell whether a Volcano Job ended in failure (``Failed``, ``Terminated`` or ``Aborted``)."""
    return job_phase(job) in JOB_FAILED_PHASES


def job_ended(job: dict | None) -> bool:
    """Tell whether a Volcano Job reached a terminal phase."""
    return job_phase(job) in JOB_TERMINAL_PHASES


def job_started(job: dict) -> bool:
    """Tell whether any pod of the Job runs or ran (the gang was admitted at least once)."""
    status = _status(job)
    return any(int(status.get(k, 0) or 0) for k in ("running", "succeeded", "failed"))


def phase_verdict(
    phase: str, exists: bool, target: list[str], failing: list[str], seen: bool = False
) -> PhaseVerdict | None:
    """Judge one watched object once decided, else None: an object that does not exist yet is waited for."""
    if not exists:
        return "deleted" if seen else None
    if phase in target:
        return "success"
    if phase in failing:
        return "failed"
    return None
