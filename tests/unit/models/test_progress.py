"""Progress lines for the task log."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.models.progress import (
    gang_summary,
    heartbeat_line,
    job_change_line,
    workflow_change_line,
)


def _job(phase: str, **counts) -> dict:
    return {
        "metadata": {"name": "j"},
        "spec": {"minAvailable": 3, "tasks": [{"replicas": 1}, {"replicas": 2}]},
        "status": {"state": {"phase": phase}, **counts},
    }


def test_progress_line():
    line = job_change_line("j", "Pending", "Running", _job("Running", running=3, minAvailable=3))
    assert line == "Volcano Job j: Pending -> Running (3/3 pods running, gang admitted)"


def test_a_gang_waiting_for_admission_says_how_many_of_min_available_started():
    line = job_change_line("j", "", "Pending", _job("Pending", pending=3, retryCount=1))
    assert line == (
        "Volcano Job j: submitted -> Pending (0/3 pods running, gang waiting for admission "
        "(0/3 of minAvailable started), retry 1)"
    )


def test_workflow_line_and_heartbeat():
    assert workflow_change_line("wf", "", "", None) == "Argo Workflow wf: submitted -> Pending"
    assert workflow_change_line("wf", "Running", "Failed", "oops") == "Argo Workflow wf: Running -> Failed (oops)"
    beat = heartbeat_line("j", _job("Running", running=3), 187.9)
    assert beat == "Volcano Job j: Running (3/3 pods running, gang admitted) 3m07s"


@pytest.mark.parametrize(
    ("phase", "counts", "summary"),
    [
        # the status's minAvailable (what the PodGroup got) before the spec's
        ("Running", {"running": 2, "minAvailable": 2}, "2/3 pods running, gang admitted"),
        (
            "Running",
            {"running": 1, "succeeded": 1, "failed": 1},
            "1/3 pods running, 1 succeeded, 1 failed, gang admitted",
        ),
        ("Running", {"running": 2, "failed": 1}, "2/3 pods running, 1 failed, gang admitted"),
        ("Running", {"succeeded": 2, "failed": 1}, "0/3 pods running, 2 succeeded, 1 failed, gang admitted"),
        # pods pending while the Job is no longer Pending (a restart): still waiting
        (
            "Restarting",
            {"pending": 1, "running": 1},
            "1/3 pods running, gang waiting for admission (1/3 of minAvailable started)",
        ),
        ("Running", {"running": 1}, "1/3 pods running"),
        ("Pending", {}, "0/3 pods running, gang waiting for admission (0/3 of minAvailable started)"),
    ],
)
def test_gang_summary(phase, counts, summary):
    assert gang_summary(_job(phase, **counts)) == summary


def test_gang_summary_of_a_job_without_spec_or_counts():
    assert gang_summary({"status": {"state": {"phase": "Running"}}}) == "0/0 pods running"
    job = {"spec": {"tasks": [{"name": "a"}, {"replicas": 2}]}, "status": {"state": {"phase": "Running"}, "running": 1}}
    assert gang_summary(job) == "1/2 pods running"  # no minAvailable: nothing said about the gang


def test_heartbeat_of_a_long_run():
    assert heartbeat_line("j", _job("Running", running=3), 3725).endswith(" 62m05s")
