"""The provider's CLI against the sandbox: ``volcano-argo install-templates`` creates, then finds up to date;
``volcano-argo gc`` cleans up a run whose task was marked failed while no triggerer ran, and nothing else.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from airflow_provider_volcano_argo.models.reaping import TASK_INSTANCE_ANNOTATION
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.conftest import keep_for_secret_scan
from tests.integration.helpers import (
    clear_task,
    defer_next_try,
    defer_without_triggerer,
    delete_dag_run,
    set_task_state,
    wait_for,
)

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "airflow_provider_volcano_argo.cli"]


def test_install_templates_cli_creates_then_updates(sandbox, sandbox_namespace):
    env = {**os.environ, **sandbox.environment(admin=True)}
    cmd = [*CLI, "install-templates", "-n", sandbox_namespace, "--with-rbac"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr[-2000:]
    assert f"created WorkflowTemplate {sandbox_namespace}/volcano-mpi" in first.stdout
    assert f"applied Role {sandbox_namespace}/volcano-mpi-workflow" in first.stdout
    again = subprocess.run(cmd[:-1], capture_output=True, text=True, env=env, timeout=120)
    assert f"WorkflowTemplate {sandbox_namespace}/volcano-mpi is up to date" in again.stdout
    assert sandbox.api.get("workflowtemplates", "volcano-mpi-master-after-workers", sandbox_namespace)


def _gc(namespace: str, *args: str) -> list[str]:
    """Run ``volcano-argo gc`` as its console script runs, as the Airflow identity (least privilege, the connection
    of ``mpi_namespace``) on the tests' Airflow database; return its lines.
    """
    done = subprocess.run([*CLI, "gc", "-n", namespace, *args], capture_output=True, text=True, timeout=180)
    keep_for_secret_scan(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    # Airflow's own log lines (e.g. the secrets masker's warnings about the connection) share stdout
    return [line for line in done.stdout.splitlines() if re.match(r"(leave|would \w+|deleted|stopped) ", line)]


class Run:
    """One deferred task's run in the sandbox: its Workflow, Volcano Job and the gang's pods, read afresh."""

    def __init__(self, sandbox, namespace: str, run_id: str, try_number: int = 1) -> None:
        self.sandbox, self.namespace, self.run_id, self.try_number = sandbox, namespace, run_id, try_number
        self.workflow = wait_for(self._workflow, 30, what=f"the Workflow of {run_id} try {try_number}")
        self.name = self.workflow["metadata"]["name"]

    def _workflow(self) -> dict | None:
        for workflow in self.sandbox.api.list("workflows", self.namespace)["items"]:
            identity = json.loads(workflow["metadata"].get("annotations", {}).get(TASK_INSTANCE_ANNOTATION, "{}"))
            if (identity.get("run_id"), identity.get("try_number")) == (self.run_id, self.try_number):
                return workflow
        return None

    def job(self) -> dict | None:
        uid = self.workflow["metadata"]["uid"]
        jobs = self.sandbox.api.list("vcjobs", self.namespace)["items"]
        return next((j for j in jobs if uid in {r["uid"] for r in j["metadata"].get("ownerReferences", [])}), None)

    def gang_pods(self, job_name: str) -> list[dict]:
        pods = self.sandbox.api.list("pods", self.namespace)["items"]
        return [p for p in pods if p["metadata"].get("labels", {}).get("volcano.sh/job-name") == job_name]

    def running(self) -> bool:
        """Tell whether the Workflow runs unstopped and its whole gang runs (master and worker pods)."""
        workflow, job = self._workflow(), self.job()
        if workflow is None or job is None or (workflow.get("spec") or {}).get("shutdown"):
            return False
        pods = self.gang_pods(job["metadata"]["name"])
        phases = {(p.get("status") or {}).get("phase") for p in pods}
        phase = ((job.get("status") or {}).get("state") or {}).get("phase")  # no status until Volcano writes one
        return phase == "Running" and len(pods) >= 2 and phases == {"Running"}


@pytest.mark.parametrize("on_kill_action", ["delete_workflow", "stop_workflow", "keep_workflow"])
def test_gc_cleans_up_runs_whose_task_was_marked_failed_or_deleted_while_no_triggerer_ran_and_nothing_else(
    sandbox, mpi_namespace, on_kill_action
):
    from tests.dags.mpi_test_dags import mpi_overrides

    ns = mpi_namespace
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    overrides = {"on_kill_action": on_kill_action}
    try:
        ids = {what: defer_without_triggerer(mpi_overrides, namespace=ns, overrides=overrides)
               for what in ("failed", "deleted", "deferred")}  # fmt: skip
        runs = {what: Run(sandbox, ns, run_id) for what, (_, run_id) in ids.items()}
        wait_for(lambda: all(run.running() for run in runs.values()), 90, what="every gang running")
        # a user marks one task failed and deletes another's DAG run; no triggerer runs their triggers' on_kill
        set_task_state(*ids["failed"], "failed")
        delete_dag_run(*ids["deleted"])
        orphans, alive = [runs["failed"], runs["deleted"]], runs["deferred"]

        dry = _gc(ns, "--grace", "0")
        planned = "leave" if on_kill_action == "keep_workflow" else f"would {on_kill_action.split('_')[0]}"
        reasons = ("the task instance is failed", "its task instance no longer exists")
        for run, why in zip(orphans, reasons, strict=True):
            [line] = [line for line in dry if f"/{run.name} " in line]
            assert line.startswith(f"{planned} {ns}/{run.name} ") and why in line and on_kill_action in line, dry
        [alive_line] = [line for line in dry if f"/{alive.name} " in line]
        assert alive_line.startswith(f"leave {ns}/{alive.name} ") and alive_line.endswith("its try is deferred")
        assert all(run.running() for run in runs.values())  # a dry run changes nothing

        gangs = {run.name: run.job()["metadata"]["name"] for run in orphans}
        applied = _gc(ns, "--grace", "0", "--apply")
        done = {"delete_workflow": "deleted", "stop_workflow": "stopped"}.get(on_kill_action)
        for run in orphans:
            if done:
                assert any(line.startswith(f"{done} {ns}/{run.name} ") for line in applied), applied
            if on_kill_action == "delete_workflow":
                wait_for(lambda run=run: run._workflow() is None and run.job() is None, 90, what="the run deleted")
            elif on_kill_action == "stop_workflow":
                assert run._workflow()["spec"]["shutdown"] == "Terminate"
                wait_for(lambda run=run: run.job()["status"]["state"]["phase"] == "Terminated", 90, what="stopped")
            if on_kill_action == "keep_workflow":
                assert run.running()  # as the trigger's on_kill would have left it
            else:
                wait_for(lambda run=run: not run.gang_pods(gangs[run.name]), 90, what="the gang's pods gone")
        assert alive.running()  # the deferred task's run is untouched

        assert _gc(ns, "--grace", "0", "--apply", "--quiet") == []  # nothing left to do: no gang runs any more
    finally:
        sandbox.kubelet.programs.clear()
        for workflow in sandbox.api.list("workflows", ns)["items"]:
            sandbox.api.delete("workflows", workflow["metadata"]["name"], ns)


@pytest.mark.parametrize("durable", [True, False])
def test_gc_after_a_clear_leaves_the_run_the_next_try_adopts_and_cleans_up_one_it_never_will(
    sandbox, mpi_namespace, durable
):
    """A deferred task cleared while no triggerer runs: its next try reattaches to the run (``durable``) and gc
    leaves it, told by the try's own record of what it follows; with ``durable=False`` the next try submits anew
    and the first run is an orphan.
    """
    from tests.dags.mpi_test_dags import mpi_overrides

    ns = mpi_namespace
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    try:
        ids = defer_without_triggerer(mpi_overrides, namespace=ns, overrides={"durable": durable})
        first = Run(sandbox, ns, ids[1])
        wait_for(first.running, 90, what="the gang running")
        clear_task(*ids)

        [cleared] = _gc(ns, "--grace", "0")
        if durable:
            assert cleared.startswith(f"leave {ns}/{first.name} ") and cleared.endswith(
                "try 1 is cleared, another is to come and may reattach to it (durable)"
            )
        else:
            assert cleared.startswith(f"would delete {ns}/{first.name} ") and "never reattaches" in cleared
        assert first.running()

        defer_next_try(mpi_overrides, *ids)  # the scheduler runs the cleared task again: try 2
        job_name = first.job()["metadata"]["name"]
        lines = _gc(ns, "--grace", "0", "--apply")
        if durable:
            assert lines == [
                f"leave {ns}/{first.name} (test_mpi_overrides.mpi run {ids[1]} try 1): adopted: try 2 is deferred "
                "and follows it"
            ]
            assert first.running()
        else:
            second = Run(sandbox, ns, ids[1], try_number=2)
            assert sorted(lines) == [
                f"deleted {ns}/{first.name} (test_mpi_overrides.mpi run {ids[1]} try 1): try 2 is deferred and "
                "never reattaches (durable=False) (on_kill_action=delete_workflow)",
                f"leave {ns}/{second.name} (test_mpi_overrides.mpi run {ids[1]} try 2): its try is deferred",
            ]
            wait_for(lambda: first._workflow() is None and not first.gang_pods(job_name), 90, what="the first run gone")
            assert second.running()
    finally:
        sandbox.kubelet.programs.clear()
        for workflow in sandbox.api.list("workflows", ns)["items"]:
            sandbox.api.delete("workflows", workflow["metadata"]["name"], ns)
