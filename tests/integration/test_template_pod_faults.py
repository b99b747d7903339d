"""The shipped WorkflowTemplates against the pod faults a real cluster has: a kubelet eviction under node pressure."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import phase_of, submit_from_template, wait_for

pytestmark = pytest.mark.integration


def _status(sandbox, name: str, ns: str) -> dict:
    return (sandbox.api.get_or_none("vcjobs", name, ns) or {}).get("status") or {}


def test_a_worker_evicted_by_the_kubelet_fails_and_the_shipped_template_restarts_the_gang(sandbox, mpi_namespace):
    ns = mpi_namespace
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    submit_from_template(sandbox.api, ns, "volcano-mpi", {"job-name": "pressed"})
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "pressed", ns) == "Running", 60, what="Running")
    evicted = sandbox.api.get("pods", "pressed-mpiworker-1", ns)["metadata"]["uid"]
    sandbox.kubelet.evict_for_pressure(ns, "pressed-mpiworker-1")
    # eviction_manager.go evictPod: phase Failed, reason Evicted, nothing deleted; Volcano sees PodFailed
    # (PodEvicted comes only from a deletion), which the template's job-level PodFailed -> RestartJob restarts
    wait_for(
        lambda: (
            _status(sandbox, "pressed", ns).get("retryCount") == 1
            and phase_of(sandbox.api, "vcjobs", "pressed", ns) == "Running"
        ),
        60,
        what="the gang restarted",
    )
    worker = sandbox.api.get("pods", "pressed-mpiworker-1", ns)
    assert worker["metadata"]["uid"] != evicted and worker["status"]["phase"] == "Running"
    events = sandbox.api.request(
        "GET", f"/api/v1/namespaces/{ns}/events", query={"fieldSelector": "involvedObject.name=pressed"}
    )["items"]
    assert any(e["reason"] == "ExecuteAction" and "RestartJob" in e["message"] for e in events)
    sandbox.kubelet.programs.clear()
