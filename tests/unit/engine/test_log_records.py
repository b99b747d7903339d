"""Several lines of a master's log per task-log record (``[volcano_argo] log_lines_per_record``), hook faked."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_volcano_argo.engine.followed_log_slots import FollowedLogSlots
from airflow_provider_volcano_argo.engine.log_records import LineRecords, configured_lines_per_record
from airflow_provider_volcano_argo.engine.pod_logs import InstanceStream
from airflow_provider_volcano_argo.models.log_cursor import CursorBook, format_timestamp, parse_timestamp

STARTED = parse_timestamp("2026-12-05T08:00:00Z")


class ChunkedLog:
    """``stream_log`` serving ``chunks`` (lists of line numbers, one second apart) from ``sinceTime`` on."""

    def __init__(self, chunks: list[list[int]], rotated_before: int | None = None):
        self.chunks, self.rotated_before = chunks, rotated_before
        self.ended = False

    async def stream_log(self, pod, container, namespace, since_time, follow, previous=False):
        since = parse_timestamp(since_time) if since_time else 0
        for chunk in self.chunks:
            await asyncio.sleep(0)
            stamps = [STARTED + i * 1_000_000_000 for i in chunk]
            lines = (f"{format_timestamp(s)} line {i}\n" for i, s in zip(chunk, stamps, strict=True) if s >= since)
            yield "".join(lines).encode()
        self.ended = True


def _records(log: ChunkedLog, lines_per_record: int, book: CursorBook | None = None) -> list[str]:
    shown: list[str] = []
    instance = InstanceStream(
        log, "ns", "j-mpimaster-0", "mpimaster", "p1/mpimaster/0", book or CursorBook(), shown.append,
        is_finished=lambda: log.ended, slots=FollowedLogSlots(0, 1.0), lines_per_record=lines_per_record,
    )  # fmt: skip
    asyncio.run(asyncio.wait_for(instance.run(), 10))
    assert instance.lines_emitted == sum(record.count("line ") for record in shown)  # lines, not records
    return shown


def test_one_record_per_line_by_default():
    assert _records(ChunkedLog([[0, 1, 2], [3]]), 1) == ["line 0", "line 1", "line 2", "line 3"]


def test_the_lines_of_a_chunk_share_records_of_at_most_the_limit_and_never_span_two_chunks():
    shown = _records(ChunkedLog([[0, 1, 2, 3, 4], [5, 6]]), 2)
    assert shown == ["line 0\nline 1", "line 2\nline 3", "line 4", "line 5\nline 6"]


def test_a_notice_comes_after_the_lines_before_it_and_before_the_lines_after_it():
    """A gap the cursor finds (the log rotated between two reads) is told between the lines around it."""
    book = CursorBook()
    _records(ChunkedLog([[0, 1]]), 10, book)
    book.done.clear()
    shown = _records(ChunkedLog([[1, 5, 6]]), 10, book)  # lines 2-4 rotated away: the read resumes at line 1's second
    assert len(shown) == 2 and "may be missing" in shown[0] and shown[1] == "line 5\nline 6"


def test_line_records_emit_what_is_queued_on_flush_and_refuse_a_limit_below_one(monkeypatch):
    shown: list[str] = []
    records = LineRecords(shown.append, 3)
    records.add("a")
    records.flush()
    records.flush()
    assert shown == ["a"]
    monkeypatch.setenv("AIRFLOW__VOLCANO_ARGO__LOG_LINES_PER_RECORD", "0")
    with pytest.raises(ValueError, match="log_lines_per_record"):
        configured_lines_per_record()
