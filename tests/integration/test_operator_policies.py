"""The operator's less common settings end to end: accelerators, the non-default finish and kill policies, and a
kill in blocking mode delivered as Airflow delivers it (SIGTERM to the task process, the task runner's handler).
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import (
    NEEDS_SDK_RUNNER,
    AttemptProgram,
    attempt_lines,
    dag_test_runs_in_core,
    run_dag,
    wait_for,
)
from tests.integration.reliability import leftovers

pytestmark = pytest.mark.integration

NODE = "sandbox-node-0"


def _workflow_events(sandbox, namespace: str) -> list[str]:
    """Record what happens to the namespace's Workflows, in order: ``shutdown Terminate``, ``deleting`` (a
    foreground deletion was asked for: it ends once the dependents are gone), ``deleted``.
    """
    seen: list[str] = []

    def record(kind: str, obj: dict, old: dict | None) -> None:
        if obj["metadata"]["namespace"] != namespace:
            return
        shutdown = (obj.get("spec") or {}).get("shutdown")
        for happened, what in (
            (bool(shutdown), f"shutdown {shutdown}"),
            ("deletionTimestamp" in obj["metadata"], "deleting"),
            (kind == "DELETED", "deleted"),
        ):
            if happened and what not in seen:
                seen.append(what)

    sandbox.cluster.informer("workflows").subscribe(record)
    return seen


def _gang_terminated(sandbox, namespace: str) -> None:
    """Wait until the namespace's one Volcano Job is ``Terminated`` (kept) and none of its pods runs any more."""

    def terminated():
        [job] = sandbox.api.list("vcjobs", namespace)["items"]
        pods = sandbox.api.list("pods", namespace)["items"]
        running = [p for p in pods if (p.get("status") or {}).get("phase") in ("Pending", "Running")]
        return job["status"]["state"]["phase"] == "Terminated" and not running

    wait_for(terminated, 60, what="the kept run's gang terminated")


def _resources(task: dict) -> dict:
    return task["template"]["spec"]["containers"][0].get("resources") or {}


def test_gpus_and_rdma_reach_each_worker_and_count_in_gang_admission(sandbox, mpi_namespace, caplog, capfd):
    from tests.dags.mpi_test_dags import mpi_overrides

    asks: list[dict] = []  # the PodGroup goes with the job's end (killJob): watch it while it lives
    sandbox.cluster.informer("podgroups").subscribe(
        lambda kind, obj, old: (
            kind == "ADDED"
            and obj["metadata"]["namespace"] == mpi_namespace
            and asks.append({k: str(v) for k, v in obj["spec"]["minResources"].items() if "/" in k})
        )
    )
    sandbox.kubelet.set_node_capacity(NODE, gpus=2, rdma=2)
    try:
        fits = {"workers": 2, "gpus_per_worker": 1, "rdma_per_worker": 1, "on_finish_action": "keep_workflow"}
        states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides=fits)
        assert states == {"mpi": "success"}, log[-3000:]
        [job] = sandbox.api.list("vcjobs", mpi_namespace)["items"]
        tasks = {t["name"]: t for t in job["spec"]["tasks"]}
        for kind in ("requests", "limits"):  # device plugins' resources: a request must equal its limit
            asked = _resources(tasks["mpiworker"])[kind]
            assert (str(asked["nvidia.com/gpu"]), str(asked["rdma/ib"])) == ("1", "1"), asked
        assert "nvidia.com/gpu" not in str(_resources(tasks["mpimaster"]))  # the master runs no ranks
        assert asks == [{"nvidia.com/gpu": "2", "rdma/ib": "2"}]  # both workers', in the gang's ask (PodGroup)
        for wf in sandbox.api.list("workflows", mpi_namespace)["items"]:
            sandbox.api.delete("workflows", wf["metadata"]["name"], mpi_namespace)

        # 2 workers x 2 GPUs on a node with 2: the gang is never admitted, and the message says what is short
        too_many = {"workers": 2, "gpus_per_worker": 2, "schedule_timeout": 5}
        states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides=too_many)
    finally:
        sandbox.kubelet.set_node_capacity(NODE, gpus=0, rdma=0)
    assert states == {"mpi": "failed"}
    assert "not admitted by the gang scheduler within schedule_timeout" in log
    assert "nvidia.com/gpu" in log.split("not admitted by the gang scheduler", 1)[1]
    assert leftovers(sandbox, mpi_namespace)[0] == 0


def test_delete_succeeded_workflow_keeps_a_failed_run_stopped_for_inspection(sandbox, mpi_namespace, caplog, capfd):
    from tests.dags.mpi_test_dags import mpi_overrides

    seen = _workflow_events(sandbox, mpi_namespace)
    lines = ["loading mesh", "error: rank 0 diverged"]
    sandbox.kubelet.programs.script(
        AttemptProgram(lines=lines, exit_code=3), namespace=mpi_namespace, container="mpimaster"
    )
    try:
        overrides = {"max_retry": 1, "on_finish_action": "delete_succeeded_workflow"}
        states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides=overrides)
    finally:
        sandbox.kubelet.programs.clear()
    assert states == {"mpi": "failed"}
    assert attempt_lines(lines, 1)[-1] in log and "exited with code 3" in log
    [wf] = sandbox.api.list("workflows", mpi_namespace)["items"]  # kept: the run failed
    assert wf["spec"]["shutdown"] == "Terminate" and seen == ["shutdown Terminate"]  # no deletion asked for
    [job] = sandbox.api.list("vcjobs", mpi_namespace)["items"]
    assert job["status"]["state"]["phase"] == "Failed"  # the job and its record are there to inspect
    sandbox.api.delete("workflows", wf["metadata"]["name"], mpi_namespace)
    assert leftovers(sandbox, mpi_namespace)[0] == 0  # deleting the kept Workflow takes everything with it


@pytest.mark.skipif(
    dag_test_runs_in_core(), reason=f"{NEEDS_SDK_RUNNER}: core's SIGTERM handler raises out of dag.test()"
)
@pytest.mark.parametrize(
    ("on_kill_action", "expected"),
    [("delete_workflow", ["shutdown Terminate", "deleting", "deleted"]), ("stop_workflow", ["shutdown Terminate"])],
)
def test_sigterm_in_blocking_mode_applies_on_kill_action_and_nothing_else(
    sandbox, mpi_namespace, caplog, capfd, on_kill_action, expected
):
    """Airflow kills a running task by sending SIGTERM to its process; the task runner's handler calls ``on_kill``
    (``task_runner.py: _on_term``). In blocking mode the task then goes on: the finish policy
    (``delete_workflow``) must not undo a ``stop_workflow`` kill.
    """
    from tests.dags.mpi_test_dags import mpi_overrides

    seen = _workflow_events(sandbox, mpi_namespace)
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=mpi_namespace, container="mpimaster")
    killed: list[str] = []

    def kill_when_running() -> None:
        def running_job():
            jobs = sandbox.api.list("vcjobs", mpi_namespace)["items"]
            return [j for j in jobs if (j.get("status") or {}).get("state", {}).get("phase") == "Running"]

        [job] = wait_for(running_job, 90, what="job running")
        killed.append(job["metadata"]["name"])
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs in the main thread, where dag.test runs the task

    previous = signal.getsignal(signal.SIGTERM)
    killer = threading.Thread(target=kill_when_running)
    killer.start()
    try:
        overrides = {"deferrable": False, "on_kill_action": on_kill_action}
        states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides=overrides)
    finally:
        killer.join(120)
        signal.signal(signal.SIGTERM, previous)
        sandbox.kubelet.programs.clear()
    assert killed and states == {"mpi": "failed"}, log[-3000:]
    wait_for(lambda: seen == expected, 30, what=f"workflow events {expected}", describe=lambda: str(seen))
    if on_kill_action == "stop_workflow":
        [wf] = sandbox.api.list("workflows", mpi_namespace)["items"]  # stopped and kept
        assert wf["spec"]["shutdown"] == "Terminate" and "deletionTimestamp" not in wf["metadata"]
        _gang_terminated(sandbox, mpi_namespace)  # Argo's shutdown alone leaves it running
        sandbox.api.delete("workflows", wf["metadata"]["name"], mpi_namespace)
    assert leftovers(sandbox, mpi_namespace)[0] == 0


def test_a_run_cut_by_its_deadline_and_kept_is_stopped_with_its_gang(sandbox, mpi_namespace, caplog, capfd):
    from tests.dags.mpi_test_dags import mpi_timeout_kept

    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=mpi_namespace, container="mpimaster")
    try:
        states, log = run_dag(mpi_timeout_kept, caplog, capfd, namespace=mpi_namespace)
    finally:
        sandbox.kubelet.programs.clear()
    assert states == {"mpi": "failed"} and "execution_timeout reached" in log
    [wf] = sandbox.api.list("workflows", mpi_namespace)["items"]  # kept, as asked
    assert wf["spec"]["shutdown"] == "Terminate"
    _gang_terminated(sandbox, mpi_namespace)
    sandbox.api.delete("workflows", wf["metadata"]["name"], mpi_namespace)
    assert leftovers(sandbox, mpi_namespace)[0] == 0
