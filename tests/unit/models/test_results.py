"""The XCom result and the failure message built from a trigger event."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.results import (
    failure_message,
    job_summary,
    summarize,
    workflow_summary,
)

JOB = {
    "metadata": {"name": "mpi-j", "namespace": "ns", "uid": "ju", "creationTimestamp": "2026-12-04T10:00:00Z"},
    "status": {
        "state": {"phase": "Failed", "lastTransitionTime": "2026-12-04T10:02:30Z"},
        "retryCount": 3,
        "failed": 1,
        "taskStatusCount": {"mpimaster": {"phase": {"Failed": 1}}},
    },
}
WORKFLOW = {"status": {"phase": "Failed", "message": "child failed", "startedAt": "2026-12-04T10:00:00Z"}}


def _event(**changes) -> dict:
    event = {
        "status": "failed",
        "message": "Volcano Job mpi-j ended Failed.",
        "reason": "failed",
        "details": ["PodGroup mpi-j-ju: NotEnoughResources: 1/3 tasks unschedulable"],
        "namespace": "ns",
        "workflow": workflow_summary("wf", "wu", WORKFLOW),
        "jobs": [job_summary(JOB)],
        "tails": {"mpi-j": ["rank 0 diverged", "MPI_ABORT"]},
        "lines_streamed": 42,
        "exit_codes": [
            {
                "pod": "mpi-j-mpimaster-0",
                "container": "mpimaster",
                "exit_code": 3,
                "reason": "Error",
                "restart_count": 0,
            }
        ],
        "log_book": {},
    }
    event.update(changes)
    return event


def test_one_job_summary_with_timings_from_the_job_when_the_workflow_has_none():
    result = summarize(_event())
    assert result["job_name"] == "mpi-j" and result["phase"] == "Failed" and result["retry_count"] == 3
    assert result["workflow_name"] == "wf" and result["workflow_uid"] == "wu" and result["workflow_phase"] == "Failed"
    assert result["task_status_count"] == {"mpimaster": {"phase": {"Failed": 1}}}
    assert result["started_at"] == "2026-12-04T10:00:00Z"
    assert result["finished_at"] == "2026-12-04T10:02:30Z"  # the Workflow has no finishedAt: the Job's
    assert result["duration_seconds"] == 150.0
    assert result["log_lines"] == 42


def test_workflow_mode_summary_has_no_single_job_fields():
    second = {**JOB, "metadata": {**JOB["metadata"], "name": "other"}}
    result = summarize(_event(jobs=[job_summary(JOB), job_summary(second)]))
    assert result["job_name"] is None and result["retry_count"] is None and result["phase"] == "Failed"
    assert [j["name"] for j in result["jobs"]] == ["mpi-j", "other"]
    assert result["duration_seconds"] is None  # no end known


def test_failure_message_says_what_happened_and_shows_the_last_lines():
    message = failure_message(_event(), "mpimaster")
    assert message.splitlines() == [
        "Volcano Job mpi-j ended Failed.",
        "Argo Workflow wf Failed: child failed",
        "Volcano Job mpi-j: phase Failed, retries 3, task status {'mpimaster': {'phase': {'Failed': 1}}}",
        "PodGroup mpi-j-ju: NotEnoughResources: 1/3 tasks unschedulable",
        "Container mpimaster of pod mpi-j-mpimaster-0 exited with code 3 (Error; restarts: 0)",
        "Last 2 lines of mpimaster (mpi-j):",
        "  rank 0 diverged",
        "  MPI_ABORT",
    ]
