"""When a followed run has ended, and how (pure decision rules), and the progress lines."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.follower import FollowSpec
from airflow_provider_volcano_argo.follower_rules import decide, exit_codes, instance_finished, log_instances
from airflow_provider_volcano_argo.progress import job_change_line

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


def _pod(uid: str, restart: int, state: str, retry: str = "0") -> dict:
    return {
        "metadata": {
            "uid": uid,
            "name": "j-mpimaster-0",
            "labels": {"volcano.sh/job-name": "j"},
            "annotations": {"volcano.sh/job-retry-count": retry},
            "creationTimestamp": "t",
        },
        "status": {
            "containerStatuses": [
                {
                    "name": "mpimaster",
                    "restartCount": restart,
                    "state": {state: {"exitCode": 3} if state == "terminated" else {}},
                }
            ]
        },
    }


def test_log_instances_and_their_end():
    pods = [_pod("p1", 0, "running")]
    [(pod, instance)] = log_instances(pods, "mpimaster", {"j"})
    assert instance.key == "p1/mpimaster/0" and "job attempt 1" in instance.header("j", False)
    assert not instance_finished(pods, instance.key)
    assert instance_finished([_pod("p1", 1, "running")], instance.key)  # restarted
    assert instance_finished([_pod("p1", 0, "terminated")], instance.key)
    assert instance_finished([], instance.key)  # pod gone
    assert log_instances([_pod("p1", 0, "waiting")], "mpimaster", {"j"}) == []
    assert exit_codes([_pod("p1", 0, "terminated")], "mpimaster")[0]["exit_code"] == 3


def test_progress_line():
    line = job_change_line("j", "Pending", "Running", _job("Running", running=3, minAvailable=3))
    assert line == "Volcano Job j: Pending -> Running (3/3 pods running, gang admitted)"
