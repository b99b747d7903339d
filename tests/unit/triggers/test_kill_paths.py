"""When the trigger stops the Workflow: ``on_kill`` (a user kill, Airflow >= 3.3) and, before 3.3, ``cleanup`` only
once the task instance is no longer deferred; a triggerer restart or a fired event never touch it (hook faked).
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_volcano_argo.models.follow import FollowSpec
from airflow_provider_volcano_argo.models.policies import CleanupSteps
from airflow_provider_volcano_argo.triggers import argo_workflow


class FakeHook:
    """Records the clean-ups asked for."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, CleanupSteps]] = []

    async def clean_up_workflow(self, name: str, namespace: str, steps: CleanupSteps) -> bool:
        self.calls.append((name, namespace, steps))
        return steps.delete


def _trigger(monkeypatch, on_kill_action: str = "delete_workflow", task_state=None, airflow_3_3: bool = True):
    spec = FollowSpec(namespace="ns", workflow_name="wf", job_name="job")
    trigger = argo_workflow.ArgoWorkflowTrigger(spec=spec.to_dict(), on_kill_action=on_kill_action)
    hook = FakeHook()
    monkeypatch.setattr(trigger, "hook", lambda: hook)
    monkeypatch.setattr(argo_workflow, "AIRFLOW_V_3_3_PLUS", airflow_3_3)

    async def state():
        if isinstance(task_state, Exception):
            raise task_state
        return task_state

    monkeypatch.setattr(trigger, "_task_state", state)
    return trigger, hook


@pytest.mark.parametrize(
    ("action", "steps"),
    [
        ("delete_workflow", [CleanupSteps(stop=True, delete=True)]),
        ("stop_workflow", [CleanupSteps(stop=True, delete=False)]),
        ("keep_workflow", []),
    ],
)
def test_on_kill_applies_the_policy_unless_the_event_fired(monkeypatch, action, steps):
    trigger, hook = _trigger(monkeypatch, action, task_state="failed")  # marked failed by a user
    asyncio.run(trigger.on_kill())
    assert hook.calls == [("wf", "ns", s) for s in steps]
    fired, hook = _trigger(monkeypatch, action, task_state="failed")
    fired._fired = True  # the run ended and its event is on its way: execute_complete cleans up
    asyncio.run(fired.on_kill())
    assert hook.calls == []


@pytest.mark.parametrize(
    "task_state",
    [
        "deferred",  # HA: the trigger moved to another triggerer, which follows the run on
        "running",  # its event was delivered and the task resumed in a worker
        RuntimeError("API server unreachable"),  # unknown: never destroy work on a guess
    ],
)
def test_on_kill_leaves_a_run_someone_still_follows(monkeypatch, task_state):
    trigger, hook = _trigger(monkeypatch, task_state=task_state)
    asyncio.run(trigger.on_kill())
    assert hook.calls == []


def test_cleanup_never_stops_anything_on_airflow_3_3(monkeypatch):
    trigger, hook = _trigger(monkeypatch, task_state="failed", airflow_3_3=True)
    asyncio.run(trigger.cleanup())  # runs on every restart too; a kill reaches on_kill instead
    assert hook.calls == []


@pytest.mark.parametrize(
    ("task_state", "stopped"),
    [
        ("deferred", False),  # a triggerer restart: the next triggerer follows on
        ("failed", True),  # marked failed by a user
        ("up_for_retry", True),
        (RuntimeError("API server unreachable"), False),  # unknown: never destroy work on a guess
    ],
)
def test_before_airflow_3_3_cleanup_stops_only_a_task_no_longer_deferred(monkeypatch, task_state, stopped):
    trigger, hook = _trigger(monkeypatch, task_state=task_state, airflow_3_3=False)
    asyncio.run(trigger.cleanup())
    assert hook.calls == ([("wf", "ns", CleanupSteps(stop=True, delete=True))] if stopped else [])


def test_before_airflow_3_3_cleanup_after_the_event_fired_does_nothing(monkeypatch):
    trigger, hook = _trigger(monkeypatch, task_state="success", airflow_3_3=False)
    trigger._fired = True
    asyncio.run(trigger.cleanup())
    assert hook.calls == []


@pytest.mark.parametrize(("task_state", "stopped"), [("deferred", False), ("failed", True)])
def test_airflows_trigger_runner_cancel_path_destroys_only_a_task_no_longer_deferred(monkeypatch, task_state, stopped):
    """Airflow 3.3's ``TriggerRunner`` cancels a trigger "by user action" and awaits ``on_kill`` both when a user
    marked the task failed and when the trigger moved to another triggerer (HA); only the first may stop the run.
    Before 3.3 the runner cancels the task and awaits ``cleanup``, with the same outcome (the installed Airflow's
    own path: ``AIRFLOW_V_3_3_PLUS`` is left as it is).
    """
    trigger, hook = _trigger(monkeypatch, task_state=task_state, airflow_3_3=argo_workflow.AIRFLOW_V_3_3_PLUS)
    ended = _cancel_in_airflows_trigger_runner(monkeypatch, trigger)
    assert isinstance(ended, asyncio.CancelledError)  # cancelled as Airflow cancels, nothing else went wrong
    assert hook.calls == ([("wf", "ns", CleanupSteps(stop=True, delete=True))] if stopped else [])


def test_a_kill_s_clean_up_survives_the_cancel_airflow_resends_at_every_sync(monkeypatch):
    """The triggerer's supervisor re-sends ``to_cancel`` at each state sync until the trigger ends, and the runner
    cancels again each time: a task-state read slower than one sync (3 s, seen in tests/deployment) must not cut
    the clean-up off (it did: the Workflow was left running after "Stopping Argo Workflow").
    """
    trigger, hook = _trigger(monkeypatch, airflow_3_3=argo_workflow.AIRFLOW_V_3_3_PLUS)

    async def slow_state():
        await asyncio.sleep(0.3)
        return "failed"

    monkeypatch.setattr(trigger, "_task_state", slow_state)
    ended = _cancel_in_airflows_trigger_runner(monkeypatch, trigger, syncs=10)
    assert isinstance(ended, asyncio.CancelledError)
    assert hook.calls == [("wf", "ns", CleanupSteps(stop=True, delete=True))]


def _cancel_in_airflows_trigger_runner(monkeypatch, trigger, syncs: int = 1):
    """Run ``trigger`` in the installed Airflow's ``TriggerRunner`` (its follow faked to last), then cancel it by
    user action at ``syncs`` state syncs 0.05 s apart, as the supervisor re-sends ``to_cancel``; return how it ended.
    """
    import types

    from airflow.jobs.triggerer_job_runner import TriggerRunner

    from airflow_provider_volcano_argo.engine.workflow_follower import WorkflowFollower

    async def follows_for_ever(self):
        await asyncio.sleep(3600)

    monkeypatch.setattr(WorkflowFollower, "run", follows_for_ever)
    monkeypatch.setenv("AIRFLOW_DISABLE_GREENBACK_PORTAL", "true")
    trigger.timeout_after = None  # as the runner sets it when it loads a trigger (read on cancel before 3.3)
    trigger.task_instance = types.SimpleNamespace(
        id="ti", dag_id="d", task_id="t", run_id="r", try_number=1, map_index=-1, context_carrier={}
    )

    async def scenario():
        runner = TriggerRunner()
        task = asyncio.create_task(runner.run_trigger(1, trigger))
        runner.triggers[1] = {"task": task, "name": "ArgoWorkflowTrigger", "events": 0, "is_watcher": False}
        await asyncio.sleep(0.1)  # running, deferred
        for _ in range(syncs):
            runner.to_cancel.append(1)
            await runner.cancel_triggers()
            await asyncio.sleep(0.05)
        return await asyncio.gather(task, return_exceptions=True)

    [ended] = asyncio.run(scenario())
    return ended


@pytest.mark.parametrize(("map_index", "key"), [(-1, "t"), (3, "t_3")])
def test_the_task_state_is_read_with_a_call_the_installed_task_sdk_accepts(monkeypatch, map_index, key):
    """``_task_state`` passes ``map_index``, which task-sdk 1.0.0 (Airflow 3.0.0) does not take: the ``TypeError``
    was taken for an unreadable state, so before 3.3 a kill never stopped the run (hence task-sdk >= 1.0.1).
    """
    import inspect
    import types

    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    accepted = inspect.signature(RuntimeTaskInstance.get_task_states)

    def get_task_states(*args, **kwargs):
        accepted.bind(*args, **kwargs)  # the installed SDK's own signature; its supervisor round trip is faked
        return {"r": {key: "failed"}}

    monkeypatch.setattr(RuntimeTaskInstance, "get_task_states", staticmethod(get_task_states))
    spec = FollowSpec(namespace="ns", workflow_name="wf", job_name="job")
    trigger = argo_workflow.ArgoWorkflowTrigger(spec=spec.to_dict())
    trigger.task_instance = types.SimpleNamespace(dag_id="d", task_id="t", run_id="r", map_index=map_index)
    assert asyncio.run(trigger._task_state()) == "failed"
