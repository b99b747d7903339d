"""What to do with a Workflow when its run ends or is killed, and how a run is followed: each policy written once.

Values are the strings DAG authors pass (``on_kill_action="stop_workflow"``, as KubernetesPodOperator names its
``on_finish_action``); they travel to the trigger as those strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from airflow_provider_volcano_argo.models.phases import WORKFLOW_DONE_PHASES, StrEnum


class OnFinishAction(StrEnum):
    """What happens to the Workflow when the task ends (deleting it cascades to its Volcano Jobs and pods)."""

    DELETE_WORKFLOW = "delete_workflow"
    DELETE_SUCCEEDED_WORKFLOW = "delete_succeeded_workflow"
    KEEP_WORKFLOW = "keep_workflow"


class OnKillAction(StrEnum):
    """What happens to the Workflow when the task is killed."""

    DELETE_WORKFLOW = "delete_workflow"
    STOP_WORKFLOW = "stop_workflow"
    KEEP_WORKFLOW = "keep_workflow"


class FollowMode(StrEnum):
    """What ends a run: the named Volcano Job's terminal phase (``job``) or the Workflow's (``workflow``)."""

    JOB = "job"
    WORKFLOW = "workflow"


#: ``spec.shutdown`` strategy of every stop (what ``argo terminate`` sets): no exit handlers, pods killed.
STOP_STRATEGY = "Terminate"

_Policy = TypeVar("_Policy", bound=StrEnum)


def parse_policy(policy: type[_Policy], field: str, value: object) -> _Policy:
    """Return ``value`` as a member of ``policy``, or raise ``ValueError`` naming ``field`` and the choices."""
    try:
        return policy(value)
    except ValueError:
        choices = ", ".join(repr(member.value) for member in policy)
        raise ValueError(f"{field} must be one of {choices}, got {value!r}") from None


@dataclass(frozen=True)
class CleanupSteps:
    """Whether to stop the Workflow (``spec.shutdown``) and whether to delete it afterwards."""

    stop: bool
    delete: bool

    @property
    def needed(self) -> bool:
        """Tell whether there is anything to do (``keep_workflow``: nothing)."""
        return self.stop or self.delete


def finish_steps(
    action: OnFinishAction | str, succeeded: bool, run_ended: bool = True, workflow_phase: str = ""
) -> CleanupSteps:
    """Return the clean-up once the task's outcome is known; a kept failed Workflow is stopped, for inspection.

    A run that did not end by itself (deadline, gang not admitted in time, API error) is always stopped, even when
    it is kept: nothing goes on running after its task. A Workflow last seen ended (``workflow_phase`` Succeeded,
    Failed or Error) is deleted without a stop first: Argo runs nothing more of it, and the deletion takes its
    Volcano Jobs, which a stop would not reach anyway.
    """
    action = OnFinishAction(action)
    if action == OnFinishAction.KEEP_WORKFLOW:
        return CleanupSteps(stop=not run_ended, delete=False)
    if action == OnFinishAction.DELETE_SUCCEEDED_WORKFLOW and not succeeded:
        return CleanupSteps(stop=True, delete=False)
    return CleanupSteps(stop=workflow_phase not in WORKFLOW_DONE_PHASES, delete=True)


def kill_steps(action: OnKillAction | str) -> CleanupSteps:
    """Return the clean-up after a user killed the task."""
    action = OnKillAction(action)
    return CleanupSteps(stop=action != OnKillAction.KEEP_WORKFLOW, delete=action == OnKillAction.DELETE_WORKFLOW)
