"""Volcano's job state machine on the sandbox, as ``pkg/controllers/job/state/*.go`` and the kubelet drive it.

One retry per restart, however many pods one drain evicts; Restarting -> Pending once enough pods are no longer
terminating, with the new attempt's pods created while still Restarting; ``dependsOn`` on Ready pods counted against
the dependency's ``minAvailable``; the kubelet's grace period on kill; a kubelet (node-pressure) eviction.
"""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.sandbox.emulation.cluster import now_rfc3339
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import phase_of, volcano_job, wait_for

pytestmark = pytest.mark.integration


def _status(sandbox, name: str, ns: str) -> dict:
    return (sandbox.api.get_or_none("vcjobs", name, ns) or {}).get("status") or {}


def test_a_drain_evicting_two_workers_at_once_is_one_retry(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    policies = [{"event": "PodEvicted", "action": "RestartJob"}]
    sandbox.api.create("vcjobs", volcano_job("drained", workers=2, policies=policies, max_retry=5), ns)
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "drained", ns) == "Running", 30, what="Running")
    version = int(_status(sandbox, "drained", ns).get("version", 0))
    # kubectl drain: both workers of the node evicted together; each deletion raises PodEvicted with the same version
    sandbox.kubelet.evict_pod(ns, "drained-mpiworker-0")
    sandbox.kubelet.evict_pod(ns, "drained-mpiworker-1")
    wait_for(
        lambda: (
            int(_status(sandbox, "drained", ns).get("version", 0)) > version
            and phase_of(sandbox.api, "vcjobs", "drained", ns) == "Running"
        ),
        60,
        what="the gang running again",
    )
    # applyPolicies: the second eviction's request is from the killed attempt (JobVersion < Status.Version): a sync
    assert _status(sandbox, "drained", ns)["retryCount"] == 1
    workers = sandbox.api.list("pods", ns, "volcano.sh/job-name=drained,volcano.sh/task-spec=mpiworker")["items"]
    assert {p["metadata"]["annotations"]["volcano.sh/job-retry-count"] for p in workers} == {"1"}
    sandbox.kubelet.programs.clear()


def _restart(sandbox, name: str, ns: str) -> None:
    """Issue a RestartJob Command, as ``vcctl job restart`` would (``bus.volcano.sh``)."""
    job = sandbox.api.get("vcjobs", name, ns)
    ref = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": name,
        "uid": job["metadata"]["uid"],
        "controller": True,
    }
    body = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": f"{name}-", "ownerReferences": [ref]},
        "action": "RestartJob",
        "target": ref,
    }
    sandbox.api.create("commands", body, ns)


def _lingering_worker_job(sandbox, ns: str, name: str, min_available: int, grace: int = 30) -> str:
    """A running job whose worker 1 ignores SIGTERM (a shell as PID 1): killed, it lingers the whole grace period
    (``grace`` seconds, a tenth of it at time_scale 0.1).
    """
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    sandbox.kubelet.programs.script(
        ScriptedProgram(duration=3600, ignores_sigterm=True), namespace=ns, pod=f"{name}-mpiworker-1"
    )
    job = volcano_job(name, workers=2)
    job["spec"]["minAvailable"] = min_available
    job["spec"]["tasks"][1]["template"]["spec"]["terminationGracePeriodSeconds"] = grace
    sandbox.api.create("vcjobs", job, ns)
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", name, ns) == "Running", 30, what="Running")
    return sandbox.api.get("pods", f"{name}-mpiworker-1", ns)["metadata"]["uid"]


def test_a_job_restarted_while_pending_writes_restarting_then_pending_with_a_new_transition_time(
    sandbox, sandbox_namespace
):
    ns = sandbox_namespace
    # 12 cores on an 8-core node: never enqueued, so the Job stays Pending with no pod (nothing left to terminate)
    sandbox.api.create("vcjobs", volcano_job("held", workers=3, cpu="4"), ns)
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "held", ns) == "Pending", 30, what="Pending")
    first = _status(sandbox, "held", ns)["state"]["lastTransitionTime"]
    wait_for(lambda: now_rfc3339() > first, 5, interval=0.1, what="a later second")  # the times are to the second
    _restart(sandbox, "held", ns)
    wait_for(lambda: _status(sandbox, "held", ns).get("retryCount") == 1, 30, what="the restart")
    status = wait_for(
        lambda: (s := _status(sandbox, "held", ns))["state"]["phase"] == "Pending" and s, 30, what="Pending again"
    )
    # pending.go RestartJob -> killJob writes Restarting (a new LastTransitionTime and condition), and only a later
    # sync (restarting.go) moves the Job to Pending: the new attempt's wait starts at the restart, not at creation
    assert [c["status"] for c in status["conditions"]] == ["Restarting", "Pending"]
    assert status["state"]["lastTransitionTime"] > first
    sandbox.api.delete("vcjobs", "held", ns)


def test_restarting_goes_pending_while_a_killed_pod_still_terminates(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    lingering = _lingering_worker_job(sandbox, ns, "regang", min_available=2)
    _restart(sandbox, "regang", ns)
    # restarting.go: Pending once total - terminating >= minAvailable (3 - 1 >= 2), not once every pod is gone
    wait_for(
        lambda: (
            _status(sandbox, "regang", ns).get("retryCount") == 1
            and phase_of(sandbox.api, "vcjobs", "regang", ns) in ("Pending", "Running")
        ),
        30,
        what="the job past Restarting",
    )
    worker = sandbox.api.get("pods", "regang-mpiworker-1", ns)
    assert worker["metadata"]["uid"] == lingering and worker["metadata"].get("deletionTimestamp")
    # the kubelet's grace period runs out (SIGKILL): the old worker goes, and the new attempt gets all its pods
    wait_for(
        lambda: (
            (sandbox.api.get_or_none("pods", "regang-mpiworker-1", ns) or {"metadata": {}})["metadata"].get("uid")
            not in (None, lingering)
        ),
        30,
        what="worker 1 of the new attempt",
    )
    sandbox.kubelet.programs.clear()


def test_the_new_attempts_pods_are_created_while_the_job_is_still_restarting(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    # worker 1 lingers until the test ends it (300 s of grace): the new master must appear while it does, and on a
    # loaded machine (the upstream-CRD pass beside the main one) 3 s, then 12 s, were not always enough
    _lingering_worker_job(sandbox, ns, "early", min_available=3, grace=3000)
    version = int(_status(sandbox, "early", ns).get("version", 0))
    _restart(sandbox, "early", ns)

    def new_master_and_phase():
        master = sandbox.api.get_or_none("pods", "early-mpimaster-0", ns) or {"metadata": {"annotations": {}}}
        if int(master["metadata"]["annotations"].get("volcano.sh/job-version", -1)) > version:
            return phase_of(sandbox.api, "vcjobs", "early", ns)
        return None

    # syncJob runs in Restarting too: the master's name is free (it ended on SIGTERM) while worker 1 still
    # terminates, so 3 - 1 < minAvailable keeps the job Restarting while its new pods already exist
    assert wait_for(new_master_and_phase, 30, interval=0.05, what="the new master") == "Restarting"
    # its process dies within the grace period (as a SIGKILL would end it): the kubelet confirms the deletion
    sandbox.kubelet.fail_container(ns, "early-mpiworker-1", "mpiworker", exit_code=137)
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "early", ns) == "Running", 30, what="Running again")
    sandbox.kubelet.programs.clear()


def test_depends_on_waits_for_ready_pods_counted_against_min_available(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    # worker 1 never gets past its init container; worker 0 turns Ready after its probe's delay
    sandbox.kubelet.programs.script(
        ScriptedProgram(duration=3600), namespace=ns, pod="after-mpiworker-1", container="setup"
    )
    job = volcano_job("after", workers=2)
    master, worker = job["spec"]["tasks"]
    master["dependsOn"] = {"name": ["mpiworker"]}
    worker["minAvailable"] = 1
    worker["template"]["spec"]["initContainers"] = [{"name": "setup", "image": "example/setup:1"}]
    worker["template"]["spec"]["containers"][0]["readinessProbe"] = {
        "tcpSocket": {"port": 22},
        "initialDelaySeconds": 20,  # 2 s at time_scale 0.1
    }
    job["spec"]["minAvailable"] = 2
    listed = sandbox.api.list("pods", ns)
    sandbox.api.create("vcjobs", job, ns)
    # watch the pods from before the job: events come in the API server's order, so the state of worker 0 when
    # the master's ADDED arrives is what the controller could have seen when it created the master
    worker0: dict = {}
    for event in sandbox.api.watch("pods", listed["metadata"]["resourceVersion"], timeout_seconds=30):
        pod = event["object"]
        if event["type"] == "BOOKMARK" or pod["metadata"].get("namespace") != ns:
            continue
        if pod["metadata"]["name"] == "after-mpiworker-0":
            worker0 = pod
        if pod["metadata"]["name"] == "after-mpimaster-0" and event["type"] == "ADDED":
            break
    else:
        raise AssertionError("the master was never created")
    # isDependsOnPodsReady: one Ready worker meets the dependency's minAvailable of 1, with worker 1 still Pending
    statuses = (worker0.get("status") or {}).get("containerStatuses") or []
    assert worker0["status"]["phase"] == "Running" and statuses and all(c["ready"] for c in statuses)
    assert phase_of(sandbox.api, "pods", "after-mpiworker-1", ns) == "Pending"
    sandbox.kubelet.programs.clear()


def _pod(name: str, script: str, grace: int) -> dict:
    container = {"name": "main", "image": "volcanosh/example-mpi:0.0.3", "command": ["/bin/sh", "-c", script]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": grace},
    }


def test_a_kill_waits_the_grace_period_unless_pid_1_ends_on_sigterm(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    # the upstream example's worker script: sh stays PID 1, and PID 1 ignores SIGTERM; sshd exec'ed ends on it
    sandbox.api.create("pods", _pod("shell", "mkdir -p /var/run/sshd\n/usr/sbin/sshd -D", grace=20), ns)
    sandbox.api.create("pods", _pod("execd", "mkdir -p /var/run/sshd\nexec /usr/sbin/sshd -D", grace=3000), ns)
    for name in ("shell", "execd"):
        wait_for(lambda n=name: phase_of(sandbox.api, "pods", n, ns) == "Running", 30, what=f"{name} Running")
        sandbox.api.delete("pods", name, ns)
    # execd's grace period (3000 s, 300 s at time_scale 0.1) is far beyond this wait: SIGTERM ended it
    wait_for(lambda: sandbox.api.get_or_none("pods", "execd", ns) is None, 30, what="execd gone")
    shell = sandbox.api.get("pods", "shell", ns)  # still there: its grace period (2 s here) is not over
    assert shell["metadata"]["deletionTimestamp"] and shell["metadata"]["deletionGracePeriodSeconds"] == 20
    assert shell["status"]["containerStatuses"][0]["state"].get("running")
    # killContainer: SIGKILL once the whole grace period has passed, then the pod goes
    wait_for(lambda: sandbox.api.get_or_none("pods", "shell", ns) is None, 30, what="shell gone")
