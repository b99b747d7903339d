"""The sensor's trigger keeps its log cursors in an XCom of its task instance, through the triggerer's channel to
Airflow (faked here: the channel's messages are Airflow's own); where there is no such channel it keeps none.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from airflow.sdk.execution_time import task_runner
from airflow.sdk.execution_time.comms import GetXCom, SetXCom, XComResult
from airflow.sdk.execution_time.xcom import XCom

from airflow_provider_volcano_argo.models.names import CURSOR_XCOM_KEY
from airflow_provider_volcano_argo.triggers.phase import ObjectPhaseTrigger, XComCursorStore

TI = SimpleNamespace(dag_id="d", run_id="r", task_id="wait", map_index=-1)
needs_async_xcom = pytest.mark.skipif(
    not (hasattr(XCom, "aset") and hasattr(XCom, "aget_one")), reason="async XCom is Airflow >= 3.3 (no store before)"
)


class Channel:
    """The triggerer's ``SUPERVISOR_COMMS``: answers XCom reads and writes from a dict, as Airflow's API would."""

    def __init__(self, failing: bool = False) -> None:
        self.rows: dict[tuple, object] = {}
        self.failing = failing

    async def asend(self, msg):
        if self.failing:
            raise ConnectionError("supervisor gone")
        where = (msg.dag_id, msg.run_id, msg.task_id, msg.map_index, msg.key)
        if isinstance(msg, SetXCom):
            self.rows[where] = msg.value
            return None
        assert isinstance(msg, GetXCom)
        return XComResult(key=msg.key, value=self.rows.get(where))


def _trigger(log_task: str | None = "mpimaster") -> ObjectPhaseTrigger:
    return ObjectPhaseTrigger("volcano_job", "job", "ns", ["Completed"], ["Failed"], log_task=log_task)


@needs_async_xcom
def test_cursors_stored_by_one_trigger_are_read_by_the_next_of_the_same_task_instance(monkeypatch):
    channel = Channel()
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", channel, raising=False)
    cursors = {"cursors": {"uid/mpimaster/0": {"ts": 7, "n": 2}}, "done": [], "headers": ["uid/mpimaster/0"]}

    async def scenario():
        first = _trigger()
        first.task_instance = TI
        assert await XComCursorStore.of(first).save(cursors)
        second = _trigger()  # a new triggerer, the same deferred task instance
        second.task_instance = TI
        return await XComCursorStore.of(second).load()

    assert asyncio.run(scenario()) == cursors
    assert list(channel.rows) == [("d", "r", "wait", -1, CURSOR_XCOM_KEY)]


@needs_async_xcom
def test_nothing_stored_reads_as_none(monkeypatch):
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", Channel(), raising=False)
    trigger = _trigger()
    trigger.task_instance = TI
    assert asyncio.run(XComCursorStore.of(trigger).load()) is None


def test_a_failing_channel_costs_the_cursors_not_the_sensor(monkeypatch):
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", Channel(failing=True), raising=False)
    warnings = []
    store = XComCursorStore(**vars(TI), log=SimpleNamespace(warning=lambda *a, **k: warnings.append(a)))

    async def scenario():
        return await store.load(), await store.save({"cursors": {}}), await store.save({"cursors": {}})

    assert asyncio.run(scenario()) == (None, False, False)
    assert len(warnings) == 1  # said once, not at every interval


class InlineChannel:
    """``dag.test()``'s in-process channel: synchronous only."""

    def send(self, msg):
        raise AssertionError("not used")


@pytest.mark.parametrize(
    ("task_instance", "channel"),
    [
        (None, Channel()),  # a trigger not run for a task instance
        (TI, InlineChannel()),  # dag.test(): the trigger runs inline in the task, no triggerer to restart
        (TI, None),  # no channel at all
    ],
)
def test_no_store_where_no_triggerer_channel_reaches_airflow(monkeypatch, task_instance, channel):
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", channel, raising=False)
    trigger = _trigger()
    trigger.task_instance = task_instance
    assert XComCursorStore.of(trigger) is None


@pytest.mark.parametrize("missing", ["aset", "aget_one"])
def test_no_store_below_airflow_3_3_whose_xcom_cannot_be_awaited(monkeypatch, missing):
    """Airflow 3.0-3.2's XCom has no ``aset``/``aget_one``: a blocking call would stall every trigger of the
    triggerer, so the sensor keeps no cursors there (a restart shows its log again, as the README says).
    """
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", Channel(), raising=False)
    monkeypatch.delattr(XCom, missing, raising=False)
    trigger = _trigger()
    trigger.task_instance = TI
    assert XComCursorStore.of(trigger) is None


def test_a_closed_channel_is_not_written_to(monkeypatch):
    """A whole triggerer stopping stops reading Airflow's replies before it cancels the triggers: a request then
    would wait for ever, so the last store is given up at once (the next trigger repeats what a hard kill would).
    """

    class Closed(Channel):
        def __init__(self) -> None:
            super().__init__()
            self._reader_task = asyncio.run(_finished_task())

        async def asend(self, msg):
            raise AssertionError("sent on a closed channel")

    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", Closed(), raising=False)
    store = XComCursorStore(**vars(TI), log=SimpleNamespace(warning=lambda *a, **k: None))

    async def scenario():
        return await store.save({"cursors": {}}), await store.load()

    assert asyncio.run(scenario()) == (False, None)


async def _finished_task() -> asyncio.Task:
    task = asyncio.create_task(asyncio.sleep(0))
    await task
    return task
