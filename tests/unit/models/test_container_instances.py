"""Which container instances of a task's pods have a log, when each has ended, and how each exited."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.container_instances import exit_codes, instance_finished, log_instances


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
    assert exit_codes([_pod("p1", 0, "terminated")], "mpimaster", {"j"})[0]["exit_code"] == 3


def test_exit_codes_come_only_from_the_followed_jobs_pods():
    """A Workflow follower's pod watch sees the task's pods of every Job in the namespace."""
    assert exit_codes([_pod("p1", 0, "terminated")], "mpimaster", {"someone-elses-job"}) == []
