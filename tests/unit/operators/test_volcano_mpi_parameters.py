"""What the operators submit: typed parameters over free ones, Jinja-rendered numbers, refused policies."""

from __future__ import annotations

import copy
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


def test_a_shipped_template_installed_by_an_older_provider_is_refused_naming_what_it_lacks():
    from airflow_provider_volcano_argo.exceptions import TemplateOutdatedError
    from airflow_provider_volcano_argo.templates import workflow_template

    op = VolcanoMPIJobOperator(task_id="mpi", job_name="j", namespace="hpc", parameters={"mesh": "/data/m.h5"})
    parameters = op.workflow_parameters(CONTEXT)  # a free parameter the template lacks is the user's business
    current = workflow_template("volcano-mpi")
    op.check_template(current, parameters)  # the template this version ships: no complaint
    older = workflow_template("volcano-mpi")
    older["metadata"]["namespace"] = "hpc"
    older["spec"]["arguments"]["parameters"] = [
        p for p in older["spec"]["arguments"]["parameters"] if p["name"] not in ("mpi-argv", "mpiworker-container")
    ]
    with pytest.raises(TemplateOutdatedError) as err:
        op.check_template(older, parameters)
    assert "hpc/volcano-mpi lacks the parameters mpi-argv, mpiworker-container" in str(err.value)
    assert "volcano-argo install-templates --namespace hpc" in str(err.value)
    custom = VolcanoMPIJobOperator(task_id="mpi", job_name="j", workflow_template="my-mpi")
    custom.check_template(older, parameters)  # a template of one's own takes what it declares


def test_the_workflow_records_its_full_task_instance_and_kill_policy_for_gc():
    from airflow_provider_volcano_argo.models.reaping import submitted_run

    long_run = types.SimpleNamespace(
        dag_id="d", task_id="mpi", run_id="manual__2026-01-01T00:00:00+00:00", map_index=3, try_number=2
    )
    op = VolcanoMPIJobOperator(task_id="mpi", on_kill_action="stop_workflow", durable=False)
    body = op.build_workflow({"ti": long_run}, "wf", {})
    run = submitted_run({**body, "metadata": {**body["metadata"], "uid": "u"}}, [], "ns")
    assert (run.task.run_id, run.task.map_index, run.task.try_number) == (long_run.run_id, 3, 2)
    assert (run.on_kill_action, run.durable) == ("stop_workflow", False)
    assert body["metadata"]["labels"]["airflow.apache.org/run-id"] != long_run.run_id  # hashed: not enough


#: The README's "Templated:" list.
DOCUMENTED_TEMPLATED = {
    "job_name", "workers", "slots_per_worker", "image", "mpi_command", "volcano_queue", "min_available", "max_retry",
    "gpus_per_worker", "rdma_per_worker", "cpu_per_worker", "memory_per_worker", "priority_class",
    "mpi_args", "mpi_launcher_flags", "volumes", "volume_mounts", "env_vars", "env_from", "node_selector",
    "master_resources", "worker_resources", "working_dir", "init_image", "ttl_seconds_after_finished",
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


def test_a_relative_workflow_file_is_read_from_the_dag_files_folder(tmp_path, monkeypatch):
    import datetime

    from airflow.sdk import DAG

    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "wf.yaml").write_text("kind: Workflow\nspec: {entrypoint: main}\n")
    monkeypatch.chdir("/")  # the worker's working directory is not the DAG's folder
    with DAG("d", schedule=None, start_date=datetime.datetime(2026, 1, 1)) as dag:
        op = ArgoWorkflowTemplateOperator(task_id="t", workflow_file="workflows/wf.yaml")
    dag.fileloc = str(tmp_path / "dag.py")
    assert op._inline_workflow()["spec"]["entrypoint"] == "main"


class _RecordingHook:
    """Records the clean-ups asked for."""

    def __init__(self) -> None:
        self.calls: list = []

    def clean_up_workflow(self, name, namespace, steps):
        self.calls.append((name, namespace, steps))
        return steps.delete


def test_airflows_own_deferral_timeout_stops_and_deletes_the_run_before_failing(monkeypatch):
    try:
        from airflow.sdk.exceptions import TaskDeferralTimeout
    except ImportError:  # task-sdk 1.0 raises the one in airflow.exceptions
        from airflow.exceptions import TaskDeferralTimeout

    from airflow_provider_volcano_argo.models.policies import CleanupSteps

    hook = _RecordingHook()
    monkeypatch.setattr(VolcanoMPIJobOperator, "hook", property(lambda self: hook))
    identity = {"name": "wf", "namespace": "ns", "uid": "u"}
    pulls = {"argo_workflow": identity}  # what execute pushed before deferring
    ti = types.SimpleNamespace(task_id="mpi", xcom_pull=lambda task_ids, key: pulls.get(key))
    op = VolcanoMPIJobOperator(task_id="mpi", on_finish_action="keep_workflow")
    with pytest.raises(TaskDeferralTimeout):
        op.resume_execution("__fail__", {"error": "Trigger timeout"}, {"ti": ti})
    assert hook.calls == [("wf", "ns", CleanupSteps(stop=True, delete=False))]  # kept, as asked, but stopped


def test_a_run_cut_by_its_deadline_is_stopped_even_when_kept(monkeypatch):
    from airflow_provider_volcano_argo.models.policies import CleanupSteps

    hook = _RecordingHook()
    monkeypatch.setattr(VolcanoMPIJobOperator, "hook", property(lambda self: hook))
    op = VolcanoMPIJobOperator(task_id="mpi", on_finish_action="keep_workflow")
    event = {"status": "timeout", "message": "execution_timeout reached", "reason": "timeout", "details": [],
             "namespace": "ns", "workflow": {"name": "wf", "uid": "u", "phase": "Running", "message": ""},
             "jobs": [], "tails": {}, "lines_streamed": 0, "exit_codes": [], "log_book": {}}  # fmt: skip
    with pytest.raises(Exception, match="execution_timeout reached"):
        op.execute_complete({"ti": None}, event)
    assert hook.calls == [("wf", "ns", CleanupSteps(stop=True, delete=False))]


class _Store:
    """A task_state_store: a dict behind get/set."""

    def __init__(self, **values) -> None:
        self.values = dict(values)

    def get(self, key):
        return self.values.get(key)

    def set(self, key, value) -> None:
        self.values[key] = value


def test_a_success_is_kept_before_the_clean_up_and_a_later_try_returns_it(monkeypatch):
    hook = _RecordingHook()
    monkeypatch.setattr(VolcanoMPIJobOperator, "hook", property(lambda self: hook))
    store = _Store()
    event = {"status": "success", "message": "Volcano Job j Completed.", "reason": "completed", "details": [],
             "namespace": "ns", "workflow": {"name": "wf", "uid": "u", "phase": "Succeeded", "message": ""},
             "jobs": [], "tails": {}, "lines_streamed": 3, "exit_codes": [], "log_book": {}}  # fmt: skip
    result = VolcanoMPIJobOperator(task_id="mpi").execute_complete({"task_state_store": store}, event)
    assert store.values == {"argo_workflow_outcome": result} and result["workflow_name"] == "wf"
    assert len(hook.calls) == 1  # then deleted, per on_finish_action

    monkeypatch.setattr(VolcanoMPIJobOperator, "hook", property(lambda self: hook))
    again = VolcanoMPIJobOperator(task_id="mpi", job_name="j")
    context = {**CONTEXT, "task_state_store": store}
    monkeypatch.setattr(again, "_find_live_workflow", lambda *a: pytest.fail("no resubmission, no reattach"))
    monkeypatch.setattr(type(hook), "resolve_namespace", lambda self, ns: ns or "default", raising=False)
    assert again.execute(context) == result


def test_durable_false_keeps_nothing_and_runs_every_try_anew(monkeypatch):
    hook = _RecordingHook()
    monkeypatch.setattr(VolcanoMPIJobOperator, "hook", property(lambda self: hook))
    store = _Store(argo_workflow_outcome={"status": "success", "workflow_name": "old"})
    op = VolcanoMPIJobOperator(task_id="mpi", job_name="j", durable=False)
    monkeypatch.setattr(type(hook), "resolve_namespace", lambda self, ns: ns or "default", raising=False)
    monkeypatch.setattr(op, "_check_template", lambda *a: (_ for _ in ()).throw(RuntimeError("submits anew")))
    with pytest.raises(RuntimeError, match="submits anew"):
        op.execute({**CONTEXT, "task_state_store": store})


class _TemplateHook:
    """Serves WorkflowTemplates by name and counts the reads."""

    def __init__(self, templates: dict) -> None:
        self.templates, self.reads = templates, []

    def get_object(self, resource, name, namespace):
        self.reads.append(name)
        return self.templates.get(name)


def test_the_follow_spec_says_which_objects_carry_the_label_and_the_task_log_what_does_not(capsys):
    from airflow_provider_volcano_argo.templates import workflow_template

    shipped = workflow_template("volcano-mpi")
    old = copy.deepcopy(shipped)  # as an older provider installed it
    manifest = old["spec"]["templates"][1]["resource"]["manifest"]
    old["spec"]["templates"][1]["resource"]["manifest"] = manifest.replace(
        "app.kubernetes.io/managed-by: airflow-provider-volcano-argo", "team: hpc"
    )
    hook = _TemplateHook({"volcano-mpi": shipped, "old": old})
    op = VolcanoMPIJobOperator(task_id="mpi")
    ours = {"metadata": {"name": "wf", "labels": {"app.kubernetes.io/managed-by": "airflow-provider-volcano-argo"}}}
    run = {**ours, "spec": {"workflowTemplateRef": {"name": "volcano-mpi"}}}
    assert op._labelled(hook, "ns", run) == ["jobs", "pods", "workflow"]
    assert hook.reads == ["volcano-mpi"]  # a reattach: the template was not read before submitting
    op._template = shipped
    assert op._labelled(hook, "ns", run) == ["jobs", "pods", "workflow"] and len(hook.reads) == 1
    outdated = {**ours, "spec": {"workflowTemplateRef": {"name": "old"}}}
    assert op._labelled(hook, "ns", outdated) == ["workflow"]
    assert "Volcano Jobs and log-task pods of WorkflowTemplate ns/old are not known to carry" in capsys.readouterr().out
    inline = {"metadata": {"name": "wf", "labels": {}}, "spec": {"templates": shipped["spec"]["templates"]}}
    assert op._labelled(hook, "ns", inline) == ["jobs", "pods"]
