"""The log cursor and splitter: no line lost, none repeated, across reconnects and restarts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_volcano_argo.models.log_cursor import (
    LineSplitter,
    LogCursor,
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
