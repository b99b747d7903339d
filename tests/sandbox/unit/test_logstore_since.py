"""The emulated kubelet's ``sinceTime`` filter: stamp bytes compared instead of parsed, same order as times."""

from __future__ import annotations

from airflow_provider_volcano_argo.sandbox.kubelet.logstore import _parse_stamp, _select, _stamp


def test_stamps_round_trip_and_compare_as_their_times():
    times = [1_700_000_000 * 10**9 + n for n in (0, 1, 999_999_999, 1_000_000_000, 61 * 10**9 + 5)]
    stamps = [_stamp(t) for t in times]
    assert [_parse_stamp(s) for s in stamps] == times
    assert len({len(s) for s in stamps}) == 1 and sorted(stamps) == stamps


def test_select_keeps_lines_at_or_after_since():
    base = 1_764_800_000 * 10**9
    lines = [f"{_stamp(base + n * 400_000_000)} line {n}\n".encode() for n in range(6)]  # 0.0, 0.4 ... 2.0 s
    since = _stamp(base + 10**9).encode()  # a whole second, as clients send sinceTime
    assert [line.split(b" ", 1)[1] for line in lines if _select(line, since)] == [b"line 3\n", b"line 4\n", b"line 5\n"]
    exact = _stamp(base + 800_000_000).encode()
    assert [n for n, line in enumerate(lines) if _select(line, exact)] == [2, 3, 4, 5]
    assert all(_select(line, None) for line in lines)
