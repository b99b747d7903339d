"""Progress lines for the task log."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.progress import heartbeat_line, job_change_line, workflow_change_line


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
