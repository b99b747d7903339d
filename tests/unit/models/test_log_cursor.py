"""The log cursor and splitter: no line lost, none repeated, across reconnects and restarts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_volcano_argo.models.log_cursor import (
    CursorBook,
    LineSplitter,
    LogCursor,
    LogLine,
    format_timestamp,
    parse_log_line,
    parse_timestamp,
)


def test_timestamps_round_trip_with_nanoseconds():
    ns = parse_timestamp("2026-12-02T19:00:00.123456789Z")
    assert ns % 1_000_000_000 == 123456789
    assert format_timestamp(ns) == "2026-12-02T19:00:00.123456789Z"
    assert format_timestamp(ns, with_fraction=False) == "2026-12-02T19:00:00Z"
    assert parse_timestamp("2026-12-02T19:00:00Z") == ns - 123456789
    assert parse_timestamp("2026-12-02T19:00:00.5Z") == ns - 123456789 + 500_000_000


def test_parse_line_keeps_text_and_survives_bad_bytes():
    line = parse_log_line(b"2026-12-02T19:00:00.000000001Z Hello world from processor x\n")
    assert line.text == "Hello world from processor x"
    assert parse_log_line(b"2026-12-02T19:00:00Z \xff\xfe").text == "\ufffd\ufffd"
    assert parse_log_line(b"\n") is None


def _log(stamps: list[int]) -> list[bytes]:
    return [f"{format_timestamp(ts)} line-{i}".encode() for i, ts in enumerate(stamps)]


@given(
    st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=60),
    st.lists(st.integers(min_value=0, max_value=60), max_size=6),
)
def test_resuming_from_the_second_shows_every_line_once(steps, cuts):
    """Timestamps that repeat and cross second boundaries; the reader disconnects at arbitrary points and
    resumes with sinceTime truncated to the second, as the API server sends it to the kubelet.
    """
    base = parse_timestamp("2026-12-02T19:00:00Z")
    stamps, now = [], base
    for step in steps:  # step 1 repeats the timestamp; others jump by up to 0.4 s
        now += 0 if step == 1 else step * 100_000_000
        stamps.append(now)
    lines = _log(stamps)
    cursor, shown = LogCursor(), []
    cut_points = sorted(set(c % (len(lines) + 1) for c in cuts)) + [len(lines)]
    for cut in cut_points:
        since = cursor.since_time()
        start_ns = parse_timestamp(since) if since else 0
        cursor.rewind()
        for raw in lines[:cut]:
            parsed = parse_log_line(raw)
            if parsed.timestamp_ns >= start_ns and cursor.accept(parsed):
                shown.append(parsed.text)
        cursor = LogCursor.from_dict(cursor.to_dict())  # what a new trigger gets from its kwargs
    assert shown == [f"line-{i}" for i in range(len(lines))]


def test_splitter_bounded_and_whole_lines():
    splitter = LineSplitter(max_line_bytes=100)
    out = list(splitter.feed(b"abc\nde")) + list(splitter.feed(b"f\n" + b"x" * 250)) + list(splitter.flush())
    assert out[:2] == [b"abc", b"def"]
    assert out[2].startswith(b"x" * 100) and out[2].endswith(b"[line cut at 100 bytes]")
    big = LineSplitter()  # 64 KiB lines pass whole
    line = b"y" * 65536
    assert list(big.feed(line[:1000])) == [] and list(big.feed(line[1000:] + b"\n")) == [line]


def test_splitter_cuts_a_long_line_inside_one_chunk_and_one_completing_a_partial_line_once():
    splitter = LineSplitter(max_line_bytes=100)
    cut = b" [line cut at 100 bytes]"
    assert splitter.feed(b"a\n" + b"z" * 150 + b"\nb\n" + b"w" * 60) == [b"a", b"z" * 100 + cut, b"b"]
    # a chunk longer than the limit that completes a held line: the held part counts towards the limit
    assert splitter.feed(b"w" * 60 + b"\nc\n" + b"e" * 50) == [b"w" * 100 + cut, b"c"]
    assert splitter.feed(b"d") == [] and list(splitter.flush()) == [b"e" * 50 + b"d"]


T0 = parse_timestamp("2026-12-02T19:00:00.5Z")


def test_timestamps_that_are_not_utc_rfc_3339_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"not a UTC RFC 3339 timestamp: '2026-12-02T19:00:00\+01:00'"):
        parse_timestamp("2026-12-02T19:00:00+01:00")
    with pytest.raises(ValueError, match=r"bad fraction in '2026-12-02T19:00:00\.5sZ'"):
        parse_timestamp("2026-12-02T19:00:00.5sZ")
    # digits past the nanosecond are dropped
    assert parse_timestamp("2026-12-02T19:00:00.1234567899Z") % 1_000_000_000 == 123456789


def test_a_line_keeps_its_text_as_written():
    assert parse_log_line("2026-12-02T19:00:00.5Z ends in X  \r\n") == LogLine(T0, "ends in X  ")
    assert parse_log_line(b"2026-12-02T19:00:00.5Z ends in X\r\n") == LogLine(T0, "ends in X")
    assert parse_log_line("2026-12-02T19:00:00.5Z \tindented") == LogLine(T0, "\tindented")
    assert parse_log_line(b"no timestamp here\n") == LogLine(0, "no timestamp here")


def test_a_cursor_resumes_from_the_start_of_its_second():
    assert LogCursor().since_time() is None
    assert LogCursor(T0, 1).since_time() == "2026-12-02T19:00:00Z"


def test_a_cursor_moves_to_a_later_timestamp_and_counts_lines_at_one():
    cursor = LogCursor()
    assert cursor.accept(LogLine(T0, "a")) and cursor.accept(LogLine(T0, "b"))
    assert (cursor.timestamp_ns, cursor.count) == (T0, 2)
    assert cursor.accept(LogLine(T0 + 1, "c"))
    assert (cursor.timestamp_ns, cursor.count) == (T0 + 1, 1)
    assert not cursor.accept(LogLine(T0, "a"))
    cursor.rewind()
    assert not cursor.accept(LogLine(T0 + 1, "c")) and cursor.accept(LogLine(T0 + 1, "d"))
    assert cursor.to_dict() == {"ts": T0 + 1, "n": 2}


def test_a_cursor_from_nothing_starts_at_the_beginning():
    assert LogCursor.from_dict(None) == LogCursor.from_dict({}) == LogCursor(0, 0)
    assert LogCursor.from_dict({"ts": str(T0), "n": 2}) == LogCursor(T0, 2)


def test_splitter_limits_are_inclusive():
    splitter = LineSplitter(max_line_bytes=100)
    assert splitter.feed(b"x" * 100 + b"\n") == [b"x" * 100]  # a line of the limit, in one chunk: whole
    assert splitter.feed(b"y" * 60) == [] and splitter.feed(b"y" * 40 + b"\n") == [b"y" * 100]  # across chunks
    assert splitter.feed(b"z" * 100) == []
    assert splitter.feed(b"zz\n") == [b"z" * 100 + b" [line cut at 100 bytes]"]  # held full: nothing more taken


def _book() -> CursorBook:
    book = CursorBook()
    for i in range(40):
        book.cursor(f"p{i}/c/0").accept(LogLine(T0 + i, "x"))
    book.done = {"p0/c/0", "p39/c/0"}
    book.headers = {"p1/c/0", "p38/c/0", "p39/c/0"}
    return book


def test_a_cursor_book_keeps_the_latest_32_instances():
    saved = _book().to_dict()
    assert list(saved["cursors"]) == [f"p{i}/c/0" for i in range(8, 40)]
    assert saved["cursors"]["p39/c/0"] == {"ts": T0 + 39, "n": 1}
    assert saved["done"] == ["p39/c/0"] and saved["headers"] == ["p38/c/0", "p39/c/0"]
    assert list(_book().to_dict(keep=2)["cursors"]) == ["p38/c/0", "p39/c/0"]


def test_a_cursor_book_round_trips():
    saved = _book().to_dict()
    restored = CursorBook.from_dict(saved)
    assert restored.to_dict() == saved
    assert restored.cursors["p8/c/0"] == LogCursor(T0 + 8, 1)
    assert restored.done == {"p39/c/0"} and restored.headers == {"p38/c/0", "p39/c/0"}
    assert CursorBook.from_dict(None) == CursorBook.from_dict({}) == CursorBook()


def test_merging_keeps_the_cursor_further_along_and_every_mark():
    mine, theirs = CursorBook(), CursorBook()
    mine.cursors = {"a": LogCursor(T0, 2), "b": LogCursor(T0 + 5, 1), "c": LogCursor(T0, 1)}
    theirs.cursors = {"a": LogCursor(T0, 3), "b": LogCursor(T0 + 4, 9), "c": LogCursor(T0, 1), "d": LogCursor(T0, 1)}
    mine.done, theirs.done = {"a"}, {"d"}
    mine.headers, theirs.headers = {"b"}, {"c"}
    same_c = mine.cursors["c"]
    mine.merge(theirs)
    assert mine.cursors == {
        "a": LogCursor(T0, 3),
        "b": LogCursor(T0 + 5, 1),
        "c": LogCursor(T0, 1),
        "d": LogCursor(T0, 1),
    }
    assert mine.cursors["c"] is same_c  # an equal cursor is kept, not replaced
    assert mine.done == {"a", "d"} and mine.headers == {"b", "c"}
