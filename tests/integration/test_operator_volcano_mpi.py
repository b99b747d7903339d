"""VolcanoMPIJobOperator end to end through Airflow's own machinery (dag.test runs the deferral and trigger)."""

from __future__ import annotations

import re

import pytest

from airflow_provider_volcano_argo import templates
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from airflow_provider_volcano_argo.version_compat import AIRFLOW_V_3_3_PLUS
from tests.integration.helpers import AttemptProgram, attempt_lines, pod_log, run_dag, wait_for, xcom_result
from tests.integration.reliability import leftovers, line_counts, numbered_lines

pytestmark = pytest.mark.integration


def test_etl_then_mpi_then_downstream_succeeds_with_every_rank_in_the_log(sandbox, mpi_namespace, caplog, capfd):
    from tests.dags.mpi_test_dags import etl_mpi_etl

    states, log = run_dag(etl_mpi_etl, caplog, capfd, namespace=mpi_namespace)
    assert states == {"extract": "success", "mpi": "success", "load": "success"}, log[-3000:]
    errors = re.findall(r"^.*(?:\[error\s*\]|^ERROR\b).*$", log, re.M)
    assert errors == [], errors  # a good run logs no error (it did: the extra link's XCom, read at the end)
    for rank in range(3):
        assert f"rank {rank} out of 3 processors" in log
    assert "-> Running" in log and "Completed" in log

    result = xcom_result(etl_mpi_etl.dag_id, "mpi")
    assert result["phase"] == "Completed" and result["status"] == "success"
    assert result["namespace"] == mpi_namespace and result["job_name"].startswith("mpi-")
    assert result["task_status_count"]["mpimaster"]["phase"] == {"Succeeded": 1}
    # on_finish_action=delete_workflow: nothing is left behind, the plugins' Services, ConfigMaps, Secrets included
    assert leftovers(sandbox, mpi_namespace)[0] == 0


def test_hostile_parameters_are_refused_before_anything_is_created(sandbox, mpi_namespace, caplog, capfd):
    """A value Argo substitutes as text is refused; argv and the pods' settings are carried as data instead
    (``test_operator_pod_settings.py``).
    """
    from tests.dags.mpi_test_dags import mpi_overrides

    states, log = run_dag(
        mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides={"image": "mpi:1\n  hostPID: true"}
    )
    assert states == {"mpi": "failed"}
    assert "image: must be an image reference" in log
    assert sandbox.api.list("workflows", mpi_namespace)["items"] == []
    assert sandbox.api.list("vcjobs", mpi_namespace)["items"] == []


@pytest.mark.reliability
def test_failing_master_fails_the_task_with_diagnostics(sandbox, mpi_namespace, caplog, capfd, reliability):
    from tests.dags.mpi_test_dags import mpi_failing

    lines = numbered_lines("R7", 3)
    sandbox.kubelet.programs.script(
        AttemptProgram(lines=[*lines, "error: rank 1 diverged"], exit_code=7),
        namespace=mpi_namespace,
        container="mpimaster",
    )
    try:
        states, log = run_dag(mpi_failing, caplog, capfd, namespace=mpi_namespace)
    finally:
        sandbox.kubelet.programs.clear()
    streamed = log.split("ended Failed", 1)[0]  # the failure message repeats the last lines on purpose
    # max_retry=2: attempt 1 fails (PodFailed -> RestartJob, retry 1), attempt 2 fails, retry 2 = maxRetry: Failed;
    # the master's restartPolicy is Never, so one container instance per attempt
    attempts = (1, 2)
    expected = [line for n in attempts for line in attempt_lines(lines, n)]
    delivered, repeated = line_counts(streamed, expected)
    left, seconds = leftovers(sandbox, mpi_namespace)
    reliability("R7 master fails until maxRetry", expected=len(expected), delivered=delivered,
                repeated=repeated, objects_left=left, cleanup_seconds=seconds)  # fmt: skip
    assert states == {"mpi": "failed"}
    assert "ended Failed" in log
    assert "exited with code 7" in log
    assert "error: rank 1 diverged a2" in log.split("ended Failed", 1)[1]  # the last lines, in the message
    assert "retries 2" in log
    # from the Job's pods (Volcano >= v1.11 reports no taskStatusCount once Failed): the retained master
    told = [line for line in log.splitlines() if "task status" in line]
    assert any("task status {'mpimaster': {'phase': {'Failed': 1}}}" in line for line in told), told
    assert (delivered, repeated, left) == (len(expected), 0, 0)
    assert streamed.count("----- log of ") == len(attempts)  # no attempt shown twice, none invented
    for n in attempts:  # each attempt's lines under its own header
        header = streamed.index(f"(job attempt {n}, container restart 0)")
        assert header < streamed.index(attempt_lines(lines, n)[0])


@pytest.mark.reliability
def test_gang_never_admitted_fails_after_schedule_timeout_naming_the_reason(
    sandbox, mpi_namespace, caplog, capfd, reliability
):
    from tests.dags.mpi_test_dags import mpi_unschedulable

    states, log = run_dag(mpi_unschedulable, caplog, capfd, namespace=mpi_namespace)
    left, seconds = leftovers(sandbox, mpi_namespace)
    reliability("R5 gang never admitted", objects_left=left, cleanup_seconds=seconds)
    assert states == {"mpi": "failed"}
    assert "not admitted by the gang scheduler within schedule_timeout" in log
    # refused at enqueue (12 cores > 8 x overcommit 1.2): Volcano says so only in an Event on the PodGroup
    assert "resource in cluster is overused: overused cpu" in log
    assert left == 0


@pytest.mark.reliability
def test_retried_task_reattaches_to_the_live_workflow(sandbox, mpi_namespace, caplog, capfd, reliability):
    from tests.dags.mpi_test_dags import mpi_reattach

    created, workflows = [], []
    sandbox.cluster.informer("workflows").subscribe(
        lambda kind, obj, old: (
            kind == "ADDED"
            and obj["metadata"]["namespace"] == mpi_namespace
            and workflows.append(obj["metadata"]["name"])
        )
    )
    sandbox.cluster.informer("vcjobs").subscribe(
        lambda kind, obj, old: (
            kind == "ADDED"
            and obj["metadata"]["namespace"] == mpi_namespace
            and created.append(obj["metadata"]["name"])
        )
    )
    lines = numbered_lines("R3", 5)
    sandbox.kubelet.programs.script(
        ScriptedProgram(lines=lines, duration=4), namespace=mpi_namespace, container="mpimaster"
    )
    try:
        states, log = run_dag(mpi_reattach, caplog, capfd, namespace=mpi_namespace)
    finally:
        sandbox.kubelet.programs.clear()
    delivered, repeated = line_counts(log, lines)
    left, seconds = leftovers(sandbox, mpi_namespace)
    reliability("R3 worker dies after submit, retry reattaches", expected=len(lines), delivered=delivered,
                repeated=repeated, objects_left=left, cleanup_seconds=seconds)  # fmt: skip
    assert states == {"mpi": "success"}, log[-3000:]
    assert len(set(workflows)) == 1, workflows  # exactly one Workflow ever existed
    assert "worker lost after submission" in log and "Reattaching to Argo Workflow" in log
    assert len(set(created)) == 1, created  # exactly one Volcano Job ever existed
    result = xcom_result("test_mpi_reattach", "mpi")
    assert result["job_name"] == created[0]  # the second try followed the first try's job
    assert (delivered, repeated, left) == (len(lines), 0, 0)  # its log shown once; nothing left


@pytest.mark.skipif(not AIRFLOW_V_3_3_PLUS, reason="task_state_store is Airflow >= 3.3 (before, a retry runs again)")
def test_a_retry_after_a_success_that_was_not_recorded_returns_it_without_running_again(
    sandbox, mpi_namespace, caplog, capfd
):
    from tests.dags.mpi_test_dags import mpi_success_unrecorded

    created: list[str] = []

    def record(kind: str, obj: dict, old: dict | None) -> None:
        if kind == "ADDED" and obj["metadata"]["namespace"] == mpi_namespace:
            created.append(obj["metadata"]["name"])

    sandbox.cluster.informer("workflows").subscribe(record)
    states, log = run_dag(mpi_success_unrecorded, caplog, capfd, namespace=mpi_namespace)
    assert states == {"mpi": "success"}, log[-3000:]
    assert "worker lost after the run succeeded (simulated)" in log
    assert "An earlier try of this task instance succeeded" in log
    assert len(created) == 1  # the MPI run ran once
    result = xcom_result("test_mpi_success_unrecorded", "mpi")
    assert result["status"] == "success" and result["workflow_name"] == created[0]


@pytest.mark.reliability
def test_execution_timeout_while_deferred_stops_and_removes_everything(
    sandbox, mpi_namespace, caplog, capfd, reliability
):
    from tests.dags.mpi_test_dags import mpi_timeout

    # a master that never stops printing: once the deadline is reached, reading its log must not hold the end back
    # (an idle-based drain would read on for as long as it prints: 300 s here)
    master = ScriptedProgram(count=600, line_template="tick {i}", rate=2, duration=3600)
    sandbox.kubelet.programs.script(master, namespace=mpi_namespace, container="mpimaster")
    try:
        states, log = run_dag(mpi_timeout, caplog, capfd, namespace=mpi_namespace)
    finally:
        sandbox.kubelet.programs.clear()
    left, seconds = leftovers(sandbox, mpi_namespace)
    reliability("R4 execution_timeout while deferred", objects_left=left, cleanup_seconds=seconds)
    assert states == {"mpi": "failed"}
    assert "execution_timeout reached" in log
    shown = len(set(re.findall(r"\btick (\d+)\b", log)))
    assert 0 < shown < 600, shown  # it ended while the master was still printing, with what it had printed
    assert left == 0


def test_blocking_mode_behaves_the_same(sandbox, mpi_namespace, caplog, capfd):
    from tests.dags.mpi_test_dags import mpi_blocking

    sandbox.api.delete("workflowtemplates", "volcano-mpi", mpi_namespace)  # ensure_template installs it again
    sandbox.set_airflow_rules(
        [*templates.airflow_rules(), *templates.airflow_roles(mpi_namespace)[1]["rules"]], mpi_namespace
    )
    states, log = run_dag(mpi_blocking, caplog, capfd, namespace=mpi_namespace)
    assert states == {"mpi": "success"}, log[-3000:]
    assert f"created WorkflowTemplate {mpi_namespace}/volcano-mpi" in log
    assert "rank 1 out of 2 processors" in log and "-> Completed" in log
    wait_for(lambda: not sandbox.api.list("vcjobs", mpi_namespace)["items"], 60, what="job collected")


@pytest.mark.reliability
def test_volcano_restart_shows_each_attempt_once_under_its_header(sandbox, mpi_namespace, caplog, capfd, reliability):
    import threading

    from tests.dags.mpi_test_dags import mpi_hostile as plain  # a plain MPI run (mpi_command from params)

    lines = numbered_lines("R6", 5)
    sandbox.kubelet.programs.script(
        # the first attempt computes until the eviction restarts the gang (a fixed window can close first under load)
        AttemptProgram(lines=lines, rate=20, duration=5, first_duration=300),
        namespace=mpi_namespace,
        container="mpimaster",
    )
    evicted = []

    def evict_once() -> None:
        def master_running():
            pods = sandbox.api.list("pods", mpi_namespace, "volcano.sh/task-spec=mpimaster")["items"]
            return next((p for p in pods if (p.get("status") or {}).get("phase") == "Running"), None)

        master = wait_for(master_running, 90, what="master running")
        job = master["metadata"]["labels"]["volcano.sh/job-name"]
        wait_for(
            lambda: (
                attempt_lines(lines, 1)[-1]
                in pod_log(sandbox.api, mpi_namespace, master["metadata"]["name"], "mpimaster")
            ),
            30,
            what="attempt 1 printed",
        )
        sandbox.kubelet.evict_pod(mpi_namespace, f"{job}-mpiworker-0")
        evicted.append(job)

    helper = threading.Thread(target=evict_once)
    helper.start()
    try:
        states, log = run_dag(plain, caplog, capfd, namespace=mpi_namespace, mpi_command="mpi_hello_world")
    finally:
        helper.join(120)
        sandbox.kubelet.programs.clear()
    expected = attempt_lines(lines, 1) + attempt_lines(lines, 2)  # the eviction restarts the gang once
    delivered, repeated = line_counts(log, expected)
    left, seconds = leftovers(sandbox, mpi_namespace)
    reliability("R6 worker evicted, PodEvicted -> RestartJob", expected=len(expected), delivered=delivered,
                repeated=repeated, objects_left=left, cleanup_seconds=seconds)  # fmt: skip
    assert evicted and states == {"mpi": "success"}, log[-3000:]
    first, second = log.index("(job attempt 1, container restart 0)"), log.index("(job attempt 2, container restart 0)")
    assert first < log.index(expected[0]) < second < log.index(expected[len(lines)])  # each under its header
    assert (delivered, repeated, left) == (len(expected), 0, 0)
    assert xcom_result("test_mpi_hostile", "mpi")["retry_count"] == 1


def test_name_taken_by_another_task_instance_is_not_adopted(sandbox, mpi_namespace, caplog, capfd):
    from tests.dags.mpi_test_dags import mpi_named

    foreign = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "nightly-mpi", "labels": {"airflow.apache.org/dag-id": "someone-else"}},
        "spec": {"workflowTemplateRef": {"name": "volcano-mpi"}, "shutdown": "Stop"},
    }
    sandbox.api.create("workflows", foreign, mpi_namespace)
    states, log = run_dag(mpi_named, caplog, capfd, namespace=mpi_namespace)
    assert states == {"mpi": "failed"}
    assert "already exists" in log and "belongs to another task instance" in log
    kept = sandbox.api.get("workflows", "nightly-mpi", mpi_namespace)
    assert kept["metadata"]["labels"]["airflow.apache.org/dag-id"] == "someone-else"  # left alone


def test_the_operators_settings_reach_the_workflow_and_the_volcano_job(sandbox, mpi_namespace, caplog, capfd):
    """master_after_workers, slots_per_worker, priority_class, labels, parameters, stream_logs=False, argo_base_url
    and on_finish_action=keep_workflow, in one run: each checked on the objects created, not on the log.
    """
    from tests.dags.mpi_test_dags import mpi_overrides

    sandbox.apply(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"mpi-high-{mpi_namespace}"},
            "value": 1000,
        }
    )
    overrides = {
        "workflow_template": "volcano-mpi-master-after-workers",
        "master_after_workers": True,
        "workers": 2,
        "slots_per_worker": 2,
        "priority_class": f"mpi-high-{mpi_namespace}",
        "labels": {"team": "hpc"},
        "parameters": {"extra": "kept"},
        "stream_logs": False,
        "argo_base_url": "https://argo.example.com/",
        "on_finish_action": "keep_workflow",
    }
    states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides=overrides)
    assert states == {"mpi": "success"}, log[-3000:]
    [wf] = sandbox.api.list("workflows", mpi_namespace)["items"]  # kept
    assert wf["metadata"]["labels"]["team"] == "hpc"
    assert wf["spec"]["workflowTemplateRef"]["name"] == "volcano-mpi-master-after-workers"
    arguments = {p["name"]: p["value"] for p in wf["spec"]["arguments"]["parameters"]}
    assert arguments["extra"] == "kept" and arguments["np"] == "4" and arguments["min-available"] == "2"
    [job] = sandbox.api.list("vcjobs", mpi_namespace)["items"]  # kept with its Workflow
    assert job["status"]["state"]["phase"] == "Completed"
    assert job["spec"]["priorityClassName"] == f"mpi-high-{mpi_namespace}" and job["spec"]["minAvailable"] == 2
    master = next(t for t in job["spec"]["tasks"] if t["name"] == "mpimaster")
    assert master["dependsOn"]["name"] == ["mpiworker"]
    assert "-np 4" in str(master["template"]["spec"]["containers"][0])
    assert "----- log of" not in log and "Hello world" not in log  # stream_logs=False
    url = xcom_result("test_mpi_overrides", "mpi", key="_link_ArgoWorkflowLink")
    assert url == f"https://argo.example.com/workflows/{mpi_namespace}/{wf['metadata']['name']}"
    sandbox.api.delete("workflows", wf["metadata"]["name"], mpi_namespace)
