"""Volcano semantics on the sandbox: gang blocking, eviction restarts, retries spent, commands."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from airflow_provider_volcano_argo.sandbox.volcano.scheduler import VolcanoScheduler
from tests.integration.helpers import phase_of, volcano_job, wait_for

pytestmark = pytest.mark.integration


def _podgroup_events(sandbox, ns: str, group: str) -> list[dict]:
    return sandbox.api.request(
        "GET", f"/api/v1/namespaces/{ns}/events", query={"fieldSelector": f"involvedObject.name={group}"}
    )["items"]


def _unschedulable(group: dict) -> dict | None:
    """Return the PodGroup's ``Unschedulable`` condition (the gang plugin's), if it has one."""
    return next((c for c in (group.get("status") or {}).get("conditions", []) if c["type"] == "Unschedulable"), None)


def test_gang_above_capacity_stays_pending_without_pods_with_only_an_event(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    # 12 cores on an 8-core node: more than 8 x 1.2 (overcommit.go), so the enqueue action refuses it
    job = sandbox.api.create("vcjobs", volcano_job("too-big", workers=3, cpu="4"), ns)
    group = f"too-big-{job['metadata']['uid']}"

    def refusal():
        return next((e for e in _podgroup_events(sandbox, ns, group) if e["reason"] == "Unschedulable"), None)

    event = wait_for(refusal, 30, what="Unschedulable event")
    assert event["type"] == "Normal"
    assert event["message"] == "resource in cluster is overused: overused cpu"
    status = sandbox.api.get("podgroups", group, ns).get("status") or {}
    assert status.get("phase", "Pending") == "Pending" and not status.get("conditions")
    assert phase_of(sandbox.api, "vcjobs", "too-big", ns) == "Pending"
    assert sandbox.api.list("pods", ns, "volcano.sh/job-name=too-big")["items"] == []
    # capacity arrives: the gang is admitted and runs
    sandbox.kubelet.set_node_capacity("sandbox-node-0", cpu="16")
    try:
        wait_for(lambda: phase_of(sandbox.api, "vcjobs", "too-big", ns) == "Completed", 60, what="job Completed")
    finally:
        sandbox.kubelet.set_node_capacity("sandbox-node-0", cpu="8")


def test_gang_within_the_overcommit_factor_is_enqueued_and_its_pods_wait_under_the_gang_condition(
    sandbox, sandbox_namespace
):
    ns = sandbox_namespace
    # 9 cores on an 8-core node: within 8 x 1.2, so it is enqueued and gets pods, but they cannot all be bound
    job = sandbox.api.create("vcjobs", volcano_job("overcommitted", workers=2, cpu="4500m"), ns)
    group = f"overcommitted-{job['metadata']['uid']}"

    def condition():  # once it counts the three pods: the controller creates them one by one
        found = _unschedulable(sandbox.api.get_or_none("podgroups", group, ns) or {})
        return found if found and "/3 tasks" in found["message"] else None

    found = wait_for(condition, 30, what="the gang plugin's Unschedulable condition over the three pods")
    assert found["reason"] == "NotEnoughResources"
    assert "tasks in gang unschedulable" in found["message"] and "Insufficient cpu" in found["message"]
    assert sandbox.api.get("podgroups", group, ns)["status"]["phase"] == "Inqueue"
    pods = sandbox.api.list("pods", ns, "volcano.sh/job-name=overcommitted")["items"]
    assert len(pods) == 3 and not any(p["spec"].get("nodeName") for p in pods)
    assert phase_of(sandbox.api, "vcjobs", "overcommitted", ns) == "Pending"
    assert not any(
        e["reason"] == "Unschedulable" and "overused" in e["message"] for e in _podgroup_events(sandbox, ns, group)
    )


def test_a_podgroup_write_from_a_stale_copy_fails_instead_of_undoing_a_newer_one(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    # the master computes until the test ends: a Job that completes deletes its PodGroup
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    job = sandbox.api.create("vcjobs", volcano_job("late", workers=2, cpu="4500m"), ns)
    group = f"late-{job['metadata']['uid']}"

    def waiting_copy():
        pg = sandbox.api.get_or_none("podgroups", group, ns) or {}
        return pg if _unschedulable(pg) else None

    stale = wait_for(waiting_copy, 30, what="the gang waiting under the Unschedulable condition")
    sandbox.kubelet.set_node_capacity("sandbox-node-0", cpu="16")
    try:
        wait_for(
            lambda: (sandbox.api.get("podgroups", group, ns).get("status") or {}).get("phase") == "Running",
            30,
            what="the gang scheduled",
        )
        # a pass that began before the gang was scheduled writes what it computed from its older copy, as a
        # session from the scheduler's cache would: cache.go UpdatePodGroup sends that copy's resourceVersion
        scheduler = next(c for c in sandbox.components if isinstance(c, VolcanoScheduler))
        late = [{**c, "transitionID": "a-later-session"} for c in stale["status"]["conditions"]]
        scheduler._write(stale, {**stale["status"], "conditions": late})
        status = sandbox.api.get("podgroups", group, ns)["status"]
        assert status["phase"] == "Running"
        # session.go UpdatePodGroupCondition keeps one condition per type: the old Unschedulable one stays
        assert [c["type"] for c in status["conditions"]] == ["Unschedulable", "Scheduled"]
        assert "a-later-session" not in [c["transitionID"] for c in status["conditions"]]
    finally:
        sandbox.kubelet.set_node_capacity("sandbox-node-0", cpu="8")
        sandbox.kubelet.programs.clear()
        sandbox.api.delete("vcjobs", "late", ns)


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
