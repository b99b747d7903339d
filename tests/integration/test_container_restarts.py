"""The followed log across container restarts and a pod re-created under its name, as a real kubelet serves them.

Rows i and j of issue 16: a followed container restarted in its pod (``OnFailure``, as upstream's examples and the
seed's master use) is read with ``previous=true`` once it ended, nothing is read while it waits in
CrashLoopBackOff, and no instance's lines land under another's header; a pod re-created under the same name
(``RestartJob``) never feeds the cursor of the earlier pod's instance.
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_volcano_argo.engine.pod_log_forwarder import PodLogForwarder
from airflow_provider_volcano_argo.hooks.connection import KubernetesConnection
from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook
from airflow_provider_volcano_argo.models.log_cursor import CursorBook
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from airflow_provider_volcano_argo.triggers.phase import ObjectPhaseTrigger
from tests.integration.helpers import capture_task_log, phase_of, volcano_job, wait_for
from tests.sandbox.integration.test_kubelet_restarts import NumberedRuns

pytestmark = pytest.mark.integration

CONNECTION = {"kubernetes_conn_id": "kubernetes_default"}


@pytest.fixture
def ns(sandbox, sandbox_namespace, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())
    yield sandbox_namespace
    sandbox.kubelet.programs.clear()


@pytest.fixture
def log_reads(monkeypatch) -> list[tuple[str, bool, bool]]:
    """Every ``pods/log`` read the provider makes: (pod, follow, previous); a spy, the API server answers each."""
    reads: list[tuple[str, bool, bool]] = []
    real_stream_log = AsyncVolcanoArgoHook.stream_log

    def recording_stream_log(self, pod, container, namespace, since_time, follow, previous=False):
        reads.append((pod, follow, previous))
        return real_stream_log(self, pod, container, namespace, since_time, follow, previous)

    monkeypatch.setattr(AsyncVolcanoArgoHook, "stream_log", recording_stream_log)
    return reads


def _runs_shown(sandbox, ns: str, job: str, exit_codes: list[int], seconds: float) -> list[str]:
    """Run a Job whose master exits ``exit_codes`` in turn (``OnFailure``); return the headers and run lines shown."""
    sandbox.kubelet.programs.script(NumberedRuns(exit_codes, seconds=seconds), namespace=ns, container="mpimaster")
    sandbox.api.create("vcjobs", volcano_job(job, workers=1), ns)  # the master restarts OnFailure
    trigger = ObjectPhaseTrigger(
        "volcano_job", job, ns, ["Completed"], ["Failed", "Aborted"], connection=CONNECTION, log_task="mpimaster"
    )
    shown: list[str] = []
    capture_task_log(trigger, shown.append)
    event = asyncio.run(trigger.run().__anext__())
    assert event.payload["status"] == "success", event.payload
    return [line for line in shown if line.startswith(("-----", "run "))]


def _each_run_once(job: str, runs: int) -> list[str]:
    expected = []
    for run in range(runs):
        expected.append(f"----- log of {job}-mpimaster-0 (job attempt 1, container restart {run}) -----")
        expected += [f"run {run} line 0", f"run {run} line 1"]
    return expected


def test_a_master_restarted_in_its_pod_shows_each_run_once_under_its_own_header(sandbox, ns, log_reads):
    """Exits 1, 1, 0 under ``OnFailure``: the first restart at once, the second after a CrashLoopBackOff. Each run's
    lines once, in order, under its header; a bounded number of reads (no loop while it waits to restart).
    """
    assert _runs_shown(sandbox, ns, "crashes", [1, 1, 0], seconds=0.5) == _each_run_once("crashes", 3)
    assert any(previous for _, _, previous in log_reads)  # the ended runs were read where the kubelet keeps them
    assert len(log_reads) <= 9, log_reads  # a follow and a last read per run, at most one more each


def test_a_restart_the_pod_watch_shows_late_keeps_the_next_runs_lines_from_the_ended_runs_header(
    sandbox, ns, monkeypatch
):
    """The kubelet serves a read by name from its own status (``GetKubeletContainerLogs``), which runs ahead of the
    one a lagging pod watch delivers: the watch shows the first run ended as the current instance while the kubelet
    serves the restarted one already. The ended run is read once the watch shows the restart, through ``previous``.
    Seen in CI under load: the second run's lines under the first run's header too, read by name 1 s after the exit.
    """
    restarts: dict[str, int] = {}
    on_pod = PodLogForwarder._on_pod

    async def lagging_on_pod(self, kind: str, obj: dict) -> None:
        for pod in obj["items"] if kind == "SYNCED" else [obj]:
            count = max((s.get("restartCount", 0) for s in pod["status"].get("containerStatuses") or []), default=0)
            if count > restarts.setdefault(pod["metadata"]["uid"], 0):
                restarts[pod["metadata"]["uid"]] = count
                await asyncio.sleep(2)  # the update showing the restart, and all after it, arrive late
        await on_pod(self, kind, obj)

    monkeypatch.setattr(PodLogForwarder, "_on_pod", lagging_on_pod)
    # each run lasts longer than the lag: the Job's end (and the list that catches up) comes after the restart shows
    assert _runs_shown(sandbox, ns, "late", [1, 0], seconds=3) == _each_run_once("late", 2)


def test_a_pod_recreated_under_the_same_name_never_feeds_the_earlier_pods_cursor(sandbox, ns):
    """The pod watch still holds the earlier pod (a late final read, as after a busy or lagging watch) while its
    name already belongs to a new pod whose container waits for an init container (``pods/log`` answers 400), then
    runs. The earlier instance's stream stops once the watch drops its uid; the new pod's lines never reach it.
    """
    api = sandbox.api
    labels = {"volcano.sh/job-name": "j"}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j-mpimaster-0", "labels": labels}}
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["earlier 0", "earlier 1"]), namespace=ns)
    earlier = {**pod, "spec": {"containers": [{"name": "mpimaster", "image": "a:1"}], "restartPolicy": "Never"}}
    api.create("pods", earlier, ns)
    wait_for(lambda: phase_of(api, "pods", "j-mpimaster-0", ns) == "Succeeded", 30, what="earlier pod Succeeded")
    seen_earlier = api.get("pods", "j-mpimaster-0", ns)
    api.delete("pods", "j-mpimaster-0", ns)
    wait_for(lambda: api.get_or_none("pods", "j-mpimaster-0", ns) is None, 30, what="earlier pod gone")
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["new 0", "new 1"]), namespace=ns, container="mpimaster")
    sandbox.kubelet.programs.script(ScriptedProgram(duration=4), namespace=ns, container="setup")
    init = [{"name": "setup", "image": "a:1"}]
    api.create("pods", {**earlier, "spec": {**earlier["spec"], "initContainers": init}}, ns)
    emitted: list[str] = []

    async def scenario() -> None:
        hook = KubernetesConnection.from_dict(CONNECTION).async_hook()
        forwarder = PodLogForwarder(hook, ns, "", "mpimaster", lambda: {"j"}, CursorBook(), emitted.append)
        await forwarder._on_pod("SYNCED", {"items": [seen_earlier]})  # the watch, late: the earlier pod ended
        await asyncio.sleep(0.5)  # its last read by name meets the new pod: 400 while its init container runs
        await forwarder._on_pod("DELETED", seen_earlier)
        await forwarder._on_pod("ADDED", api.get("pods", "j-mpimaster-0", ns))
        await asyncio.to_thread(
            wait_for, lambda: phase_of(api, "pods", "j-mpimaster-0", ns) == "Succeeded", 30, what="new pod Succeeded"
        )
        await forwarder._on_pod("MODIFIED", api.get("pods", "j-mpimaster-0", ns))
        await forwarder.drain()

    asyncio.run(scenario())
    new_header = [i for i, line in enumerate(emitted) if "----- log of" in line][-1]
    assert not [line for line in emitted[:new_header] if line.startswith("new ")], emitted  # not under the earlier
    assert emitted[new_header:] == [emitted[new_header], "new 0", "new 1"], emitted
