"""When a followed run has ended, and how (pure decision rules)."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.models.follow import (
    FollowOutcome,
    FollowSpec,
    deadline_outcome,
    decide,
    follows_job,
    jobs_outliving,
    outliving_line,
    owned_by,
    with_unreadable_log,
)

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


WORKFLOW_MODE = FollowSpec(namespace="ns", workflow_name="wf", workflow_uid="u1")


@pytest.mark.parametrize(
    ("spec", "workflow", "jobs", "outcome"),
    [
        (
            SPEC,
            _wf("Running"),
            {"j": _job("Completed")},
            FollowOutcome("success", "Volcano Job j Completed.", "completed"),
        ),
        (
            SPEC,
            _wf("Running"),
            {"j": _job("Terminated")},
            FollowOutcome("failed", "Volcano Job j ended Terminated.", "terminated"),
        ),
        (
            SPEC,
            {**_wf("Failed", "Stopped with strategy 'Terminate'"), "spec": {"shutdown": "Terminate"}},
            {"j": _job("Running", running=3)},
            FollowOutcome(
                "failed",
                "Argo Workflow wf ended Failed before Volcano Job j finished: Stopped with strategy 'Terminate'",
                "workflow_ended",
            ),
        ),
        (
            SPEC,
            _wf("Succeeded"),
            {},
            FollowOutcome(
                "failed",
                "Argo Workflow wf ended Succeeded without creating Volcano Job j: no message",
                "workflow_ended",
            ),
        ),
        (
            WORKFLOW_MODE,
            _wf("Succeeded"),
            {"a": _job("Completed"), "b": _job("Completed")},
            FollowOutcome("success", "Argo Workflow wf Succeeded (2 Volcano Jobs).", "completed"),
        ),
        (
            WORKFLOW_MODE,
            _wf("Failed", "child failed"),
            {"a": _job("Failed"), "b": _job("Aborted"), "c": _job("Completed")},
            FollowOutcome(
                "failed",
                "Argo Workflow wf ended Failed: Volcano Job a ended Failed; Volcano Job b ended Aborted",
                "workflow_ended",
            ),
        ),
        (
            WORKFLOW_MODE,
            _wf("Error", "child failed"),
            {"a": _job("Completed")},
            FollowOutcome("failed", "Argo Workflow wf ended Error: child failed", "workflow_ended"),
        ),
        (
            WORKFLOW_MODE,
            _wf("Error"),
            {},
            FollowOutcome("failed", "Argo Workflow wf ended Error: no message", "workflow_ended"),
        ),
    ],
)
def test_outcomes_in_full(spec, workflow, jobs, outcome):
    assert decide(spec, workflow, False, jobs, set(), 0) == outcome


def test_a_workflow_that_succeeded_before_its_job_was_seen_ending_is_still_followed():
    """The Workflow's watch can report Succeeded before the Job's watch reports Completed."""
    assert decide(SPEC, _wf("Succeeded"), False, {"j": _job("Running", running=3)}, set(), 0) is None


def test_deletions_in_full():
    assert decide(SPEC, _wf("Running"), True, {}, set(), 0) == FollowOutcome(
        "failed", "Argo Workflow wf was deleted while the task was following it.", "deleted"
    )
    assert decide(SPEC, _wf("Running"), False, {"j": _job("Running")}, {"j"}, 0) == FollowOutcome(
        "failed", "Volcano Job j was deleted before it finished (Workflow wf).", "deleted"
    )
    # a Job deleted after it ended (Argo's clean-up, a TTL) decides nothing by its deletion
    assert decide(WORKFLOW_MODE, _wf("Running"), False, {"a": _job("Completed")}, {"a"}, 0) is None
    assert decide(SPEC, _wf("Running"), False, {"j": _job("Completed")}, {"j"}, 0).status == "success"


def test_timeouts_in_full():
    spec = FollowSpec(namespace="ns", workflow_name="wf", job_name="j", deadline=100.0, schedule_timeout=30)
    assert decide(spec, _wf("Running"), False, {}, set(), 100) == FollowOutcome(
        "timeout", "execution_timeout reached while following Argo Workflow wf.", "timeout"
    )
    pending = {"j": _job("Pending", created="1970-01-01T00:00:50Z")}
    assert decide(spec, _wf("Running"), False, pending, set(), 80) == FollowOutcome(
        "failed",
        "Volcano Job j was not admitted by the gang scheduler within schedule_timeout (30 s).",
        "unschedulable",
    )
    # an admitted Job is never unschedulable, however long ago it was created
    running = {"j": _job("Running", created="1970-01-01T00:00:50Z", running=3)}
    assert decide(spec, _wf("Running"), False, running, set(), 99) is None


def test_a_spec_travels_as_plain_values():
    spec = FollowSpec(namespace="ns", workflow_name="wf", job_name="j", log_poll_interval=5.0, deadline=10.0)
    assert spec.to_dict()["log_poll_interval"] == 5.0
    assert FollowSpec(**spec.to_dict()) == spec


def test_owned_by():
    job = {"metadata": {"ownerReferences": [{"uid": "other"}, {"uid": "u1"}]}}
    assert owned_by(job, "u1") and not owned_by(job, "u2")
    assert not owned_by(job, None) and not owned_by(job, "")
    assert not owned_by({"metadata": {}}, "u1") and not owned_by({"metadata": {"ownerReferences": None}}, "u1")


def test_only_a_run_that_ended_by_itself_has_logs_that_end():
    spec = FollowSpec(namespace="ns", workflow_name="wf", job_name="j", deadline=100.0)
    running = {"j": _job("Running", running=3)}
    assert not decide(spec, _wf("Running"), False, running, set(), 100).run_ended  # the master may print on
    assert not decide(SPEC, _wf("Running"), True, {}, set(), 0).run_ended  # deleted
    assert decide(SPEC, _wf("Running"), False, {"j": _job("Completed")}, set(), 0).run_ended
    assert decide(SPEC, _wf("Running"), False, {"j": _job("Failed")}, set(), 0).run_ended


def test_the_deadline_needs_no_object():
    spec = FollowSpec(namespace="ns", workflow_name="wf", deadline=100.0)
    assert deadline_outcome(spec, 99.9) is None
    assert deadline_outcome(spec, 100) == FollowOutcome(
        "timeout", "execution_timeout reached while following Argo Workflow wf.", "timeout"
    )
    assert deadline_outcome(SPEC, 10**10) is None  # no execution_timeout, no deadline


def test_follows_job_needs_this_runs_owner_reference_not_only_the_name():
    ours = {"metadata": {"name": "j", "ownerReferences": [{"uid": "u1"}]}}
    earlier = {"metadata": {"name": "j", "ownerReferences": [{"uid": "u0"}]}}  # a fixed job_name's earlier run
    assert follows_job(SPEC, ours)
    assert not follows_job(SPEC, earlier)
    assert not follows_job(SPEC, {"metadata": {"name": "j"}})  # created by hand, by nobody's Workflow
    assert not follows_job(SPEC, {"metadata": {"name": "k", "ownerReferences": [{"uid": "u1"}]}})
    every = FollowSpec(namespace="ns", workflow_name="wf", workflow_uid="u1")
    assert follows_job(every, {"metadata": {"name": "k", "ownerReferences": [{"uid": "u1"}]}})
    assert not follows_job(FollowSpec(namespace="ns", workflow_name="wf", job_name="j"), ours)  # uid not known


@pytest.mark.parametrize("spec", [SPEC, FollowSpec(namespace="ns", workflow_name="wf", workflow_uid="u1")])
def test_a_workflow_that_failed_by_itself_under_a_running_job_is_followed_to_the_jobs_end(spec):
    """Its resource step's argoexec pod was deleted: Argo fails the Workflow, the Job runs on (operator.go)."""
    failed = _wf("Error", "pod deleted")
    assert jobs_outliving(failed, {"j": _job("Running", running=3)}) == ["j"]
    assert decide(spec, failed, False, {"j": _job("Running", running=3)}, set(), 0) is None
    line = outliving_line("wf", failed, ["j"])
    assert line.startswith("Argo Workflow wf ended Error (pod deleted) while Volcano Job j still runs")
    done = decide(spec, failed, False, {"j": _job("Completed")}, set(), 0)
    if spec.job_name:  # single-job mode: the Job's outcome, with what happened to the Workflow
        assert done == FollowOutcome(
            "success", "Volcano Job j Completed. (Argo Workflow wf had ended Error: pod deleted)", "completed"
        )
    else:  # the Workflow is the outcome: it failed, once its Job no longer runs
        assert done == FollowOutcome("failed", "Argo Workflow wf ended Error: pod deleted", "workflow_ended")
    assert jobs_outliving(_wf("Succeeded"), {"j": _job("Running")}) == []
    assert jobs_outliving(_wf("Running"), {"j": _job("Running")}) == []
    assert jobs_outliving(failed, {"j": _job("Completed")}) == []
