"""Reading phases and the verdicts on them."""

from __future__ import annotations

import json

import pytest

from airflow_provider_volcano_argo.models.phases import (
    JOB_FAILED_PHASES,
    JOB_SUCCESS_PHASES,
    VolcanoJobPhase,
    WorkflowPhase,
    job_ended,
    job_phase,
    job_started,
    phase_of,
    phase_verdict,
    workflow_done,
    workflow_message,
    workflow_phase,
)


def test_phases_are_read_from_objects_the_controllers_may_not_have_seen_yet():
    assert (
        job_phase(None) == job_phase({}) == job_phase({"status": None}) == job_phase({"status": {"state": None}}) == ""
    )
    assert job_phase({"status": {"state": {"phase": "Running"}}}) == "Running"
    assert workflow_phase({"status": {}}) == "" and workflow_phase({"status": {"phase": "Error"}}) == "Error"
    assert phase_of("volcano_job", {"status": {"state": {"phase": "Completed"}}}) == "Completed"
    assert phase_of("workflow", {"status": {"phase": "Succeeded"}}) == "Succeeded"


def test_phase_enums_are_their_api_strings():
    assert VolcanoJobPhase.COMPLETED == "Completed" and f"{VolcanoJobPhase.ABORTED}" == "Aborted"
    assert json.dumps([WorkflowPhase.ERROR]) == '["Error"]'
    assert "Terminated" in JOB_FAILED_PHASES and "Completed" in JOB_SUCCESS_PHASES
    assert not JOB_SUCCESS_PHASES & JOB_FAILED_PHASES


def test_workflow_done():
    assert all(workflow_done({"status": {"phase": p}}) for p in ("Succeeded", "Failed", "Error"))
    assert not workflow_done({"status": {"phase": "Running"}}) and not workflow_done(None)


@pytest.mark.parametrize(
    ("phase", "exists", "seen", "verdict"),
    [
        ("Completed", True, True, "success"),
        ("Failed", True, True, "failed"),
        ("Running", True, True, None),
        ("", False, False, None),  # not created yet: waited for
        ("", False, True, "deleted"),  # gone after it was seen
    ],
)
def test_the_sensors_verdict(phase, exists, seen, verdict):
    assert phase_verdict(phase, exists, ["Completed"], ["Failed", "Terminated"], seen) == verdict


def test_a_workflow_without_a_message_has_an_empty_one():
    assert workflow_message(None) == workflow_message({"status": {"message": None}}) == ""
    assert workflow_message({"status": {"message": "child failed"}}) == "child failed"


@pytest.mark.parametrize("phase", ["Completed", "Failed", "Terminated", "Aborted"])
def test_job_ended(phase):
    assert job_ended({"status": {"state": {"phase": phase}}})
    assert not job_ended({"status": {"state": {"phase": "Completing"}}}) and not job_ended(None)


@pytest.mark.parametrize("counts", [{"running": 1}, {"succeeded": 1}, {"failed": 1}])
def test_a_job_with_any_pod_running_or_ended_has_started(counts):
    assert job_started({"status": counts})
    assert not job_started({"status": {"pending": 3, "running": 0}})
