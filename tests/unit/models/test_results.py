"""The XCom result and the failure message built from a trigger event."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.results import (
    TAIL_BUDGET_BYTES,
    TAIL_LINE_BYTES,
    bounded_tails,
    failure_message,
    job_summary,
    summarize,
    task_status_count,
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


def test_summaries_of_objects_with_every_field_and_with_none():
    workflow = {"status": {"phase": "Succeeded", "message": "", "startedAt": "t0", "finishedAt": "t1"}}
    assert workflow_summary("wf", "wu", workflow) == {
        "name": "wf",
        "uid": "wu",
        "phase": "Succeeded",
        "message": "",
        "started_at": "t0",
        "finished_at": "t1",
    }
    assert workflow_summary("wf", None, None) == {
        "name": "wf",
        "uid": None,
        "phase": "",
        "message": "",
        "started_at": None,
        "finished_at": None,
    }
    assert job_summary({**JOB, "status": {**JOB["status"], "succeeded": 2}}) == {
        "name": "mpi-j",
        "namespace": "ns",
        "uid": "ju",
        "phase": "Failed",
        "retry_count": 3,
        "task_status_count": {"mpimaster": {"phase": {"Failed": 1}}},
        "succeeded": 2,
        "failed": 1,
        "created_at": "2026-12-04T10:00:00Z",
        "finished_at": "2026-12-04T10:02:30Z",
    }
    assert job_summary({"metadata": {"name": "new"}}) == {
        "name": "new",
        "namespace": None,
        "uid": None,
        "phase": "",
        "retry_count": 0,
        "task_status_count": {},
        "succeeded": 0,
        "failed": 0,
        "created_at": None,
        "finished_at": None,
    }


def test_the_workflow_times_and_the_job_phase_come_first():
    workflow = {
        "status": {"phase": "Running", "startedAt": "2026-12-04T09:59:00Z", "finishedAt": "2026-12-04T10:03:00Z"}
    }
    result = summarize(_event(status="success", workflow=workflow_summary("wf", "wu", workflow)))
    assert (result["status"], result["namespace"]) == ("success", "ns")
    assert result["phase"] == "Failed" and result["workflow_phase"] == "Running"  # the one Job's phase
    assert (result["started_at"], result["finished_at"]) == ("2026-12-04T09:59:00Z", "2026-12-04T10:03:00Z")
    assert result["duration_seconds"] == 240.0


def test_an_event_without_jobs_or_lines_is_summarized_from_the_workflow():
    event = _event(workflow=workflow_summary("wf", "wu", WORKFLOW))
    del event["jobs"], event["lines_streamed"]
    result = summarize(event)
    assert result["jobs"] == [] and result["job_name"] is None and result["phase"] == "Failed"
    assert result["log_lines"] == 0
    assert result["started_at"] == "2026-12-04T10:00:00Z" and result["finished_at"] is None


def test_failure_message_without_phases_reasons_or_jobs():
    event = _event(
        workflow={**workflow_summary("wf", "wu", None), "message": "deleted"},
        jobs=[{**job_summary(JOB), "phase": ""}],
        details=[],
        exit_codes=[{"pod": "p", "container": "mpimaster", "exit_code": 137, "reason": "", "restart_count": 2}],
        tails={"mpi-j": []},
    )
    assert failure_message(event, "mpimaster").splitlines() == [
        "Volcano Job mpi-j ended Failed.",
        "Argo Workflow wf : deleted",
        "Volcano Job mpi-j: phase unknown, retries 3, task status {'mpimaster': {'phase': {'Failed': 1}}}",
        "Container mpimaster of pod p exited with code 137 (no reason; restarts: 2)",
    ]
    del event["jobs"]
    assert failure_message(event, "mpimaster").splitlines()[2:] == [
        "Container mpimaster of pod p exited with code 137 (no reason; restarts: 2)"
    ]


def test_a_workflow_not_started_takes_the_times_of_its_one_job():
    result = summarize(_event(workflow=workflow_summary("wf", "wu", {"status": {"phase": "Running"}})))
    assert (result["started_at"], result["finished_at"]) == ("2026-12-04T10:00:00Z", "2026-12-04T10:02:30Z")


def test_tails_fit_the_event_budget_newest_lines_first_long_lines_cut():
    huge = "x" * (1024 * 1024)  # a 1 MiB line, as the log splitter lets through
    tails = {f"job-{n}": [f"line {i}" for i in range(18)] + [huge, "last"] for n in range(3)}
    bounded = bounded_tails(tails)
    assert sum(len(line.encode()) for lines in bounded.values() for line in lines) <= TAIL_BUDGET_BYTES
    for lines in bounded.values():
        assert lines[-1] == "last" and lines[0] == "line 0"  # all of a share's lines fit, in their order
        cut = lines[-2]
        kept = cut.split(" ... [")[0]
        assert set(kept) == {"x"} and len(kept) > 4000
        assert cut == kept + f" ... [{1024 * 1024 - len(kept)} bytes cut]"
        assert len(cut.encode()) <= TAIL_LINE_BYTES  # the note of what was cut included


def test_many_jobs_share_the_budget_and_keep_their_newest_lines():
    tails = {f"job-{n}": [f"{n}:{i:04d} " + "y" * 90 for i in range(20)] for n in range(200)}
    bounded = bounded_tails(tails, budget=64 * 1024)
    assert set(bounded) == set(tails)
    for job, lines in bounded.items():
        assert lines and lines == tails[job][-len(lines) :]  # a suffix: the newest, in order
        assert sum(len(line.encode()) for line in lines) <= 64 * 1024 // 200


def test_a_multibyte_line_is_cut_on_a_character_boundary():
    [cut] = bounded_tails({"j": ["é" * 5000]}, budget=10_000)["j"]
    kept = cut.split(" ... [")[0]
    assert set(kept) == {"é"} and len(kept) > 2000  # whole characters only (2 bytes each), none split
    assert cut == kept + f" ... [{10_000 - 2 * len(kept)} bytes cut]" and len(cut.encode()) <= TAIL_LINE_BYTES


def test_a_long_newest_line_is_cut_to_fit_a_small_share_not_dropped():
    tails = {f"job-{n}": ["earlier", "z" * 10_000] for n in range(200)}
    for lines in bounded_tails(tails, budget=64 * 1024).values():
        assert lines[-1].startswith("z") and lines[-1].endswith(" bytes cut]")
        assert sum(len(line.encode()) for line in lines) <= 64 * 1024 // 200


def _pod(task: str, phase: str, deleting: bool = False) -> dict:
    meta = {"labels": {"volcano.sh/task-spec": task}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-05T08:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


def test_per_task_results_come_from_every_pod_of_the_job_not_its_status():
    pods = [_pod("mpimaster", "Succeeded"), _pod("mpiworker", "Running", deleting=True), _pod("mpiworker", "Failed")]
    assert task_status_count(pods) == {"mpimaster": {"phase": {"Succeeded": 1}}, "mpiworker": {"phase": {"Failed": 1}}}
    # Volcano >= v1.11: a Completed Job reports 0 and no taskStatusCount (volcano#4616); <= v1.10 counted its pods
    current = {"metadata": {"name": "j"}, "status": {"state": {"phase": "Completed"}, "succeeded": 0}}
    legacy = {"metadata": {"name": "j"}, "status": {**current["status"], "succeeded": 1, "failed": 1,
              "taskStatusCount": task_status_count(pods)}}  # fmt: skip
    for job in (current, legacy):
        summary = job_summary(job, pods)
        assert summary["task_status_count"] == task_status_count(pods)
        assert (summary["succeeded"], summary["failed"]) == (1, 1)
    assert job_summary(legacy)["task_status_count"] == task_status_count(pods)  # not listed: the status stands in
    assert job_summary(current)["task_status_count"] == {}
