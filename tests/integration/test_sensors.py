"""VolcanoJobSensor and ArgoWorkflowSensor on objects created outside Airflow: succeed, fail, time out."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import pytest

import tests.dags.sensor_dags as dags
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.conftest import keep_for_secret_scan
from tests.integration.helpers import run_dag, stop_probe_mid_stream, volcano_job

pytestmark = pytest.mark.integration


@pytest.fixture
def ns(sandbox, sandbox_namespace, airflow_db, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())
    return sandbox_namespace


def _one_step_workflow(name: str) -> dict:
    """Return a Workflow of one container step (its container is named ``main``, as Argo names it)."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": name},
        "spec": {"entrypoint": "main", "templates": [{"name": "main", "container": {"image": "busybox"}}]},
    }


def _later(seconds: float, action) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), action()))
    thread.start()
    return thread


@pytest.mark.parametrize("mode", ["deferred", "poke"])
def test_job_sensor_waits_for_completed(sandbox, ns, caplog, capfd, mode):
    lines = ["outside job says hello", "outside job done"]
    sandbox.kubelet.programs.script(ScriptedProgram(lines=lines, duration=4), namespace=ns, container="mpimaster")
    creator = _later(1, lambda: sandbox.api.create("vcjobs", volcano_job("outside", workers=1), ns))
    try:
        states, log = run_dag(getattr(dags, f"test_job_sensor_{mode}"), caplog, capfd, namespace=ns, name="outside")
    finally:
        creator.join()
        sandbox.kubelet.programs.clear()
    assert states == {"wait": "success"}, log[-2000:]
    if mode == "deferred":  # log_task="mpimaster": the master's log forwarded once, under its header
        assert [log.count(line) for line in lines] == [1, 1], log[-2000:]
        assert "----- log of outside-mpimaster-0 (job attempt 1, container restart 0) -----" in log


def test_job_sensor_fails_fast_on_a_failing_phase(sandbox, ns, caplog, capfd):
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["boom"], exit_code=2), namespace=ns, container="mpimaster")
    job = volcano_job(
        "doomed", workers=1, master_policies=[{"event": "PodFailed", "action": "TerminateJob"}], restart="Never"
    )
    sandbox.api.create("vcjobs", job, ns)
    try:
        states, log = run_dag(dags.test_job_sensor_deferred, caplog, capfd, namespace=ns, name="doomed")
    finally:
        sandbox.kubelet.programs.clear()
    assert states == {"wait": "failed"}
    # at the phase, not at the sensor's 60 s timeout (which fails it "still ... after 60 s")
    assert f"volcano job {ns}/doomed reached failing phase Terminated" in log and "after 60 s" not in log


def test_job_sensor_times_out_and_soft_fail_skips(sandbox, ns, caplog, capfd):
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    sandbox.api.create("vcjobs", volcano_job("endless", workers=1), ns)
    try:
        states, log = run_dag(dags.job_sensor_short, caplog, capfd, namespace=ns, name="endless")
        assert states == {"wait": "failed"} and f"volcano_job {ns}/endless still " in log and "after 3 s" in log
        states, _ = run_dag(dags.job_sensor_soft, caplog, capfd, namespace=ns, name="missing-job")
        assert states == {"wait": "skipped"}
    finally:
        sandbox.kubelet.programs.clear()


def test_workflow_sensor(sandbox, ns, caplog, capfd):
    sandbox.api.create("workflows", _one_step_workflow("outside-wf"), ns)
    states, log = run_dag(dags.workflow_sensor, caplog, capfd, namespace=ns, name="outside-wf")
    assert states == {"wait": "success"}, log[-2000:]


def test_job_sensor_fails_at_once_when_the_job_it_saw_is_deleted(sandbox, ns, caplog, capfd):
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    sandbox.api.create("vcjobs", volcano_job("deleted-job", workers=1), ns)

    def delete_when_running():
        from tests.integration.helpers import phase_of, wait_for

        wait_for(lambda: phase_of(sandbox.api, "vcjobs", "deleted-job", ns) == "Running", 60, what="job running")
        time.sleep(2)  # the sensor's trigger has seen it by now
        sandbox.api.delete("vcjobs", "deleted-job", ns)

    deleter = threading.Thread(target=delete_when_running)
    deleter.start()
    try:
        states, log = run_dag(dags.test_job_sensor_deferred, caplog, capfd, namespace=ns, name="deleted-job")
    finally:
        deleter.join(90)
        sandbox.kubelet.programs.clear()
    assert states == {"wait": "failed"}, log[-2000:]
    assert f"volcano job {ns}/deleted-job does not exist (deleted?)" in log and "after 60 s" not in log


def test_workflow_sensor_fails_on_a_failed_workflow(sandbox, ns, caplog, capfd):
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["bad"], exit_code=1), namespace=ns, container="main")
    sandbox.api.create("workflows", _one_step_workflow("failing-wf"), ns)
    try:
        states, log = run_dag(dags.workflow_sensor, caplog, capfd, namespace=ns, name="failing-wf")
    finally:
        sandbox.kubelet.programs.clear()
    assert states == {"wait": "failed"}, log[-2000:]
    assert f"workflow {ns}/failing-wf reached failing phase Failed" in log


@pytest.mark.reliability
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_job_sensor_trigger_stopped_mid_stream_resumes_from_its_xcom_cursors(sandbox, ns, reliability, how):
    """``VolcanoJobSensor(log_task=...)``'s trigger keeps its cursors in an XCom of the sensor's task instance (the
    Job is not the provider's to annotate). Killed hard, the next trigger repeats exactly the lines shown after the
    last store; stopped cleanly (SIGTERM: cancelled, as a triggerer stopping does), it repeats none. Before, every
    restart showed the whole log again. Each trigger runs in a process of its own, reaching Airflow's metadata
    database through Airflow's own request handling (``trigger_probe.py``).
    """
    from tests.integration.reliability import leftovers

    job = volcano_job("restarted", workers=1)
    lines = [f"step {i}" for i in range(80)]
    program = ScriptedProgram(lines=lines, rate=4, duration=22)
    sandbox.kubelet.programs.script(program, namespace=ns, container="mpimaster")
    dag = dags.test_job_sensor_deferred
    run = dag.test(mark_success_pattern="wait")  # the task instance whose XCom the triggers keep their cursors in
    command = [sys.executable, "-m", "tests.integration.trigger_probe", "--sensor", ns, "restarted", dag.dag_id]
    command += [run.run_id, "wait", "--stream", "--save-every", "1"]
    try:  # the job is created once the first trigger waits for it: its lines come while it follows
        stopped = stop_probe_mid_stream(
            command, "step ", after=50, how=how, started=lambda: sandbox.api.create("vcjobs", job, ns)
        )
        second = subprocess.run(command, capture_output=True, text=True, timeout=300)
    finally:
        sandbox.kubelet.programs.clear()
    keep_for_secret_scan("\n".join(stopped.lines), second.stdout, second.stderr)
    assert second.returncode == 0, second.stderr[-3000:]
    resumed = [line[5:] for line in second.stdout.splitlines() if line.startswith("LINE step ")]
    first, stored = stopped.shown("step "), stopped.stored_lines("step ")
    sandbox.api.delete("vcjobs", "restarted", ns)
    left, seconds = leftovers(sandbox, ns)
    shown = first + resumed
    name = "killed hard (SIGKILL)" if how == signal.SIGKILL else "stopped (SIGTERM)"
    reliability(
        f"R1 sensor's trigger (log_task) {name} mid-stream, cursors stored every 1 s",
        expected=len(lines),
        delivered=len(set(lines) & set(shown)),
        repeated=len(shown) - len(set(shown)),
        objects_left=left,
        cleanup_seconds=seconds,
    )
    assert json.loads(second.stdout.splitlines()[-1])["status"] == "success"
    assert first == lines[: len(first)]
    assert resumed == lines[len(stored) :]  # from the stored cursor on: nothing lost, in order
    if how == signal.SIGKILL:
        assert stored  # stores came while it streamed: the whole log is not shown again
    else:
        assert stored == first  # its last store, on its way out, held every line shown
    assert left == 0
