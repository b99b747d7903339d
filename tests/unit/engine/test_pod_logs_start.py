"""A log whose start may have rotated away before the first read that got lines says so (hook faked).

The sandbox test (``tests/integration/test_log_rotation_and_order.py``) runs it against the emulated kubelet.
"""

from __future__ import annotations

import asyncio
import time

from airflow_provider_volcano_argo.engine.followed_log_slots import FollowedLogSlots
from airflow_provider_volcano_argo.engine.pod_log_forwarder import PodLogForwarder
from airflow_provider_volcano_argo.engine.pod_logs import InstanceStream
from airflow_provider_volcano_argo.models.log_cursor import CursorBook, LogCursor, format_timestamp, parse_timestamp

STARTED = parse_timestamp("2026-12-05T08:00:00Z")
NOTICE = "may have rotated those lines away (containerLogMaxSize) before they were read"


class Log:
    """``stream_log`` serving lines stamped ``seconds`` after the start from ``sinceTime`` on; the first
    ``failures`` reads fail. The container has ended once a read got every line.
    """

    def __init__(self, seconds: list[float], failures: int = 0):
        self.seconds, self.failures = seconds, failures
        self.reads: list[tuple[bool, str | None]] = []
        self.ended = False

    async def stream_log(self, pod, container, namespace, since_time, follow, previous=False):
        self.reads.append((follow, since_time))
        if self.failures:
            self.failures -= 1
            raise ConnectionResetError("dropped")
        since = parse_timestamp(since_time) if since_time else 0
        for i, second in enumerate(self.seconds):
            await asyncio.sleep(0)
            stamp = STARTED + int(second * 1e9)
            if stamp >= since:
                yield f"{format_timestamp(stamp)} line {i}\n".encode()
        self.ended = True


def _show(log: Log, book: CursorBook | None = None, **stream) -> list[str]:
    shown: list[str] = []
    instance = InstanceStream(
        log, "ns", "j-mpimaster-0", "mpimaster", "p1/mpimaster/0", book or CursorBook(), shown.append,
        is_finished=lambda: log.ended, slots=FollowedLogSlots(0, 1.0), header="== header",
        started_at=lambda: STARTED, **stream,
    )  # fmt: skip
    asyncio.run(asyncio.wait_for(instance.run(), 10))
    return shown


def test_a_polled_read_whose_first_line_comes_long_after_the_start_says_the_start_may_be_gone():
    shown = _show(Log([31.5, 32.0]), poll_interval=0.01, start_seen_at=time.monotonic())
    assert shown[0] == "== header" and shown[2:] == ["line 0", "line 1"]
    assert shown[1] == (
        "the log of j-mpimaster-0 begins at 2026-12-05T08:00:31.500000000Z, 32 s after the container started: if "
        f"the container wrote before that, the kubelet {NOTICE}"
    )


def test_a_first_line_soon_after_the_start_is_the_start():
    """``startedAt`` has whole seconds: a line 1.9 s after it may come 0.9 s after the start."""
    assert _show(Log([1.9, 40.0]), poll_interval=0.01) == ["== header", "line 0", "line 1"]


def test_a_follow_open_since_the_start_says_nothing_of_a_container_silent_at_first():
    shown = _show(Log([60.0]), start_seen_at=time.monotonic())
    assert shown == ["== header", "line 0"]


def test_a_follow_of_an_instance_already_running_when_first_seen_may_have_come_too_late():
    """The follower started or resumed after the container did (no cursor: it had shown nothing)."""
    shown = _show(Log([60.0]), start_seen_at=None)
    assert NOTICE in shown[1] and shown[2] == "line 0"


def test_a_follow_opened_long_after_the_watch_showed_the_start_may_have_come_too_late():
    """E.g. it waited for the stream of the instance before, or for a free slot (max_followed_logs)."""
    shown = _show(Log([60.0]), start_seen_at=time.monotonic() - 60)
    assert NOTICE in shown[1]


def test_a_follow_reconnected_at_once_after_a_dropped_connection_reads_on_from_the_start():
    log = Log([60.0], failures=1)
    shown = _show(log, start_seen_at=time.monotonic())
    assert shown == ["== header", "line 0"] and [follow for follow, _ in log.reads][:2] == [True, True]


def test_a_read_with_a_cursor_leaves_it_to_the_cursor():
    """Lines were shown: a gap after them is the cursor's to find (``LogCursor.gap``)."""
    book = CursorBook()
    book.cursors["p1/mpimaster/0"] = LogCursor(STARTED + 30_000_000_000, 1, 0)
    shown = _show(Log([30.0, 31.0]), book=book, poll_interval=0.01)
    assert shown == ["== header", "line 1"]


def _pod(phase: str, state: dict) -> dict:
    status = {"phase": phase, "containerStatuses": [{"name": "mpimaster", "restartCount": 0, "state": state}]}
    return {"metadata": {"uid": "p1", "name": "j-mpimaster-0"}, "status": status}


def test_the_forwarder_notes_a_start_only_when_the_watch_showed_the_pod_before_it():
    async def seen(*events: tuple[str, dict]) -> dict[str, float]:
        forwarder = PodLogForwarder(None, "ns", "", "mpimaster", jobs=set, book=CursorBook(), emit=print)
        forwarder.paused = True  # no streams: only what the watch showed
        for kind, obj in events:
            await forwarder._on_pod(kind, obj)
        return forwarder.start_seen

    waiting, running = _pod("Pending", {"waiting": {}}), _pod("Running", {"running": {}})
    assert list(asyncio.run(seen(("SYNCED", {"items": [waiting]}), ("MODIFIED", running)))) == ["p1/mpimaster/0"]
    assert asyncio.run(seen(("SYNCED", {"items": []}), ("ADDED", waiting), ("MODIFIED", running)))
    assert not asyncio.run(seen(("SYNCED", {"items": [running]})))  # running when first listed
    assert not asyncio.run(seen(("SYNCED", {"items": []}), ("ADDED", running)))  # first seen running
    assert not asyncio.run(seen(("SYNCED", {"items": [waiting]}), ("SYNCED", {"items": [running]})))  # re-listed
