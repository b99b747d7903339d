"""Volcano semantics on the sandbox: gang blocking, eviction restarts, retries spent, commands."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import phase_of, volcano_job, wait_for

pytestmark = pytest.mark.integration


def test_gang_above_capacity_stays_pending_without_pods_and_says_why(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    job = sandbox.api.create("vcjobs", volcano_job("too-big", workers=3, cpu="4"), ns)  # 12 cores on an 8-core node
    group = f"too-big-{job['metadata']['uid']}"

    def unschedulable():
        pg = sandbox.api.get_or_none("podgroups", group, ns) or {}
        return next((c for c in (pg.get("status") or {}).get("conditions", []) if c["type"] == "Unschedulable"), None)

    condition = wait_for(unschedulable, 30, what="Unschedulable condition")
    assert condition["reason"] == "NotEnoughResources"
    assert "tasks in gang unschedulable" in condition["message"] and "cpu" in condition["message"]
    assert phase_of(sandbox.api, "vcjobs", "too-big", ns) == "Pending"
    assert sandbox.api.list("pods", ns, "volcano.sh/job-name=too-big")["items"] == []
    events = sandbox.api.request(
        "GET", f"/api/v1/namespaces/{ns}/events", query={"fieldSelector": f"involvedObject.name={group}"}
    )["items"]
    assert any(e["reason"] == "Unschedulable" and e["type"] == "Warning" for e in events)
    # capacity arrives: the gang is admitted and runs
    sandbox.kubelet.set_node_capacity("sandbox-node-0", cpu="16")
    try:
        wait_for(lambda: phase_of(sandbox.api, "vcjobs", "too-big", ns) == "Completed", 60, what="job Completed")
    finally:
        sandbox.kubelet.set_node_capacity("sandbox-node-0", cpu="8")


def test_eviction_under_pod_evicted_restart_job_restarts_and_counts(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    sandbox.kubelet.programs.script(
        ScriptedProgram(lines=["waiting for workers"], duration=3600), namespace=ns, container="mpimaster"
    )
    sandbox.api.create(
        "vcjobs", volcano_job("evicted", workers=2, policies=[{"event": "PodEvicted", "action": "RestartJob"}]), ns
    )
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "evicted", ns) == "Running", 30, what="Running")
    sandbox.kubelet.evict_pod(ns, "evicted-mpiworker-1")
    wait_for(
        lambda: (
            sandbox.api.get("vcjobs", "evicted", ns)["status"].get("retryCount") == 1
            and phase_of(sandbox.api, "vcjobs", "evicted", ns) == "Running"
        ),
        60,
        what="restarted",
    )
    master = sandbox.api.get("pods", "evicted-mpimaster-0", ns)
    assert master["metadata"]["annotations"]["volcano.sh/job-retry-count"] == "1"
    sandbox.kubelet.programs.clear()


def test_master_failing_until_max_retry_ends_failed(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["boom"], exit_code=3), namespace=ns, container="mpimaster")
    job = volcano_job(
        "crashing",
        workers=1,
        master_policies=[{"event": "PodFailed", "action": "RestartJob"}],
        max_retry=2,
        restart="Never",
    )
    sandbox.api.create("vcjobs", job, ns)
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "crashing", ns) == "Failed", 90, what="Failed")
    status = sandbox.api.get("vcjobs", "crashing", ns)["status"]
    assert status["retryCount"] == 2
    sandbox.kubelet.programs.clear()


@pytest.mark.parametrize(("action", "phase"), [("TerminateJob", "Terminated"), ("AbortJob", "Aborted")])
def test_commands_terminate_and_abort(sandbox, sandbox_namespace, action, phase):
    ns = sandbox_namespace
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    job = sandbox.api.create("vcjobs", volcano_job("commanded", workers=1), ns)
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "commanded", ns) == "Running", 30, what="Running")
    ref = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "commanded",
        "uid": job["metadata"]["uid"],
        "controller": True,
    }
    sandbox.api.create(
        "commands",
        {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {"generateName": "commanded-", "ownerReferences": [ref]},
            "action": action,
            "target": ref,
        },
        ns,
    )
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "commanded", ns) == phase, 60, what=phase)
    assert sandbox.api.list("commands", ns)["items"] == []  # executed at most once: deleted first
    wait_for(lambda: not sandbox.api.list("pods", ns, "volcano.sh/job-name=commanded")["items"], 30, what="pods gone")
    sandbox.kubelet.programs.clear()
