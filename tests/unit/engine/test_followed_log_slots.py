"""The triggerer-wide limit on followed logs: slots, configuration, and streams beyond the limit (hook faked)."""

from __future__ import annotations

import asyncio
import time

import pytest

from airflow_provider_volcano_argo.engine import followed_log_slots as slots_module
from airflow_provider_volcano_argo.engine.followed_log_slots import (
    FollowedLogSlots,
    configured_limits,
    followed_log_slots,
)
from airflow_provider_volcano_argo.engine.pod_logs import InstanceStream
from airflow_provider_volcano_argo.models.log_cursor import CursorBook


def test_slots_count_against_the_limit_and_zero_means_no_limit():
    slots = FollowedLogSlots(2, 10.0)
    assert [slots.try_acquire() for _ in range(3)] == [True, True, False]
    slots.release()
    assert slots.try_acquire() and not slots.try_acquire()
    unlimited = FollowedLogSlots(0, 10.0)
    assert all(unlimited.try_acquire() for _ in range(1000))


def test_limits_come_from_airflow_configuration_and_bad_values_are_refused(monkeypatch):
    assert configured_limits() == (slots_module.DEFAULT_MAX_FOLLOWED_LOGS, slots_module.DEFAULT_OVERFLOW_POLL_SECONDS)
    monkeypatch.setenv("AIRFLOW__VOLCANO_ARGO__MAX_FOLLOWED_LOGS", "7")
    monkeypatch.setenv("AIRFLOW__VOLCANO_ARGO__OVERFLOW_LOG_POLL_INTERVAL", "2.5")
    assert configured_limits() == (7, 2.5)
    monkeypatch.setenv("AIRFLOW__VOLCANO_ARGO__MAX_FOLLOWED_LOGS", "-1")
    with pytest.raises(ValueError, match="max_followed_logs"):
        configured_limits()
    monkeypatch.setenv("AIRFLOW__VOLCANO_ARGO__MAX_FOLLOWED_LOGS", "7")
    monkeypatch.setenv("AIRFLOW__VOLCANO_ARGO__OVERFLOW_LOG_POLL_INTERVAL", "0")
    with pytest.raises(ValueError, match="overflow_log_poll_interval"):
        configured_limits()


def test_one_set_of_slots_per_event_loop(monkeypatch):
    monkeypatch.setenv("AIRFLOW__VOLCANO_ARGO__MAX_FOLLOWED_LOGS", "3")

    async def twice():
        return followed_log_slots(), followed_log_slots()

    first, again = asyncio.run(twice())
    assert first is again and first.limit == 3
    assert asyncio.run(twice())[0] is not first  # another loop (triggerer), other slots


class FakeContainer:
    """A container printing ``lines`` at ``every`` seconds, then ending; from line ``hold_at`` on it prints only
    once ``until()`` holds (a scenario's order, not its timing, decides what the test sees).
    """

    def __init__(self, lines: int, every: float, hold_at: int = 0, until=lambda: True):
        self.lines: list[bytes] = []
        self.total, self.every = lines, every
        self.hold_at, self.until = hold_at, until
        self.finished = False

    async def run(self) -> None:
        for i in range(self.total):
            await asyncio.sleep(self.every)
            while i >= self.hold_at and not self.until():
                await asyncio.sleep(0.01)
            now = time.time_ns()  # one reading: seconds and fraction from two could go back across a second
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now // 10**9)) + f".{now % 10**9:09d}Z"
            self.lines.append(f"{stamp} line {i}\n".encode())
        self.finished = True


class FakeHook:
    """``stream_log`` over fake containers: a follow read waits for new lines until the container ended."""

    def __init__(self, containers: dict[str, FakeContainer]):
        self.containers = containers
        self.reads: list[tuple[str, bool]] = []

    async def stream_log(self, pod, container, namespace, since_time, follow, previous=False):
        self.reads.append((pod, follow))
        source, sent = self.containers[pod], 0
        while True:
            while sent < len(source.lines):
                yield source.lines[sent]
                sent += 1
            if not follow or source.finished:
                return
            await asyncio.sleep(0.01)


def test_a_log_beyond_the_limit_is_read_every_interval_then_followed_when_a_slot_frees():
    short = FakeContainer(20, 0.01)
    # "long" prints its first 10 lines while "short" holds the one slot, and the rest only once it is followed:
    # if the freed slot were never taken, it would never end and the test would time out
    long = FakeContainer(30, 0.01, hold_at=10, until=lambda: short.finished and ("long", True) in hook.reads)
    containers = {"short": short, "long": long}
    hook = FakeHook(containers)
    slots = FollowedLogSlots(1, 0.2)
    shown: dict[str, list[str]] = {"short": [], "long": []}

    async def scenario():
        book = CursorBook()
        runs = [asyncio.create_task(c.run()) for c in containers.values()]
        streams = [
            InstanceStream(
                hook, "ns", pod, "mpimaster", pod, book, shown[pod].append, lambda c=c: c.finished, slots=slots
            )
            for pod, c in containers.items()
        ]
        await asyncio.wait_for(asyncio.gather(*runs, *(s.run() for s in streams)), 30)

    asyncio.run(scenario())
    assert shown["short"] == [f"line {i}" for i in range(20)]
    notice, *lines = shown["long"]
    assert "max_followed_logs" in notice and "every 0.2 s" in notice
    assert lines == [f"line {i}" for i in range(30)]
    long_reads = [follow for pod, follow in hook.reads if pod == "long"]
    assert long_reads[0] is False  # the one slot was taken ("short" started first)
    assert True in long_reads  # followed once "short" had ended
    assert [follow for pod, follow in hook.reads if pod == "short"][0] is True
    assert slots.held == 0
