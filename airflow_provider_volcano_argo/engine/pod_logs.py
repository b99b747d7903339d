"""Read one container instance's log (the MPI master's) into the task log: in order, none lost, none repeated.

``engine/pod_log_forwarder.py`` starts one stream per instance of a Volcano task's pods.

Each container instance (pod uid + container + restart count) has its own ``LogCursor``. Reading starts at the
cursor's ``sinceTime`` (second precision on the wire) and the cursor drops what was already shown, so a dropped
connection, an API server restart or a new trigger (triggerer restart) resumes exactly where the last one stopped,
as long as the kubelet still serves it: a read that finds the log rotated past its cursor says so in the task log,
and so does the first read that gets lines of a log whose start it may have come too late for (``models/log_start.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.engine.followed_log_slots import FollowedLogSlots, followed_log_slots
from airflow_provider_volcano_argo.engine.log_records import LineRecords, configured_lines_per_record
from airflow_provider_volcano_argo.engine.reconnect import Reconnect
from airflow_provider_volcano_argo.exceptions import ApiNotFoundError
from airflow_provider_volcano_argo.models.container_instances import LogRead
from airflow_provider_volcano_argo.models.log_cursor import (
    CursorBook,
    LineSplitter,
    LogCursor,
    format_timestamp,
    parse_log_line,
)
from airflow_provider_volcano_argo.models.log_start import StartCoverage, late_start_seconds

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook

MAX_LINE_BYTES = 1024 * 1024
TAIL_LINES = 20
#: The kubelet ends a follow read when the container exits (``logs.go: waitLogs``) and starts it again at once the
#: first time (``doBackOff``): a read by name before the pod watch shows the exit may already get the next
#: instance's lines. So a follow read that ended is read again only once the watch says so, or after this long.
FOLLOW_END_SECONDS = 10.0
#: An ended instance whose container restarts in its pod is read once the pod watch shows the restart (then
#: ``previous`` serves it; a read by name could serve the next instance already), or after this long without.
RESTART_SHOW_SECONDS = 10.0


@dataclass
class InstanceStream:
    """Follows one container instance until it has ended and its last line was read."""

    hook: AsyncVolcanoArgoHook
    namespace: str
    pod: str
    container: str
    key: str
    book: CursorBook
    emit: Callable[[str], None]
    is_finished: Callable[[], bool]
    prefix: str = ""
    header: str | None = None
    poll_interval: float | None = None  # read every so often instead of holding a follow stream
    slots: FollowedLogSlots | None = None  # the triggerer's limit on followed logs (default: the running loop's)
    where: Callable[[], LogRead | None] | None = None  # how pods/log serves it now (default: current, is_finished)
    after: asyncio.Task | None = None  # the stream of the container's instance before: its lines come first
    started_at: Callable[[], int | None] | None = None  # the instance's startedAt (ns), from the pod watch
    start_seen_at: float | None = None  # time.monotonic() when the pod watch showed the instance start (not before)
    tail: deque = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    lines_emitted: int = 0
    overflowed: bool = False  # told the task log once that this log is read every few seconds
    _check_start: bool = False  # this read's first line is to be checked against the start (models/log_start.py)
    lines_per_record: int | None = None  # lines of one chunk per task-log record (default: the configuration's)
    pod_news: Callable[[], asyncio.Event] | None = None  # set at the pod watch's next update (wakes a wait)
    _records: LineRecords | None = None

    async def run(self) -> None:
        """Stream until the instance ended (or its pod is gone), reconnecting from the cursor as needed."""
        if self.key in self.book.done:
            return
        if self.after is not None:  # one container's instances one after another, each under its own header
            await asyncio.wait([self.after])
        if self.header and self.key not in self.book.headers:
            self.emit(self.header)
            self.book.headers.add(self.key)
        cursor = self.book.cursor(self.key)
        slots = self.slots or followed_log_slots()
        reconnect = Reconnect(f"log stream of {self.pod}")
        coverage = StartCoverage(self.start_seen_at)
        if self.poll_interval:
            # a random part of the interval first: runs deferred (or resumed by a restarted triggerer) together
            # then read at different times, through a few pooled connections instead of one each at once
            await self._wait_for_end(self.poll_interval * random.random())
        waited_for_restart = False
        while True:
            where = self._where()
            if where is None:  # pod gone (its name may be a new pod's already) or restarted again: not served
                break
            if where.restart_due and not waited_for_restart:
                waited_for_restart = True
                await self._wait_while(self._restart_due, RESTART_SHOW_SECONDS)
                continue
            finished_before = where.ended
            follow = not finished_before and not self.poll_interval and slots.try_acquire()
            if not (follow or finished_before or self.poll_interval or self.overflowed):
                # beyond the limit: say so once, and read first at a random point of the interval (runs deferred
                # together would otherwise each open a connection at the same moment)
                self._tell_overflow(slots)
                await self._wait_for_end(slots.overflow_poll_interval * random.random())
                continue
            from_start = coverage.opening(follow, finished_before, time.monotonic())
            try:
                await self._read(cursor, follow=follow, previous=where.previous, from_start=from_start)
                coverage.closed(follow, clean=True, now=time.monotonic())
                reconnect.reset()
            except ApiNotFoundError:  # pod deleted: what was streamed is all there is
                break
            except Exception as exc:  # 400 while the container is still being created, 5xx, dropped connection
                coverage.closed(follow, clean=False, now=time.monotonic())
                await reconnect.recover(exc)
                continue
            finally:
                if follow:
                    slots.release()
            if finished_before:
                break  # a complete read of an ended instance: nothing more can come
            if self.is_finished():
                continue  # the follow stream ended with the container: one more read catches the tail
            if self.poll_interval:
                await self._wait_for_end(self.poll_interval)
            elif follow:  # ended with its container, most likely: the watch shows it soon (FOLLOW_END_SECONDS)
                await self._wait_for_end(FOLLOW_END_SECONDS)
            else:  # jittered, so that the overflowing logs stay spread over the interval
                await self._wait_for_end(slots.overflow_poll_interval * random.uniform(0.5, 1.5))
        self.book.done.add(self.key)

    def _where(self) -> LogRead | None:
        if self.where is not None:
            return self.where()
        return LogRead(previous=False, ended=self.is_finished())

    def _tell_overflow(self, slots: FollowedLogSlots) -> None:
        self.overflowed = True
        self.emit(
            f"{slots.limit} logs are followed in this triggerer already ([volcano_argo] max_followed_logs): "
            f"reading the log of {self.pod} every {slots.overflow_poll_interval:g} s until one of them ends"
        )

    def _tell_gap(self, shown_ns: int, next_ns: int) -> None:
        self.records.flush()  # the lines before the notice come first
        # the kubelet serves only the current log file (kuberuntime/logs/logs.go: ReadLogs) and rotates it at
        # containerLogMaxSize (logs/container_log_manager.go: rotateLatestLog): what was written between the last
        # line shown and this one may have rotated away unread
        self.emit(
            f"the log of {self.pod} was rotated by the kubelet (containerLogMaxSize) since it was last read: lines "
            f"between {format_timestamp(shown_ns)} and {format_timestamp(next_ns)} may be missing"
        )

    def _tell_late_start(self, first_ns: int, late_seconds: float) -> None:
        self.records.flush()  # the lines before the notice come first
        # no cursor yet to find a gap with: lines written before this one may have rotated away before any read
        self.emit(
            f"the log of {self.pod} begins at {format_timestamp(first_ns)}, {late_seconds:.0f} s after the container "
            "started: if the container wrote before that, the kubelet may have rotated those lines away "
            "(containerLogMaxSize) before they were read"
        )

    @property
    def records(self) -> LineRecords:
        """Return what groups this log's lines into task-log records (``engine/log_records.py``)."""
        if self._records is None:
            self._records = LineRecords(self.emit, self.lines_per_record or configured_lines_per_record())
        return self._records

    async def _wait_for_end(self, seconds: float) -> None:
        """Sleep ``seconds``, but wake as soon as the pod watch shows the instance ended (its last read is due).

        A follow read ends with its container, usually just before the watch shows the exit: without the wake-up
        the last read, and so the trigger's event, waited for the next second (measured by anchor_job.py: the
        event 0.96 s after the Job's end, p50).
        """
        await self._wait_while(lambda: not self.is_finished(), seconds)

    def _restart_due(self) -> bool:
        where = self._where()
        return where is not None and where.restart_due

    async def _wait_while(self, holds: Callable[[], bool], seconds: float) -> None:
        """Wait while ``holds()``, at most ``seconds``, looking again at each pod watch update.

        ``holds`` reads the pod watch's cache, which only a watch update changes (without ``pod_news``: each second).
        """
        deadline = time.monotonic() + seconds
        while holds() and (left := deadline - time.monotonic()) > 0:
            news = self.pod_news() if self.pod_news else None
            if news is None:
                await asyncio.sleep(min(1.0, left))
                continue
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(news.wait(), min(1.0, left))

    async def _read(self, cursor: LogCursor, follow: bool, previous: bool = False, from_start: bool = False) -> None:
        splitter = LineSplitter(MAX_LINE_BYTES)
        cursor.rewind()
        since = cursor.since_time()
        # with nothing shown yet, a read that may have come too late for the start checks its first line
        self._check_start = not cursor.timestamp_ns and not from_start and self.started_at is not None
        try:
            async for chunk in self.hook.stream_log(self.pod, self.container, self.namespace, since, follow, previous):
                for raw in splitter.feed(chunk):
                    self._accept(cursor, raw)
                self.records.flush()  # a chunk's lines reach the task log before the next await (the cursor moved)
            for raw in splitter.flush():
                self._accept(cursor, raw)
        finally:
            self.records.flush()

    def _accept(self, cursor: LogCursor, raw: bytes) -> None:
        line = parse_log_line(raw)
        if line is None or not cursor.accept(line):
            return
        if cursor.gap:
            self._tell_gap(*cursor.gap)
            cursor.gap = None
        if self._check_start and line.timestamp_ns:
            self._check_start = False
            late = late_start_seconds(line.timestamp_ns, self.started_at())  # type: ignore[misc]
            if late is not None:
                self._tell_late_start(line.timestamp_ns, late)
        text = self.prefix + line.text
        self.records.add(text)
        self.tail.append(text)
        self.lines_emitted += 1
