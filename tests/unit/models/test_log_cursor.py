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


def _read_with_disconnects(lines: list[bytes], cuts: list[int]) -> list[str]:
    """Read ``lines`` as reads cut at ``cuts`` would: each from the cursor's ``sinceTime`` (the kubelet drops older
    lines), each by a new cursor taken from the last one's dict (what a new trigger gets); return what was shown.
    """
    cursor, shown = LogCursor(), []
    for cut in sorted(set(c % (len(lines) + 1) for c in cuts)) + [len(lines)]:
        since = cursor.since_time()
        start_ns = parse_timestamp(since) if since else 0
        cursor.rewind()
        for raw in lines[:cut]:
            parsed = parse_log_line(raw)
            if parsed.timestamp_ns >= start_ns and cursor.accept(parsed):
                shown.append(parsed.text)
        assert cursor.gap is None  # the same lines read again: nothing rotated away
        cursor = LogCursor.from_dict(cursor.to_dict())
    return shown


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
    assert _read_with_disconnects(lines, cuts) == [f"line-{i}" for i in range(len(lines))]


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
SECOND = 1_000_000_000


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


def test_a_cursor_resumes_from_the_second_before_its_own():
    assert LogCursor().since_time() is None
    assert LogCursor(T0, 1).since_time() == "2026-12-02T18:59:59Z"


def test_a_cursor_counts_the_lines_of_its_second_and_of_the_one_before():
    cursor = LogCursor()
    assert cursor.accept(LogLine(T0, "a")) and cursor.accept(LogLine(T0, "b"))
    assert (cursor.timestamp_ns, cursor.count, cursor.previous) == (T0, 2, 0)
    assert cursor.accept(LogLine(T0 + SECOND, "c"))
    assert (cursor.timestamp_ns, cursor.count, cursor.previous) == (T0 + SECOND, 1, 2)
    assert cursor.accept(LogLine(T0 + 3 * SECOND, "d"))
    assert (cursor.timestamp_ns, cursor.count, cursor.previous) == (T0 + 3 * SECOND, 1, 0)
    assert cursor.to_dict() == {"ts": T0 + 3 * SECOND, "n": 1, "p": 0}


def test_a_live_read_keeps_a_line_stamped_before_the_one_ahead_of_it():
    """A stderr line that containerd stamped before the stdout line written ahead of it: both are new."""
    cursor = LogCursor()
    assert cursor.accept(LogLine(T0 + 5, "stdout, stamped second"))
    assert cursor.accept(LogLine(T0 + 3, "stderr, stamped first"))
    assert cursor.accept(LogLine(T0 - SECOND, "stderr, the second before"))
    assert (cursor.timestamp_ns, cursor.count, cursor.previous) == (T0 + 5, 2, 1)
    cursor.rewind()  # a read from the second before shows those three again first, then what is new
    assert [cursor.accept(LogLine(ts, "")) for ts in (T0 + 5, T0 + 3, T0 - SECOND, T0 + 1, T0 + 6)] == [
        False,
        False,
        False,
        True,
        True,
    ]
    assert cursor.gap is None


def test_a_read_that_finds_newer_lines_where_shown_ones_were_reports_a_gap():
    """The kubelet serves only the current file: after a rotation the lines shown are no longer there."""
    cursor = LogCursor()
    for i in range(3):
        cursor.accept(LogLine(T0 + i, f"line {i}"))
    cursor.rewind()
    assert cursor.accept(LogLine(T0 + 9, "line 9"))  # lines 3 to 8 rotated away unread
    assert cursor.gap == (T0 + 2, T0 + 9)
    cursor.gap = None
    cursor.rewind()  # the next read of the same file: line 9 again, then on
    assert not cursor.accept(LogLine(T0 + 9, "line 9")) and cursor.accept(LogLine(T0 + 10, "line 10"))
    assert cursor.gap is None


def test_a_cursor_from_nothing_starts_at_the_beginning():
    assert LogCursor.from_dict(None) == LogCursor.from_dict({}) == LogCursor(0, 0)
    assert LogCursor.from_dict({"ts": str(T0), "n": 2, "p": 1}) == LogCursor(T0, 2, 1)


def test_a_cursor_stored_by_0_x_resumes_from_its_own_second_without_repeating():
    """0.x stored the last stamp and how many lines carried exactly that stamp, and read from that second."""
    stamps = [T0 - SECOND, T0 - 7, T0, T0, T0 + 4, T0 + SECOND]
    cursor = LogCursor.from_dict({"ts": T0, "n": 1})  # 0.x showed lines 0 to 2
    assert cursor.since_time() == "2026-12-02T19:00:00Z"
    start = parse_timestamp(cursor.since_time())
    cursor.rewind()
    shown = [i for i, ts in enumerate(stamps) if ts >= start and cursor.accept(LogLine(ts, ""))]
    assert shown == [3, 4, 5]
    saved = cursor.to_dict()
    assert saved == {"ts": T0 + SECOND, "n": 1, "p": 4}
    again = LogCursor.from_dict(saved)  # stored once more and resumed: nothing shown twice
    assert again.since_time() == "2026-12-02T19:00:00Z"
    again.rewind()
    start = parse_timestamp(again.since_time())
    assert [i for i, ts in enumerate(stamps) if ts >= start and again.accept(LogLine(ts, ""))] == []
    # stored before a line of a later second came: the next read still asks from the 0.x cursor's second
    still = LogCursor.from_dict({"ts": T0, "n": 1})
    still.rewind()
    for ts in stamps[1:4]:
        still.accept(LogLine(ts, ""))
    assert still.to_dict() == {"ts": T0, "n": 3, "p": 0, "f": T0 // SECOND}
    assert LogCursor.from_dict(still.to_dict()).since_time() == "2026-12-02T19:00:00Z"


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 9)), min_size=1, max_size=60),
    st.lists(st.integers(min_value=0, max_value=60), max_size=6),
)
def test_resuming_out_of_stamp_order_shows_every_line_once(steps, cuts):
    """Stamps up to 0.9 s older than a line ahead of them (stdout and stderr stamped before their writes); the
    reader disconnects anywhere and resumes from its ``sinceTime``, which the kubelet applies line by line.
    """
    base = parse_timestamp("2026-12-02T19:00:00Z")
    stamps, now = [], base
    for step, lag in steps:
        now += step * 200_000_000
        stamps.append(now - lag * 100_000_000)
    lines = _log(stamps)
    assert _read_with_disconnects(lines, cuts) == [f"line-{i}" for i in range(len(lines))]


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
    assert saved["cursors"]["p39/c/0"] == {"ts": T0 + 39, "n": 1, "p": 0}
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
