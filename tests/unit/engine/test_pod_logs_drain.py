"""How long ``PodLogForwarder.drain`` reads on once the outcome is known (streams faked: pure asyncio)."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_volcano_argo.engine import pod_log_forwarder
from airflow_provider_volcano_argo.engine.pod_log_forwarder import PodLogForwarder
from airflow_provider_volcano_argo.engine.pod_logs import InstanceStream
from airflow_provider_volcano_argo.models.log_cursor import CursorBook


def _forwarder(*writers) -> tuple[PodLogForwarder, list[asyncio.Task]]:
    """A forwarder whose streams are ``writers(stream)`` coroutines counting their lines on the stream."""
    forwarder = PodLogForwarder(None, "ns", "", "mpimaster", jobs=set, book=CursorBook(), emit=lambda _: None)
    tasks = []
    for n, writer in enumerate(writers):
        stream = InstanceStream(None, "ns", f"pod-{n}", "mpimaster", f"key-{n}", forwarder.book, print, lambda: True)
        tasks.append(asyncio.ensure_future(writer(stream)))
        forwarder.streams[stream.key] = (tasks[-1], stream)
    return forwarder, tasks


async def _steady(stream: InstanceStream, lines: int = 20, every: float = 0.05) -> None:
    for _ in range(lines):
        await asyncio.sleep(every)
        stream.lines_emitted += 1


async def _stalls(stream: InstanceStream) -> None:
    stream.lines_emitted += 3
    await asyncio.sleep(3600)


@pytest.fixture
def short_drain(monkeypatch):
    monkeypatch.setattr(pod_log_forwarder, "DRAIN_SECONDS", 0.3)
    monkeypatch.setattr(pod_log_forwarder, "BOUNDED_DRAIN_SECONDS", 0.3)


def test_a_backlog_longer_than_the_idle_limit_is_read_to_its_end(short_drain):
    async def scenario():
        forwarder, (task,) = _forwarder(_steady)  # 20 lines over ~1 s: three times the idle limit
        await asyncio.wait_for(forwarder.drain(), 10)
        return forwarder, task

    forwarder, task = asyncio.run(scenario())
    assert task.done() and not task.cancelled()
    assert forwarder.lines_emitted == 20


def test_a_stalled_stream_is_cancelled_after_the_idle_limit_while_others_finish(short_drain):
    async def scenario():
        forwarder, tasks = _forwarder(_stalls, _steady)
        await asyncio.wait_for(forwarder.drain(), 10)
        return forwarder, tasks

    forwarder, (stalled, steady) = asyncio.run(scenario())
    assert stalled.cancelled()
    assert steady.done() and not steady.cancelled()
    assert forwarder.lines_emitted == 3 + 20


def test_a_run_that_did_not_end_bounds_the_drain_in_all_even_while_lines_arrive(short_drain):
    async def endless(stream: InstanceStream) -> None:  # never ends and never idles: only the bound stops it
        while True:
            await asyncio.sleep(0.01)
            stream.lines_emitted += 1

    async def scenario():
        forwarder, (task,) = _forwarder(endless)
        while not forwarder.lines_emitted:
            await asyncio.sleep(0.01)
        await asyncio.wait_for(forwarder.drain(bounded=True), 10)  # returns: the bound, not the stream, ended it
        return task

    assert asyncio.run(scenario()).cancelled()


def test_a_wait_for_the_instances_end_wakes_at_the_pod_watchs_update_not_at_the_next_second():
    async def scenario() -> bool:
        ended = False
        news = asyncio.Event()
        stream = InstanceStream(None, "ns", "pod", "mpimaster", "key", CursorBook(), print, lambda: ended)
        stream.pod_news = lambda: news
        waiting = asyncio.ensure_future(stream._wait_for_end(10.0))
        await asyncio.sleep(0)  # it waits
        assert not waiting.done()
        ended, (old, news) = True, (news, asyncio.Event())  # the pod watch shows the exit
        old.set()
        for _ in range(5):  # a few turns of the loop, no clock: a wait on the 1-s fallback would still sleep
            await asyncio.sleep(0)
        done = waiting.done()
        waiting.cancel()
        return done

    assert asyncio.run(scenario())
