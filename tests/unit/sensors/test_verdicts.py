"""What the sensors make of an object's phase (poke) and of their trigger's event (deferred)."""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException, AirflowSensorTimeout, AirflowSkipException

from airflow_provider_volcano_argo.sensors.argo_workflow import ArgoWorkflowSensor
from airflow_provider_volcano_argo.sensors.volcano_job import VolcanoJobSensor


def _event(status: str, phase: str = "", **extra) -> dict:
    return {"status": status, "phase": phase, "name": "j", "namespace": "ns", "kind": "volcano_job", **extra}


def test_defaults_are_plain_strings_of_the_terminal_phases():
    job = VolcanoJobSensor(task_id="s", name="j")
    assert job.target_phases == ["Completed"] and sorted(job.failure_phases) == ["Aborted", "Failed", "Terminated"]
    assert all(type(p) is str for p in job.target_phases + job.failure_phases)
    wf = ArgoWorkflowSensor(task_id="s", name="wf")
    assert wf.target_phases == ["Succeeded"] and sorted(wf.failure_phases) == ["Error", "Failed"]


def test_events_become_success_or_the_matching_failure():
    sensor = VolcanoJobSensor(task_id="s", name="j", namespace="ns", timeout=30)
    assert sensor.execute_complete({}, _event("success", "Completed")) == "Completed"
    with pytest.raises(AirflowFailException, match="reached failing phase Failed"):
        sensor.execute_complete({}, _event("failed", "Failed"))
    with pytest.raises(AirflowFailException, match="does not exist"):
        sensor.execute_complete({}, _event("deleted"))
    with pytest.raises(AirflowSensorTimeout, match="still Running after 30 s"):
        sensor.execute_complete({}, _event("timeout", "Running"))
    with pytest.raises(AirflowFailException, match="Forbidden"):
        sensor.execute_complete({}, _event("error", message="Forbidden: ..."))


def test_soft_fail_skips_instead_of_failing():
    sensor = VolcanoJobSensor(task_id="s", name="j", namespace="ns", timeout=30, soft_fail=True)
    for event in (_event("failed", "Failed"), _event("deleted"), _event("timeout", "Running")):
        with pytest.raises(AirflowSkipException):
            sensor.execute_complete({}, event)


class _Hook:
    def __init__(self, obj):
        self.obj = obj

    def resolve_namespace(self, namespace):
        return namespace or "default"

    def get_object(self, resource, name, namespace):
        return self.obj


@pytest.mark.parametrize(
    ("obj", "result"),
    [
        (None, False),  # not created yet: keep waiting
        ({"status": {"state": {"phase": "Running"}}}, False),
        ({"status": {"state": {"phase": "Completed"}}}, True),
    ],
)
def test_poke_waits_for_the_target(monkeypatch, obj, result):
    monkeypatch.setattr(VolcanoJobSensor, "hook", property(lambda self: _Hook(obj)))
    assert VolcanoJobSensor(task_id="s", name="j").poke({}) is result


def test_poke_fails_at_once_on_a_failing_phase(monkeypatch):
    monkeypatch.setattr(ArgoWorkflowSensor, "hook", property(lambda self: _Hook({"status": {"phase": "Error"}})))
    with pytest.raises(AirflowFailException, match="workflow default/wf reached failing phase Error"):
        ArgoWorkflowSensor(task_id="s", name="wf").poke({})


def test_the_sensor_passes_its_connection_settings_to_the_trigger():
    sensor = VolcanoJobSensor(task_id="s", name="j", kubernetes_conn_id="k8s", cluster_context="c", config_file="f")
    assert sensor.connection.to_dict() == {
        "kubernetes_conn_id": "k8s",
        "cluster_context": "c",
        "config_file": "f",
        "in_cluster": None,
    }
