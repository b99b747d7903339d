"""Phases of Volcano Jobs and Argo Workflows, and which of them end a run."""

from __future__ import annotations

from enum import Enum


class VolcanoJobPhase(str, Enum):
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


class WorkflowPhase(str, Enum):
    """``status.phase`` of an Argo Workflow (``workflow_phase.go``); "" while the controller has not seen it."""

    UNKNOWN = ""
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    ERROR = "Error"


JOB_SUCCESS_PHASES = frozenset({VolcanoJobPhase.COMPLETED.value})
#: Failing ends. Upstream parks ``Aborted`` (``ResumeJob`` can leave it), but nothing in a DAG run resumes it,
#: and the Argo step would hang on it as on ``Terminated`` (volcano#4442): a task treats it as the end.
JOB_FAILED_PHASES = frozenset(
    {VolcanoJobPhase.FAILED.value, VolcanoJobPhase.TERMINATED.value, VolcanoJobPhase.ABORTED.value}
)
JOB_TERMINAL_PHASES = JOB_SUCCESS_PHASES | JOB_FAILED_PHASES
WORKFLOW_DONE_PHASES = frozenset({WorkflowPhase.SUCCEEDED.value, WorkflowPhase.FAILED.value, WorkflowPhase.ERROR.value})
