"""What the operators submit: typed parameters over free ones, Jinja-rendered numbers, refused policies."""

from __future__ import annotations

import types

import pytest

from airflow_provider_volcano_argo.models.params import InvalidParameterError
from airflow_provider_volcano_argo.operators.argo_workflow import ArgoWorkflowTemplateOperator
from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator

CONTEXT = {"ti": types.SimpleNamespace(dag_id="d", task_id="mpi", run_id="r", map_index=-1, try_number=1)}


def test_free_parameters_pass_and_the_typed_ones_win_by_name():
    op = VolcanoMPIJobOperator(
        task_id="mpi", job_name="solver", workers="4", parameters={"mesh": "/data/mesh.h5", "workers": "99"}
    )
    submitted = op.workflow_parameters(CONTEXT)
    assert submitted["mesh"] == "/data/mesh.h5"
    assert submitted["workers"] == "4" and submitted["np"] == "4"  # "4" as Jinja renders it, typed again
    assert submitted["job-name"] == "solver"


def test_a_bad_free_parameter_is_refused_naming_it():
    op = ArgoWorkflowTemplateOperator(task_id="t", workflow_template="x", parameters={"p": "a; rm -rf /"})
    with pytest.raises(InvalidParameterError, match=r"parameters\['p'\]: must not contain ';'"):
        op.workflow_parameters(CONTEXT)


@pytest.mark.parametrize(("field", "value"), [("on_finish_action", "delete"), ("on_kill_action", "stop")])
def test_an_unknown_policy_is_refused_when_the_dag_is_parsed(field, value):
    with pytest.raises(ValueError, match=f"{field} must be one of"):
        VolcanoMPIJobOperator(task_id="t", **{field: value})


def test_ensure_template_refuses_a_template_it_does_not_ship_before_any_api_call(monkeypatch):
    op = VolcanoMPIJobOperator(task_id="mpi", job_name="j", workflow_template="my-template", ensure_template=True)
    monkeypatch.setattr(VolcanoMPIJobOperator, "hook", property(lambda self: pytest.fail("no API call expected")))
    with pytest.raises(InvalidParameterError, match="ensure_template: installs only the shipped templates"):
        op.execute(CONTEXT)


#: The README's "Templated:" list.
DOCUMENTED_TEMPLATED = {
    "job_name", "workers", "slots_per_worker", "image", "mpi_command", "volcano_queue", "min_available", "max_retry",
    "gpus_per_worker", "rdma_per_worker", "cpu_per_worker", "memory_per_worker", "priority_class",
    "workflow_template", "workflow_file", "parameters", "namespace", "workflow_name", "labels", "kubernetes_conn_id",
}  # fmt: skip


def test_the_documented_fields_are_rendered_by_jinja_and_no_others():
    op = VolcanoMPIJobOperator(task_id="mpi", schedule_timeout="{{ v }}", log_task="{{ v }}")
    for field in DOCUMENTED_TEMPLATED - {"labels", "parameters"}:
        setattr(op, field, "{{ v }}")
    op.labels, op.parameters = {"team": "{{ v }}"}, {"mesh": "{{ v }}"}
    op.render_template_fields({"v": "rendered"})
    rendered = {field for field in DOCUMENTED_TEMPLATED if "rendered" in str(getattr(op, field))}
    assert rendered == DOCUMENTED_TEMPLATED
    assert (op.schedule_timeout, op.log_task) == ("{{ v }}", "{{ v }}")  # documented as not templated
