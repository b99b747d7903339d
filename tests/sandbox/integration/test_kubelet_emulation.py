"""The emulated kubelet's pod lifecycle on the sandbox: readiness after the probe's delay, restarts, deadlines."""

from __future__ import annotations

import time

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import phase_of, wait_for

pytestmark = pytest.mark.integration


def _pod(name: str, container: dict, **spec) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "example/app:1", **container}], **spec},
    }


def _ready(api, name: str, ns: str) -> bool:
    conditions = ((api.get_or_none("pods", name, ns) or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def test_readiness_probe_delay_then_ready_and_pod_ends_with_its_container(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["up"], duration=6.0), namespace=ns, pod="probed")
    delay = 20 * sandbox.kubelet.time_scale  # the sandbox scales probe delays
    probe = {"tcpSocket": {"port": 22}, "initialDelaySeconds": 20}
    sandbox.api.create("pods", _pod("probed", {"readinessProbe": probe}, restartPolicy="Never"), ns)
    wait_for(lambda: phase_of(sandbox.api, "pods", "probed", ns) == "Running", 30, what="pod Running")
    running_at = time.monotonic()
    assert not _ready(sandbox.api, "probed", ns)
    wait_for(lambda: _ready(sandbox.api, "probed", ns), 10, interval=0.05, what="pod Ready")
    assert time.monotonic() - running_at >= 0.75 * delay  # not before initialDelaySeconds
    wait_for(lambda: phase_of(sandbox.api, "pods", "probed", ns) == "Succeeded", 30, what="pod Succeeded")
    status = sandbox.api.get("pods", "probed", ns)["status"]
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert not _ready(sandbox.api, "probed", ns)


def test_active_deadline_fails_the_pod_and_stops_its_containers(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["start"], duration=600.0), namespace=ns, pod="bounded")
    sandbox.api.create("pods", _pod("bounded", {}, restartPolicy="Never", activeDeadlineSeconds=2), ns)
    wait_for(lambda: phase_of(sandbox.api, "pods", "bounded", ns) == "Failed", 30, what="pod Failed")
    status = sandbox.api.get("pods", "bounded", ns)["status"]
    assert status["reason"] == "DeadlineExceeded"
    assert "terminated" in status["containerStatuses"][0]["state"]


def test_restart_policy_always_restarts_a_container_that_exits(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["once"], exit_code=1), namespace=ns, pod="looping")
    sandbox.api.create("pods", _pod("looping", {}, restartPolicy="Always"), ns)

    def restarted() -> bool:
        statuses = ((sandbox.api.get_or_none("pods", "looping", ns) or {}).get("status") or {}).get(
            "containerStatuses"
        ) or [{}]
        return statuses[0].get("restartCount", 0) >= 1

    wait_for(restarted, 60, what="a restart")  # after the kubelet's (scaled) crash-loop back-off
    assert phase_of(sandbox.api, "pods", "looping", ns) == "Running"
    sandbox.api.delete("pods", "looping", ns)
    wait_for(lambda: sandbox.api.get_or_none("pods", "looping", ns) is None, 30, what="pod gone")
