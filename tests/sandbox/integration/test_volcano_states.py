"""Volcano's job state machine on the sandbox, as ``pkg/controllers/job/state/*.go`` and the kubelet drive it.

One retry per restart, however many pods one drain evicts; Restarting -> Pending once enough pods are no longer
terminating, with the new attempt's pods created while still Restarting; ``dependsOn`` on Ready pods counted against
the dependency's ``minAvailable``; the kubelet's grace period on kill; a kubelet (node-pressure) eviction.
"""

from __future__ import annotations

import pytest

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
