"""The emulated kubelet restarting a container in its pod, and the logs ``pods/log`` serves meanwhile, as upstream.

``kuberuntime_manager.go: doBackOff`` (first restart at once, then CrashLoopBackOff), ``kubelet_pods.go:
convertToAPIContainerStatuses`` (waiting, ``lastState``) and ``validateContainerLogStatus`` with ``server.go:
getContainerLogs`` (which instance a read serves; 400 for a container not started yet).
"""

from __future__ import annotations

import threading

import pytest

from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext, Program
from tests.integration.helpers import phase_of, wait_for

pytestmark = pytest.mark.integration


class NumberedRuns(Program):
    """Print two lines naming the run (``restartCount``), then exit with ``exit_codes[run]``."""

    def __init__(self, exit_codes: list[int], seconds: float = 0.2):
        self.exit_codes, self.seconds = exit_codes, seconds

    def run(self, ctx: ContainerContext) -> int:
        for i in range(2):
            ctx.write(f"run {ctx.restart_count} line {i}")
        if not ctx.sleep(self.seconds):
            return 137
        return self.exit_codes[min(ctx.restart_count, len(self.exit_codes) - 1)]


def _pod(name: str, restart: str, init: bool = False) -> dict:
    spec: dict = {"containers": [{"name": "main", "image": "example/app:1"}], "restartPolicy": restart}
    if init:
        spec["initContainers"] = [{"name": "setup", "image": "example/setup:1"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _log(api, ns: str, pod: str, previous: bool = False) -> str:
    query = {"container": "main", "previous": previous}
    return api.request("GET", f"/api/v1/namespaces/{ns}/pods/{pod}/log", query=query, stream=True).data.decode()


def _status(api, ns: str, pod: str) -> dict:
    return ((api.get("pods", pod, ns).get("status") or {}).get("containerStatuses") or [{}])[0]


def _init_state(api, ns: str, pod: str) -> dict:
    statuses = ((api.get_or_none("pods", pod, ns) or {}).get("status") or {}).get("initContainerStatuses") or [{}]
    return statuses[0].get("state") or {}


def _describe(api, ns: str, pod: str) -> str:  # what a timeout reports: where the pod is, and its nodes' load
    found = api.get_or_none("pods", pod, ns) or {}
    node = (found.get("spec") or {}).get("nodeName")
    running = [
        f"{p['metadata']['namespace']}/{p['metadata']['name']}@{p['spec'].get('nodeName')}"
        for p in api.list("pods")["items"]
        if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    return f"pod: node {node!r}, status {found.get('status')!r}\nunfinished pods: {running}"


def test_a_restarted_container_restarts_at_once_then_crash_loops_and_logs_follow_its_status(sandbox, sandbox_namespace):
    """``OnFailure`` with exits 1, 1, 1, 0: the first restart without back-off, then CrashLoopBackOff (waiting, the
    exited instance as ``lastState``, its ``restartCount``); while it waits, both reads serve the exited instance;
    once done, a plain read serves the last instance and ``previous`` the one before.
    """
    ns, api = sandbox_namespace, sandbox.api
    sandbox.kubelet.programs.script(NumberedRuns([1, 1, 1, 0]), namespace=ns, pod="crashing")
    seen: list[dict] = []
    checks: list[tuple[int, str, str]] = []
    stop = threading.Event()

    def watch() -> None:  # every status the kubelet writes, in order; reads while a back-off is seen
        rv = api.list("pods", ns)["metadata"]["resourceVersion"]
        for event in api.watch("pods", rv, timeout_seconds=60):
            pod = event.get("object") or {}
            if stop.is_set() or (pod.get("metadata") or {}).get("name") != "crashing":
                if stop.is_set():
                    return
                continue
            status = ((pod.get("status") or {}).get("containerStatuses") or [{}])[0]
            seen.append(status)
            reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
            if reason == "CrashLoopBackOff":
                current, previous = _log(api, ns, "crashing"), _log(api, ns, "crashing", previous=True)
                if _status(api, ns, "crashing").get("state") == status["state"]:  # still the same back-off
                    checks.append((status["restartCount"], current, previous))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        api.create("pods", _pod("crashing", "OnFailure"), ns)
        wait_for(lambda: phase_of(api, "pods", "crashing", ns) == "Succeeded", 60, what="pod Succeeded")
    finally:
        stop.set()
        sandbox.kubelet.programs.clear()
    states = [(s.get("restartCount"), next(iter(s.get("state") or {"": 0}))) for s in seen]
    waits = [s for s in seen if ((s.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"]
    assert (0, "waiting") not in states[states.index((0, "running")) :], states  # the first restart: no back-off
    assert {s["restartCount"] for s in waits} == {1, 2}, states
    for status in waits:
        assert status["lastState"]["terminated"]["exitCode"] == 1
        assert status["lastState"]["terminated"]["containerID"] == status["containerID"]  # the exited instance
    assert checks, "no read while a back-off lasted"
    for restart, current, previous in checks:
        lines = f"run {restart} line 0\nrun {restart} line 1\n"
        assert (current, previous) == (lines, lines)
    final = _status(api, ns, "crashing")
    assert (final["restartCount"], final["state"]["terminated"]["exitCode"]) == (3, 0)
    assert _log(api, ns, "crashing") == "run 3 line 0\nrun 3 line 1\n"
    assert _log(api, ns, "crashing", previous=True) == "run 2 line 0\nrun 2 line 1\n"


def test_logs_of_a_container_not_started_are_400_and_never_an_earlier_pod_of_that_name(sandbox, sandbox_namespace):
    """A pod re-created under the same name (as ``RestartJob`` does) whose container has not started: 400 "waiting
    to start", not 404 and not the earlier pod's log.
    """
    ns, api = sandbox_namespace, sandbox.api
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["earlier pod"]), namespace=ns, container="main")
    sandbox.kubelet.programs.script(ScriptedProgram(duration=600), namespace=ns, container="setup")
    try:
        api.create("pods", _pod("same-name", "Never"), ns)
        wait_for(lambda: phase_of(api, "pods", "same-name", ns) == "Succeeded", 30, what="first pod Succeeded")
        assert _log(api, ns, "same-name") == "earlier pod\n"
        api.delete("pods", "same-name", ns)
        wait_for(lambda: api.get_or_none("pods", "same-name", ns) is None, 30, what="first pod gone")
        api.create("pods", _pod("same-name", "Never", init=True), ns)  # its init container runs on
        wait_for(
            lambda: "running" in _init_state(api, ns, "same-name"),
            60,
            what="the new pod's init container",
            describe=lambda: _describe(api, ns, "same-name"),
        )
        with pytest.raises(ApiException) as refused:
            _log(api, ns, "same-name")
        assert refused.value.status == 400 and "is waiting to start" in str(refused.value.body), refused.value.body
    finally:
        sandbox.kubelet.programs.clear()


def test_a_late_confirmation_of_a_deleted_pod_never_deletes_a_new_pod_of_that_name(sandbox, sandbox_namespace):
    """The kubelet's zero-grace delete carries the old pod's UID (``status_manager.go: syncPod``): a pass that sees
    the old pod again from a stale cache gets 409 and leaves the pod re-created under the name alone.
    """
    ns, api = sandbox_namespace, sandbox.api
    sandbox.kubelet.programs.script(ScriptedProgram(duration=600), namespace=ns, container="main")
    try:
        old = api.create("pods", _pod("renamed", "Never"), ns)
        api.delete("pods", "renamed", ns, grace_period_seconds=0)
        wait_for(lambda: api.get_or_none("pods", "renamed", ns) is None, 30, what="the old pod gone")
        new = api.create("pods", _pod("renamed", "Never"), ns)
        sandbox.kubelet._terminate(old, None)  # what a pass holding the old pod with its deletionTimestamp runs
        assert api.get("pods", "renamed", ns)["metadata"]["uid"] == new["metadata"]["uid"]
    finally:
        sandbox.kubelet.programs.clear()
