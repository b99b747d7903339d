"""The provider in a real Airflow deployment: API server, scheduler (LocalExecutor), DAG processor and two
triggerers as separate processes on PostgreSQL, every run started, marked and read through the REST API.

What ``dag.test()`` cannot show is shown here: the trigger runs in another process than the task, triggerers
die, stall and hand work over, and the user's view is the task log the API server serves.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_provider_volcano_argo.models.cursor_saves import CHECK_SECONDS, CURSOR_SAVE_SECONDS
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.deployment.deployment import TRIGGERER_HEALTH_SECONDS, AirflowDeployment
from tests.integration.helpers import volcano_job
from tests.integration.reliability import leftovers, line_counts, numbered_lines, objects_left
from tests.sandbox.integration.test_kubelet_restarts import NumberedRuns

pytestmark = [pytest.mark.integration, pytest.mark.reliability]

#: A record the task log shows at level error (the API's JSON records carry their level first).
ERROR_RECORD = re.compile(r"^error\b.*$", re.M | re.I)


def streaming_master(sandbox, namespace: str, tag: str, count: int, rate: float) -> list[str]:
    """Script the MPI master of ``namespace`` to print ``count`` numbered lines at ``rate`` lines/s; return them."""
    lines = numbered_lines(tag, count)
    sandbox.kubelet.programs.script(ScriptedProgram(lines=lines, rate=rate), namespace=namespace, container="mpimaster")
    return lines


def wait_for_lines(airflow: AirflowDeployment, dag_id: str, run_id: str, lines: list[str], at_least: int) -> int:
    """Wait until the task log served by the API shows ``at_least`` of ``lines``; return how many it shows."""
    shown = 0

    def enough() -> bool:
        nonlocal shown
        shown = line_counts(airflow.task_log(dag_id, run_id, "mpi"), lines)[0]
        return shown >= at_least

    airflow.wait(enough, 180, f"{at_least} master lines in the task log")
    return shown


def finish_streamed_run(airflow, sandbox, namespace, run_id, lines, reliability, scenario):
    """Wait for a ``deploy_mpi`` run's end, record its row, check that no line was lost; return (run state, task log,
    lines repeated, objects left).
    """
    state = airflow.wait_run("deploy_mpi", run_id, 300)
    log = airflow.task_log("deploy_mpi", run_id, "mpi")
    delivered, repeated = line_counts(log, lines)
    left, seconds = leftovers(sandbox, namespace)
    reliability(scenario, expected=len(lines), delivered=delivered, repeated=repeated, objects_left=left,
                cleanup_seconds=seconds)  # fmt: skip
    assert delivered == len(lines), log[-3000:]
    return state, log, repeated, left


def triggerer_job(airflow: AirflowDeployment, dag_id: str, run_id: str) -> int | None:
    """Return the id of the triggerer job running the MPI task's trigger, as the API reports it."""
    return (airflow.task_instance(dag_id, run_id, "mpi").get("triggerer_job") or {}).get("id")


def test_r14_etl_mpi_downstream_chain_with_workers_from_xcom(airflow, sandbox, namespace, reliability):
    """ETL -> MPI -> downstream: the gang has the size the upstream task returned, every rank's line reaches the
    task log once, no error is logged, the result reaches the downstream task, and nothing is left. The MPI task
    reaches the cluster only through ``config_file`` (its connection names none): the trigger must use it too.
    """
    dag_id = "deploy_etl_mpi_chain"
    run_id = airflow.trigger(dag_id, {"namespace": namespace, "config_file": str(sandbox.airflow_kubeconfig)})
    state = airflow.wait_run(dag_id, run_id, 300)
    log = airflow.task_log(dag_id, run_id, "mpi")
    ranks = [f"rank {rank} out of 3 processors" for rank in range(3)]
    delivered, repeated = line_counts(log, ranks)
    left, seconds = leftovers(sandbox, namespace)
    reliability("R14 deployment: ETL -> MPI -> downstream, workers from XCom", expected=3, delivered=delivered,
                repeated=repeated, objects_left=left, cleanup_seconds=seconds)  # fmt: skip
    assert state == "success", log[-3000:]
    assert (delivered, repeated) == (3, 0), log[-3000:]
    assert ERROR_RECORD.findall(log) == []
    assert airflow.task_state(dag_id, run_id, "mpi") == "success"
    assert airflow.xcom(dag_id, run_id, "load").endswith(" Completed")
    assert left == 0


def test_a_master_restarted_in_its_pod_shows_each_run_once_in_the_task_log(airflow, sandbox, namespace):
    """A sensor's trigger in a triggerer process follows a master that exits 1, is restarted in its pod
    (``OnFailure``) and exits 0: the task log the API server serves shows each run's lines once, under its own
    header (the restart's wait of ``engine/pod_logs.py``; runs of 20 s, so the follow starts before the first ends).
    """
    sandbox.kubelet.programs.script(NumberedRuns([1, 0], seconds=20), namespace=namespace, container="mpimaster")
    sandbox.api.create("vcjobs", volcano_job("restarts", workers=1), namespace)
    run_id = airflow.trigger("deploy_job_sensor", {"namespace": namespace})
    state = airflow.wait_run("deploy_job_sensor", run_id, 240)
    log = airflow.task_log("deploy_job_sensor", run_id, "watch")
    expected = []
    for run in range(2):
        expected.append(f"----- log of restarts-mpimaster-0 (job attempt 1, container restart {run}) -----")
        expected += [f"run {run} line 0", f"run {run} line 1"]
    assert state == "success", log[-3000:]
    assert re.findall(r"----- log of .*? -----|run \d line \d", log) == expected, log[-3000:]
    assert ERROR_RECORD.findall(log) == []


def test_r15_execution_timeout_while_deferred_ends_a_run_that_keeps_printing(airflow, sandbox, namespace, reliability):
    """Issue points 1 and 5: ``execution_timeout`` (20 s) reached while deferred, the master printing on: the trigger
    ends the follow itself (a bounded drain), the task fails saying so, and the gang is removed.
    """
    dag_id = "deploy_mpi_timeout"
    master = ScriptedProgram(count=3600, line_template="tick {i}", rate=2, duration=3600)
    sandbox.kubelet.programs.script(master, namespace=namespace, container="mpimaster")
    run_id = airflow.trigger(dag_id, {"namespace": namespace})
    state = airflow.wait_run(dag_id, run_id, 240)
    log = airflow.task_log(dag_id, run_id, "mpi")
    left, seconds = leftovers(sandbox, namespace)
    reliability(
        "R15 deployment: execution_timeout while deferred, master printing", objects_left=left, cleanup_seconds=seconds
    )
    assert state == "failed"
    assert "execution_timeout reached" in log, log[-3000:]
    assert 0 < len(set(re.findall(r"\btick (\d+)\b", log))) < 3600
    assert left == 0


def test_r16_every_triggerer_killed_hard_mid_stream(airflow, sandbox, namespace, reliability):
    """Issue point 2: both triggerers SIGKILLed (with their trigger runners) while the master's lines stream, then a
    new one started: no line is lost, and what repeats is bounded by the cursor save interval.
    """
    dag_id, rate = "deploy_mpi", 4.0
    lines = streaming_master(sandbox, namespace, "D3", 240, rate)
    run_id = airflow.trigger(dag_id, {"namespace": namespace})
    wait_for_lines(airflow, dag_id, run_id, lines, 20)
    killed_at = time.monotonic()
    airflow.kill("triggerer-1")
    airflow.kill("triggerer-2")
    time.sleep(TRIGGERER_HEALTH_SECONDS + 1)  # no triggerer alive for longer than the health threshold
    airflow.start_triggerer("triggerer-1")
    state, log, repeated, left = finish_streamed_run(
        airflow, sandbox, namespace, run_id, lines, reliability, "R16 deployment: every triggerer SIGKILLed"
    )
    assert state == "success", log[-3000:]
    # at most what streamed since the last store (and before the first one, since the stream began)
    assert repeated <= rate * min(CURSOR_SAVE_SECONDS + CHECK_SECONDS, time.monotonic() - killed_at + 60)
    assert left == 0


def test_r17_stalled_triggerer_hands_over_and_does_not_destroy_the_run(airflow, sandbox, namespace, reliability):
    """Issue point 3: the triggerer running the trigger is stopped (SIGSTOP) past the health threshold, the other
    one takes the trigger over, the stalled one is resumed and cancels its copy through Airflow's user-kill path
    (``on_kill``): the Workflow must survive that, and the run succeed with every line.
    """
    dag_id = "deploy_mpi"
    lines = streaming_master(sandbox, namespace, "D4", 160, 4.0)
    airflow.signal("triggerer-2", signal.SIGSTOP)  # so that triggerer-1 takes the trigger
    run_id = airflow.trigger(dag_id, {"namespace": namespace})
    wait_for_lines(airflow, dag_id, run_id, lines, 10)
    first = triggerer_job(airflow, dag_id, run_id)
    assert first is not None
    airflow.signal("triggerer-2", signal.SIGCONT)
    airflow.signal("triggerer-1", signal.SIGSTOP)
    airflow.wait(
        lambda: triggerer_job(airflow, dag_id, run_id) not in (None, first),
        60,
        "the trigger handed over to the other triggerer",
    )
    time.sleep(3)
    airflow.signal("triggerer-1", signal.SIGCONT)  # it now finds its trigger assigned elsewhere and cancels it
    state, log, _, left = finish_streamed_run(
        airflow, sandbox, namespace, run_id, lines, reliability, "R17 deployment: triggerer stalled, then resumed"
    )
    assert state == "success", log[-3000:]
    assert left == 0


def test_r18_marked_failed_while_deferred_removes_the_gang(airflow, sandbox, namespace, reliability):
    """Issue point 4: a user marks the deferred task failed through the API; the triggerer's ``on_kill`` (the task is
    no longer deferred) removes the Workflow, the Volcano Job and its pods.
    """
    dag_id = "deploy_mpi"
    lines = streaming_master(sandbox, namespace, "D5", 600, 2.0)
    run_id = airflow.trigger(dag_id, {"namespace": namespace})
    wait_for_lines(airflow, dag_id, run_id, lines, 5)
    assert objects_left(sandbox, namespace) > 0
    airflow.mark(dag_id, run_id, "mpi", "failed")
    left, seconds = leftovers(sandbox, namespace)
    reliability("R18 deployment: marked failed while deferred", objects_left=left, cleanup_seconds=seconds)
    assert airflow.task_state(dag_id, run_id, "mpi") == "failed"
    assert left == 0


def test_r19_marked_failed_with_no_triggerer_alive_then_gc(airflow, sandbox, namespace, reliability):
    """Issue point 4, the case no trigger can handle: every triggerer is dead when the user marks the deferred task
    failed, so no ``on_kill`` runs and the gang runs on; ``volcano-argo gc`` (dry run first) finds the run from the
    task instance in Airflow's database and removes it.
    """
    dag_id = "deploy_mpi"
    lines = streaming_master(sandbox, namespace, "R19", 600, 2.0)
    run_id = airflow.trigger(dag_id, {"namespace": namespace})
    wait_for_lines(airflow, dag_id, run_id, lines, 5)
    airflow.kill("triggerer-1")
    airflow.kill("triggerer-2")
    airflow.mark(dag_id, run_id, "mpi", "failed")
    assert airflow.task_state(dag_id, run_id, "mpi") == "failed"
    running = objects_left(sandbox, namespace)

    gc = [str(Path(sys.executable).with_name("volcano-argo")), "gc", "-n", namespace, "--grace", "0"]
    dry = subprocess.run(gc, env=airflow.env, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert f"would delete {namespace}/" in dry.stdout and "the task instance is failed" in dry.stdout, dry.stdout
    assert objects_left(sandbox, namespace) >= running > 0  # a dry run changes nothing
    started = time.monotonic()
    applied = subprocess.run([*gc, "--apply"], env=airflow.env, capture_output=True, text=True, timeout=120)
    assert applied.returncode == 0, applied.stderr[-2000:]
    left, _ = leftovers(sandbox, namespace)
    reliability("R19 deployment: marked failed with no triggerer alive, then gc --apply", objects_left=left,
                cleanup_seconds=round(time.monotonic() - started, 1))  # fmt: skip
    assert left == 0, applied.stdout


def test_r20_execution_timeout_while_the_kubernetes_api_is_down(airflow, sandbox, namespace, reliability):
    """Issue point 5: the Kubernetes API server goes down mid-run and stays down past ``execution_timeout``: the
    trigger still ends the follow at the deadline (it does not wait for its watches to list again), the task fails
    saying so, and whatever its clean-up could not reach is removed by ``volcano-argo gc`` once the API is back.
    """
    dag_id = "deploy_mpi_timeout"
    master = ScriptedProgram(count=3600, line_template="tock {i}", rate=2, duration=3600)
    sandbox.kubelet.programs.script(master, namespace=namespace, container="mpimaster")
    run_id = airflow.trigger(dag_id, {"namespace": namespace})
    airflow.wait(lambda: "tock 1" in airflow.task_log(dag_id, run_id, "mpi"), 120, "the master's lines streaming")
    sandbox.control_plane.restart_apiserver(downtime=35.0)  # execution_timeout (20 s) falls inside the downtime
    state = airflow.wait_run(dag_id, run_id, 240)
    log = airflow.task_log(dag_id, run_id, "mpi")
    assert state == "failed"
    assert "execution_timeout reached" in log, log[-3000:]
    started = time.monotonic()
    gc = [str(Path(sys.executable).with_name("volcano-argo")), "gc", "-n", namespace, "--grace", "0", "--apply"]
    applied = subprocess.run(gc, env=airflow.env, capture_output=True, text=True, timeout=120)
    assert applied.returncode == 0, applied.stderr[-2000:]
    left, _ = leftovers(sandbox, namespace)
    reliability("R20 deployment: execution_timeout while the Kubernetes API is down, then gc", objects_left=left,
                cleanup_seconds=round(time.monotonic() - started, 1))  # fmt: skip
    assert left == 0, applied.stdout
