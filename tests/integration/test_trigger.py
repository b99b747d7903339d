"""The trigger in a real event loop, as the triggerer runs it: user kill, and restart from serialized kwargs."""

from __future__ import annotations

import asyncio
import importlib
import json
import signal
import subprocess
import sys

import pytest

from airflow_provider_volcano_argo.models.follow import FollowSpec
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from airflow_provider_volcano_argo.triggers.argo_workflow import ArgoWorkflowTrigger
from tests.conftest import keep_for_secret_scan
from tests.integration.helpers import (
    capture_task_log,
    install_mpi_templates,
    phase_of,
    stop_probe_mid_stream,
    submit_from_template,
    wait_for,
)
from tests.integration.reliability import leftovers

pytestmark = pytest.mark.integration


@pytest.fixture
def submitted(sandbox, sandbox_namespace, monkeypatch, request):
    """A running MPI Workflow from the shipped template, and the Airflow connection (least privilege); its
    master prints 40 lines at 10 per second unless the test asks for another pace (indirect parameter).
    """
    ns = install_mpi_templates(sandbox, sandbox_namespace)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())
    lines = [f"step {i}" for i in range(40)]
    sandbox.kubelet.programs.script(
        ScriptedProgram(lines=lines, **getattr(request, "param", {"rate": 10, "duration": 4})),
        namespace=ns,
        container="mpimaster",
    )
    wf = submit_from_template(sandbox.api, ns, "volcano-mpi", {"job-name": "traced"})
    yield ns, wf
    sandbox.kubelet.programs.clear()


def _trigger(ns: str, wf: dict) -> ArgoWorkflowTrigger:
    spec = FollowSpec(
        namespace=ns, workflow_name=wf["metadata"]["name"], workflow_uid=wf["metadata"]["uid"], job_name="traced"
    )
    return ArgoWorkflowTrigger(spec=spec.to_dict(), connection={"kubernetes_conn_id": "kubernetes_default"})


def _logging_triggers(ns: str, workflows: dict[str, dict], shown: dict[str, list[str]]) -> list:
    """A trigger per job name, each writing its task log into ``shown[job]``."""
    triggers = []
    for job, workflow in workflows.items():
        spec = FollowSpec(namespace=ns, workflow_name=workflow["metadata"]["name"], job_name=job)
        trigger = ArgoWorkflowTrigger(spec=spec.to_dict(), connection={"kubernetes_conn_id": "kubernetes_default"})
        capture_task_log(trigger, shown[job].append)
        triggers.append(trigger)
    return triggers


async def _marked_failed() -> str:
    """The task instance's state as the triggerer reads it from Airflow after a user marked the task failed."""
    return "failed"


def _rebuild(trigger: ArgoWorkflowTrigger) -> ArgoWorkflowTrigger:
    classpath, kwargs = trigger.serialize()
    module, name = classpath.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)(**kwargs)


@pytest.mark.reliability
@pytest.mark.parametrize("submitted", [{"rate": 10, "duration": 600}], indirect=True)  # still running when killed
def test_user_kill_while_deferred_stops_and_deletes_everything(sandbox, submitted, reliability):
    ns, wf = submitted
    seen: list[str] = []  # what happened to the Workflow, in order: "shutdown Terminate", "deleted"
    sandbox.cluster.informer("workflows").subscribe(
        lambda kind, obj, old: (
            obj["metadata"]["namespace"] == ns
            and (
                seen.append("deleted")
                if kind == "DELETED"
                else (obj.get("spec") or {}).get("shutdown") and seen.append(f"shutdown {obj['spec']['shutdown']}")
            )
        )
    )

    async def scenario():
        trigger = _trigger(ns, wf)
        task = asyncio.create_task(trigger.run().__anext__())
        await asyncio.to_thread(wait_for, lambda: phase_of(sandbox.api, "vcjobs", "traced", ns) == "Running", 60)
        task.cancel()  # the triggerer cancels the trigger, then calls on_kill for a user kill
        with pytest.raises(asyncio.CancelledError):
            await task
        assert phase_of(sandbox.api, "vcjobs", "traced", ns) == "Running"  # the kill, not the job's end, stops it
        trigger._task_state = _marked_failed
        await trigger.on_kill()

    asyncio.run(scenario())
    left, seconds = leftovers(sandbox, ns)
    reliability("R4 on_kill while deferred", objects_left=left, cleanup_seconds=seconds)
    assert seen and seen[0] == "shutdown Terminate" and seen[-1] == "deleted", seen  # stopped, then deleted
    assert left == 0


@pytest.mark.parametrize(
    ("submitted", "on_kill_action", "expected"),
    [
        ({"rate": 10, "duration": 600}, "stop_workflow", ["shutdown Terminate"]),
        ({"rate": 10, "duration": 600}, "keep_workflow", []),
    ],
    indirect=["submitted"],
)
def test_user_kill_while_deferred_follows_on_kill_action(sandbox, submitted, on_kill_action, expected):
    ns, wf = submitted
    seen: list[str] = []
    sandbox.cluster.informer("workflows").subscribe(
        lambda kind, obj, old: (
            obj["metadata"]["namespace"] == ns
            and (kind == "DELETED" or (obj.get("spec") or {}).get("shutdown"))
            and seen.append("deleted" if kind == "DELETED" else f"shutdown {obj['spec']['shutdown']}")
        )
    )
    trigger = ArgoWorkflowTrigger(**{**_trigger(ns, wf).serialize()[1], "on_kill_action": on_kill_action})

    async def scenario():
        task = asyncio.create_task(trigger.run().__anext__())
        await asyncio.to_thread(wait_for, lambda: phase_of(sandbox.api, "vcjobs", "traced", ns) == "Running", 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        trigger._task_state = _marked_failed
        await trigger.on_kill()

    asyncio.run(scenario())
    kept = sandbox.api.get("workflows", wf["metadata"]["name"], ns)  # neither policy deletes, nor asks to
    assert list(dict.fromkeys(seen)) == expected, seen
    assert kept["spec"].get("shutdown") == ("Terminate" if expected else None)
    assert "deletionTimestamp" not in kept["metadata"]
    if not expected:  # keep_workflow: the run goes on untouched
        assert phase_of(sandbox.api, "workflows", wf["metadata"]["name"], ns) == "Running"
    else:  # stop_workflow: the gang too (a TerminateJob Command), kept for inspection
        wait_for(lambda: phase_of(sandbox.api, "vcjobs", "traced", ns) == "Terminated", 60, what="gang terminated")
        assert phase_of(sandbox.api, "vcjobs", "traced", ns) == "Terminated"
    sandbox.api.delete("workflows", wf["metadata"]["name"], ns)
    assert leftovers(sandbox, ns)[0] == 0


@pytest.mark.reliability
def test_triggerer_restart_resumes_without_repeating_or_losing_lines(sandbox, submitted, reliability):
    ns, wf = submitted
    shown: list[str] = []

    async def scenario():
        first = _trigger(ns, wf)
        capture_task_log(first, shown.append)  # the task log
        task = asyncio.create_task(first.run().__anext__())
        await asyncio.to_thread(wait_for, lambda: sum(line.startswith("step ") for line in shown) >= 10, 60)
        task.cancel()  # triggerer restart: no on_kill, the work goes on
        with pytest.raises(asyncio.CancelledError):
            await task
        second = _rebuild(first)
        capture_task_log(second, shown.append)
        return await second.run().__anext__()

    event = asyncio.run(scenario())
    _record(reliability, "R1 triggerer restart mid-stream", sandbox, ns, wf, shown)
    assert event.payload["status"] == "success", event.payload
    steps = [line for line in shown if line.startswith("step ")]
    assert steps == [f"step {i}" for i in range(40)]  # every line, once, in order


#: The probes store their cursors every second (the shipped ``CURSOR_SAVE_SECONDS`` would need minutes of log to
#: show more than one store); what a hard kill repeats depends only on where the last store was.
PROBE_SAVE_EVERY = "1"


@pytest.mark.reliability
@pytest.mark.parametrize("submitted", [{"rate": 4, "duration": 12}], indirect=True)
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_triggerer_stopped_mid_stream_loses_nothing_and_repeats_only_what_it_showed_after_its_last_store(
    sandbox, submitted, reliability, how
):
    """A trigger killed with SIGKILL stores nothing on its way out: the next one resumes from the cursors stored
    last on the Workflow, so it repeats exactly the lines shown after that store, and loses none. One stopped with
    SIGTERM (cancelled, as a triggerer stopping cleanly cancels it) stores on its way out: nothing repeated.
    """
    ns, wf = submitted
    command = [sys.executable, "-m", "tests.integration.trigger_probe", ns, wf["metadata"]["name"], "traced"]
    command += ["--stream", "--save-every", PROBE_SAVE_EVERY]
    stopped = stop_probe_mid_stream(command, "step ", after=24, how=how)  # 6 s of a 10 s log
    second = subprocess.run(command, capture_output=True, text=True, timeout=300)
    keep_for_secret_scan("\n".join(stopped.lines), second.stdout, second.stderr)
    assert second.returncode == 0, second.stderr[-3000:]
    resumed = [line[5:] for line in second.stdout.splitlines() if line.startswith("LINE step ")]
    first, stored = stopped.shown("step "), stopped.stored_lines("step ")
    expected = [f"step {i}" for i in range(40)]
    name = "triggerer killed hard (SIGKILL)" if how == signal.SIGKILL else "triggerer stopped (SIGTERM)"
    _record(reliability, f"R1 {name} mid-stream, cursors stored every {PROBE_SAVE_EVERY} s", sandbox, ns, wf,
            first + resumed)  # fmt: skip
    assert json.loads(second.stdout.splitlines()[-1])["status"] == "success"
    assert first == expected[: len(first)]
    assert resumed == expected[len(stored) :]  # from the stored cursor on: nothing lost, in order
    if how == signal.SIGKILL:
        assert stored  # stores came while it streamed: what it repeats is bounded by their interval
    else:
        assert stored == first  # the last store, on its way out, held every line shown: nothing repeated


def _record(reliability, scenario: str, sandbox, ns: str, wf: dict, shown: list[str]) -> None:
    """Count the 40 lines, then delete the Workflow as the operator would and time the garbage collection."""
    keep_for_secret_scan("\n".join(shown))
    steps = [line for line in shown if line.startswith("step ")]
    expected = {f"step {i}" for i in range(40)}
    sandbox.api.delete("workflows", wf["metadata"]["name"], ns)
    left, seconds = leftovers(sandbox, ns)
    reliability(
        scenario,
        expected=len(expected),
        delivered=len(expected & set(steps)),
        repeated=len(steps) - len(set(steps)),
        objects_left=left,
        cleanup_seconds=seconds,
    )
    assert left == 0


@pytest.mark.reliability
def test_api_server_restart_mid_run_loses_and_repeats_nothing(sandbox, submitted, reliability):
    """Watches and the log stream reconnect (resourceVersion, 410 relist, sinceTime cursor)."""
    import threading

    ns, wf = submitted
    shown: list[str] = []
    result: dict = {}
    trigger = _trigger(ns, wf)
    capture_task_log(trigger, shown.append)

    def follow() -> None:
        result["event"] = asyncio.run(trigger.run().__anext__())

    thread = threading.Thread(target=follow)
    thread.start()
    wait_for(lambda: sum(line.startswith("step ") for line in shown) >= 8, 60, what="streaming")
    # restarted from this (the main) thread: the control plane's processes live as long as the thread that
    # started them
    sandbox.control_plane.restart_apiserver(downtime=1.0)
    thread.join(120)
    assert not thread.is_alive()
    _record(reliability, "R2 API server restart mid-run", sandbox, ns, wf, shown)
    assert result["event"].payload["status"] == "success", result["event"].payload
    steps = [line for line in shown if line.startswith("step ")]
    assert steps == [f"step {i}" for i in range(40)]


@pytest.mark.parametrize("submitted", [{"rate": 2, "duration": 20}], indirect=True)
def test_followers_in_one_triggerer_share_watches_and_api_client(sandbox, submitted):
    """Two deferred runs in one event loop: one watch per resource and one API client between them, and each
    still gets exactly its own job's outcome and log.
    """
    from airflow_provider_volcano_argo.engine.informer import shared_watches
    from airflow_provider_volcano_argo.hooks._client_pool import SHARED_API_CLIENTS

    ns, wf = submitted
    second = submit_from_template(sandbox.api, ns, "volcano-mpi", {"job-name": "traced-2"})
    shown: dict[str, list[str]] = {"traced": [], "traced-2": []}
    seen: dict[str, object] = {}

    async def scenario():
        triggers = _logging_triggers(ns, {"traced": wf, "traced-2": second}, shown)
        tasks = [asyncio.create_task(t.run().__anext__()) for t in triggers]
        while not all(any(line.startswith("step ") for line in lines) for lines in shown.values()):
            await asyncio.sleep(0.1)
        watches = shared_watches()
        seen["watches"] = sorted(key[1].plural for key in watches)
        seen["subscribers"] = sorted(len(w.subscribers) for w in watches.values())
        seen["clients"] = SHARED_API_CLIENTS.open_clients()
        events = await asyncio.gather(*tasks)
        seen["after"] = (len(shared_watches()), SHARED_API_CLIENTS.open_clients())  # followers close what they open
        return events

    events = asyncio.run(scenario())
    assert seen["watches"] == ["jobs", "pods", "workflows"]
    assert seen["subscribers"] == [2, 2, 2]
    assert seen["clients"] == 1
    assert seen["after"] == (0, 0)
    for event, job in zip(events, ("traced", "traced-2"), strict=True):
        assert event.payload["status"] == "success", event.payload
        assert [j["name"] for j in event.payload["jobs"]] == [job]
        assert [line for line in shown[job] if line.startswith("step ")] == [f"step {i}" for i in range(40)]


def test_log_poll_interval_reads_without_holding_a_stream_and_loses_or_repeats_nothing(sandbox, submitted, monkeypatch):
    """``log_poll_interval``: no follow read, every line once, the tail read after the container ended."""
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook

    ns, wf = submitted
    follows: list[bool] = []
    real_stream_log = AsyncVolcanoArgoHook.stream_log

    def recording_stream_log(self, pod, container, namespace, since_time, follow, previous=False):
        follows.append(follow)  # a spy: the real API server answers every read
        return real_stream_log(self, pod, container, namespace, since_time, follow, previous)

    monkeypatch.setattr(AsyncVolcanoArgoHook, "stream_log", recording_stream_log)
    spec = FollowSpec(namespace=ns, workflow_name=wf["metadata"]["name"], job_name="traced", log_poll_interval=1.5)
    trigger = ArgoWorkflowTrigger(spec=spec.to_dict(), connection={"kubernetes_conn_id": "kubernetes_default"})
    shown: list[str] = []
    capture_task_log(trigger, shown.append)
    event = asyncio.run(trigger.run().__anext__())
    assert event.payload["status"] == "success", event.payload
    assert [line for line in shown if line.startswith("step ")] == [f"step {i}" for i in range(40)]
    assert len(follows) >= 2 and not any(follows)  # several reads over the job's 4 s, none of them a follow


def test_logs_beyond_max_followed_logs_are_read_every_interval_and_lose_or_repeat_nothing(
    sandbox, submitted, monkeypatch
):
    """Two deferred runs in one triggerer limited to one followed log: never two follow reads at once; the
    other log is read every interval (and says so once in its task log); both logs are complete, each line once.
    """
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook

    ns, wf = submitted
    monkeypatch.setenv("AIRFLOW__VOLCANO_ARGO__MAX_FOLLOWED_LOGS", "1")
    monkeypatch.setenv("AIRFLOW__VOLCANO_ARGO__OVERFLOW_LOG_POLL_INTERVAL", "1")
    second = submit_from_template(sandbox.api, ns, "volcano-mpi", {"job-name": "traced-2"})
    reads: list[tuple[str, bool]] = []
    following = {"now": 0, "peak": 0}
    real_stream_log = AsyncVolcanoArgoHook.stream_log

    async def recording_stream_log(self, pod, container, namespace, since_time, follow, previous=False):
        reads.append((pod, follow))  # a spy: the real API server answers every read
        following["now"] += follow
        following["peak"] = max(following["peak"], following["now"])
        try:
            async for chunk in real_stream_log(self, pod, container, namespace, since_time, follow, previous):
                yield chunk
        finally:
            following["now"] -= follow

    monkeypatch.setattr(AsyncVolcanoArgoHook, "stream_log", recording_stream_log)
    shown: dict[str, list[str]] = {"traced": [], "traced-2": []}

    async def scenario():
        triggers = _logging_triggers(ns, {"traced": wf, "traced-2": second}, shown)
        return await asyncio.gather(*(t.run().__anext__() for t in triggers))

    events = asyncio.run(scenario())
    for event, job in zip(events, ("traced", "traced-2"), strict=True):
        assert event.payload["status"] == "success", event.payload
        assert [line for line in shown[job] if line.startswith("step ")] == [f"step {i}" for i in range(40)]
    notices = {job: [line for line in lines if "max_followed_logs" in line] for job, lines in shown.items()}
    assert sorted(len(n) for n in notices.values()) == [0, 1], notices  # one run waited for the slot, once
    assert following["peak"] == 1
    assert any(follow for _, follow in reads) and any(not follow for _, follow in reads)


def test_a_trigger_row_written_by_version_0_1_loads_and_runs_to_the_event(submitted):
    """Tasks deferred before the upgrade stored the 0.1 class path and kwargs; the triggerer loads them as Airflow
    does (trigger row, ``get_trigger_by_classpath``) and the trigger follows the run to its end.
    """
    import types

    from airflow.jobs.triggerer_job_runner import TriggerRunner
    from airflow.models.trigger import Trigger

    ns, wf = submitted
    kwargs = {  # the shape of VolcanoWorkflowTrigger.serialize() in 0.1 (d2c9475), field by field
        "spec": {
            "namespace": ns,
            "workflow_name": wf["metadata"]["name"],
            "workflow_uid": wf["metadata"]["uid"],
            "job_name": "traced",
            "log_task": "mpimaster",
            "log_container": None,
            "stream_logs": True,
            "log_poll_interval": None,
            "prefix_job_names": False,
            "schedule_timeout": None,
            "deadline": None,
        },
        "log_book": {},
        "on_kill_action": "delete_workflow",
        "connection": {
            "kubernetes_conn_id": "kubernetes_default",
            "cluster_context": None,
            "config_file": None,
            "in_cluster": None,
        },
    }
    row = Trigger(
        classpath="airflow_provider_volcano_argo.triggers.volcano_workflow.VolcanoWorkflowTrigger", kwargs=kwargs
    )
    cls = TriggerRunner.get_trigger_by_classpath(types.SimpleNamespace(trigger_cache={}), row.classpath)
    trigger = cls(**Trigger._decrypt_kwargs(row.encrypted_kwargs))
    shown: list[str] = []
    capture_task_log(trigger, shown.append)
    event = asyncio.run(asyncio.wait_for(trigger.run().__anext__(), 120)).payload
    assert event["status"] == "success", event["message"]
    assert [line for line in shown if line.startswith("step ")] == [f"step {i}" for i in range(40)]
