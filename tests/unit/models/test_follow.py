"""When a followed run has ended, and how (pure decision rules)."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.models.follow import FollowOutcome, FollowSpec, decide, with_unreadable_log

SPEC = FollowSpec(namespace="ns", workflow_name="wf", workflow_uid="u1", job_name="j")


def _job(phase: str, created: str = "2026-12-02T19:00:00Z", **counts) -> dict:
    return {
        "metadata": {"name": "j", "creationTimestamp": created, "uid": "ju"},
        "spec": {"minAvailable": 3, "tasks": [{"replicas": 1}, {"replicas": 2}]},
        "status": {"state": {"phase": phase}, **counts},
    }


def _wf(phase: str, message: str = "") -> dict:
    return {"metadata": {"name": "wf", "uid": "u1"}, "status": {"phase": phase, "message": message}}


@pytest.mark.parametrize(
    ("phase", "status"),
    [("Completed", "success"), ("Failed", "failed"), ("Terminated", "failed"), ("Aborted", "failed")],
)
def test_job_terminal_phases_decide_single_job_runs(phase, status):
    outcome = decide(SPEC, _wf("Running"), False, {"j": _job(phase)}, set(), 0)
    assert outcome.status == status


@pytest.mark.parametrize("phase", ["Pending", "Running", "Restarting", "Completing", "Aborting", "Terminating"])
def test_non_terminal_phases_keep_following(phase):
    assert decide(SPEC, _wf("Running"), False, {"j": _job(phase, running=1)}, set(), 0) is None


def test_workflow_ending_without_the_job_fails_with_its_message():
    outcome = decide(SPEC, _wf("Failed", "main: Error (exit code 1): jobs is forbidden"), False, {}, set(), 0)
    assert outcome.status == "failed" and "without creating Volcano Job j" in outcome.message
    assert "forbidden" in outcome.message


def test_deletions_from_outside_fail_at_once():
    assert decide(SPEC, _wf("Running"), True, {}, set(), 0).reason == "deleted"
    assert "deleted" in decide(SPEC, _wf("Running"), False, {"j": _job("Running")}, {"j"}, 0).message


def test_deadline_and_schedule_timeout():
    spec = FollowSpec(namespace="ns", workflow_name="wf", job_name="j", deadline=100.0, schedule_timeout=30)
    pending = {"j": _job("Pending", created="1970-01-01T00:00:50Z")}
    assert decide(spec, _wf("Running"), False, pending, set(), 79) is None
    assert decide(spec, _wf("Running"), False, pending, set(), 80).reason == "unschedulable"
    running = {"j": _job("Running", created="1970-01-01T00:00:50Z", running=3)}
    assert decide(spec, _wf("Running"), False, running, set(), 100).status == "timeout"


def test_workflow_mode_names_the_failing_job():
    spec = FollowSpec(namespace="ns", workflow_name="wf", workflow_uid="u1")
    jobs = {"a": {**_job("Completed"), "metadata": {"name": "a"}}, "b": {**_job("Failed"), "metadata": {"name": "b"}}}
    outcome = decide(spec, _wf("Failed"), False, jobs, set(), 0)
    assert outcome.status == "failed" and "Volcano Job b ended Failed" in outcome.message


def test_a_log_that_cannot_be_read_turns_a_success_into_an_error_and_is_named_in_a_failure():
    error = with_unreadable_log(
        FollowOutcome("success", "Volcano Job j Completed.", "completed"), "Forbidden: pods/log"
    )
    assert (error.status, error.reason) == ("error", "api_error")
    assert error.message == "Volcano Job j Completed. Its log could not be read: Forbidden: pods/log"
    failed = with_unreadable_log(FollowOutcome("failed", "Volcano Job j ended Failed.", "failed"), "Forbidden")
    assert failed.status == "failed" and failed.details == ["Its log could not be read: Forbidden"]
