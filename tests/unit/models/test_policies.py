"""The clean-up policies: what each on-finish and on-kill action does."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.models.policies import (
    CleanupSteps,
    OnFinishAction,
    OnKillAction,
    finish_steps,
    kill_steps,
    parse_policy,
)


@pytest.mark.parametrize(
    ("action", "succeeded", "steps"),
    [
        ("delete_workflow", True, CleanupSteps(stop=True, delete=True)),
        ("delete_workflow", False, CleanupSteps(stop=True, delete=True)),
        ("delete_succeeded_workflow", True, CleanupSteps(stop=True, delete=True)),
        ("delete_succeeded_workflow", False, CleanupSteps(stop=True, delete=False)),  # kept for inspection
        ("keep_workflow", True, CleanupSteps(stop=False, delete=False)),
        ("keep_workflow", False, CleanupSteps(stop=False, delete=False)),
    ],
)
def test_finish_steps(action, succeeded, steps):
    assert finish_steps(action, succeeded) == steps


@pytest.mark.parametrize(
    ("action", "steps"),
    [
        ("delete_workflow", CleanupSteps(stop=True, delete=True)),
        ("delete_succeeded_workflow", CleanupSteps(stop=True, delete=False)),
        ("keep_workflow", CleanupSteps(stop=True, delete=False)),  # kept, but not left running
    ],
)
def test_a_run_that_did_not_end_is_always_stopped(action, steps):
    assert finish_steps(action, succeeded=False, run_ended=False) == steps


@pytest.mark.parametrize(
    ("action", "succeeded", "phase", "steps"),
    [
        ("delete_workflow", True, "Succeeded", CleanupSteps(stop=False, delete=True)),  # nothing runs: no stop
        ("delete_workflow", False, "Failed", CleanupSteps(stop=False, delete=True)),
        ("delete_workflow", False, "Error", CleanupSteps(stop=False, delete=True)),
        ("delete_workflow", True, "Running", CleanupSteps(stop=True, delete=True)),  # the Job ended first
        ("delete_workflow", False, "", CleanupSteps(stop=True, delete=True)),  # never seen
        ("delete_succeeded_workflow", False, "Failed", CleanupSteps(stop=True, delete=False)),  # kept: its Jobs
        ("keep_workflow", True, "Succeeded", CleanupSteps(stop=False, delete=False)),
    ],
)
def test_a_workflow_seen_ended_is_deleted_without_a_stop(action, succeeded, phase, steps):
    assert finish_steps(action, succeeded, workflow_phase=phase) == steps


@pytest.mark.parametrize(
    ("action", "steps"),
    [
        ("delete_workflow", CleanupSteps(stop=True, delete=True)),
        ("stop_workflow", CleanupSteps(stop=True, delete=False)),
        ("keep_workflow", CleanupSteps(stop=False, delete=False)),
    ],
)
def test_kill_steps(action, steps):
    assert kill_steps(action) == steps
    assert steps.needed is (action != "keep_workflow")


def test_a_bad_action_is_refused_naming_the_field_and_the_choices():
    with pytest.raises(ValueError, match="on_kill_action must be one of 'delete_workflow', 'stop_workflow'"):
        parse_policy(OnKillAction, "on_kill_action", "delete")
    assert parse_policy(OnFinishAction, "on_finish_action", "keep_workflow") is OnFinishAction.KEEP_WORKFLOW
