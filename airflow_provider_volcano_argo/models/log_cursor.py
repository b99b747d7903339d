"""Container log lines with timestamps, cursors that drop what was already shown, and a bounded line splitter.

Lines are read with ``timestamps=true``: ``2026-12-02T19:00:00.123456789Z text``. The API server forwards
``sinceTime`` to the kubelet at one-second precision (``metav1.Time`` is encoded as RFC 3339 without fractions),
and stdout and stderr lines are not in stamp order in the file, so a reader asks from the second before the
cursor's and drops locally only the lines it has already shown (see ``LogCursor``). One cursor belongs to one
container instance (pod uid + container + restart count): a restarted container writes a new log whose timestamps
may repeat the old one's. A ``CursorBook`` holds the cursors of a run.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class LogLine(NamedTuple):
    """One log line: its timestamp in nanoseconds since the epoch, and its text."""

    # a tuple, not a frozen dataclass: one is made per log line, and a tuple is made in a third of the time
    timestamp_ns: int
    text: str


def parse_timestamp(stamp: str) -> int:
    """Return nanoseconds since the epoch of an RFC 3339 timestamp with 0 to 9 fraction digits."""
    if not stamp.endswith("Z"):
        raise ValueError(f"not a UTC RFC 3339 timestamp: {stamp!r}")
    whole, _, fraction = stamp[:-1].partition(".")
    if fraction and not fraction.isdigit():
        raise ValueError(f"bad fraction in {stamp!r}")
    return _epoch_seconds(whole) * 1_000_000_000 + int((fraction or "0").ljust(9, "0")[:9])


@functools.lru_cache(maxsize=64)
def _epoch_seconds(whole: str) -> int:
    # a fast log has thousands of lines per second: strptime once per second, not once per line
    seconds = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int((seconds - _EPOCH).total_seconds())


def format_timestamp(timestamp_ns: int, with_fraction: bool = True) -> str:
    """Format ``timestamp_ns`` as RFC 3339 (UTC); without the fraction, the start of its second."""
    seconds, nanos = divmod(timestamp_ns, 1_000_000_000)
    whole = (_EPOCH + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{nanos:09d}Z" if with_fraction else f"{whole}Z"


def parse_log_line(raw: bytes | str) -> LogLine | None:
    """Split ``<timestamp> <text>``; None for an empty line. Undecodable bytes are replaced, not fatal."""
    line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    line = line.rstrip("\r\n")
    if not line:
        return None
    stamp, _, text = line.partition(" ")
    try:
        return LogLine(parse_timestamp(stamp), text)
    except ValueError:
        return LogLine(0, line)  # a line without a timestamp (should not happen with timestamps=true)


_SECOND = 1_000_000_000


@dataclass
class LogCursor:
    """Position in one container instance's log: what a read from ``since_time()`` shows again before new lines.

    ``timestamp_ns`` is the newest stamp shown, ``count`` how many lines shown carry a stamp in its second and
    ``previous`` how many in the second before. Stamps are not in file order: containerd stamps a line before its
    stream's write (``pkg/cri/io/logger.go: redirectLogs``), so a stderr line may follow a newer stdout line. A read
    therefore asks from the second before the newest stamp's, and the first ``count + previous`` lines it gets
    (stamped at or before ``timestamp_ns``) are those already shown; every later line of the read is new, whatever
    its stamp. When a stamp newer than ``timestamp_ns`` comes before all of them, lines already shown are gone from
    the file the kubelet serves (it rotated, ``containerLogMaxSize``), so lines between may be missing: ``gap``.
    """

    timestamp_ns: int = 0
    count: int = 0
    previous: int = 0
    #: set by ``accept`` when a read found that gap: (newest stamp shown before, first stamp after it)
    gap: tuple[int, int] | None = field(default=None, compare=False)
    _replay: int = field(default=0, compare=False)
    _replayed: list[int] = field(default_factory=lambda: [0, 0], compare=False)  # this read's, per second
    _floor: int = 0  # no read asks from before this second (a 0.x cursor counted nothing before it)
    _legacy: bool = False  # a cursor of 0.x: ``count`` lines at exactly ``timestamp_ns``, stamps in file order
    _legacy_count: int = 0

    def since_time(self) -> str | None:
        """Return the ``sinceTime`` to resume from (the second before the cursor's), or None for the beginning."""
        if not self.timestamp_ns:
            return None
        second = max(self.timestamp_ns // _SECOND - 1, self._floor)
        return format_timestamp(second * _SECOND, with_fraction=False)

    def position(self) -> tuple[int, int]:
        """Return a comparable position: further along is greater."""
        return (self.timestamp_ns, self.count + self.previous)

    def rewind(self) -> None:
        """Begin a new read from ``since_time()``: its first lines are those shown already."""
        self._replay = self.count + self.previous
        self._replayed = [0, 0]
        if self._legacy:  # count again the lines of the cursor's second, as this read shows them
            self.count, self.previous, self._replay = 0, 0, 0

    def accept(self, line: LogLine) -> bool:
        """Tell whether ``line`` is new, recording it when it is.

        Lines must be offered in the order the log holds them, and each read must begin with ``rewind()``.
        """
        if self._legacy:
            at_cursor = line.timestamp_ns == self.timestamp_ns
            if line.timestamp_ns < self.timestamp_ns or (at_cursor and self._replay < self._legacy_count):
                self._replay += at_cursor
                self.count += 1  # shown by 0.x, which asked from this second
                return False
            self._legacy, self._replay = False, 0
        elif self._replay:
            if line.timestamp_ns <= self.timestamp_ns:
                self._replay -= 1
                self._replayed[line.timestamp_ns // _SECOND < self.timestamp_ns // _SECOND] += 1
                return False
            # the rest of what was shown is no longer in the file: count only what this read found of it
            self.gap = (self.timestamp_ns, line.timestamp_ns)
            self.count, self.previous = self._replayed
            self._replay = 0
        self._record(line.timestamp_ns)
        return True

    def _record(self, stamp: int) -> None:
        second, newest = stamp // _SECOND, self.timestamp_ns // _SECOND
        if stamp > self.timestamp_ns:
            if second == newest:
                self.count += 1
            else:
                self.previous = self.count if second == newest + 1 else 0
                self.count = 1
            self.timestamp_ns = stamp
        elif second == newest:
            self.count += 1
        elif second == newest - 1 and second >= self._floor:
            self.previous += 1
        # older still: the kubelet drops it from any read from since_time() (logs.go: logWriter.write), so a
        # read shows it neither again nor at all

    def to_dict(self) -> dict[str, int]:
        if self._legacy:
            return {"ts": self.timestamp_ns, "n": self._legacy_count}
        saved = {"ts": self.timestamp_ns, "n": self.count, "p": self.previous}
        if self._floor > self.timestamp_ns // _SECOND - 1:
            saved["f"] = self._floor
        return saved

    @classmethod
    def from_dict(cls, data: dict | None) -> LogCursor:
        data = data or {}
        cursor = cls(int(data.get("ts", 0)), int(data.get("n", 0)), int(data.get("p", 0)))
        cursor._floor = int(data.get("f", 0))
        if cursor.timestamp_ns and "p" not in data:  # 0.x asked from the cursor's second: count from there
            cursor._legacy, cursor._legacy_count = True, cursor.count
            cursor._floor = cursor.timestamp_ns // _SECOND
        return cursor


class LineSplitter:
    """Splits a byte stream into lines while holding at most one partial line of ``max_line_bytes``.

    A longer line is cut there and the rest of it dropped, with a marker: memory stays bounded whatever a
    container prints, and lines up to the limit (1 MiB by default) pass whole.
    """

    def __init__(self, max_line_bytes: int = 1024 * 1024):
        self.max_line_bytes = max_line_bytes
        self._partial = bytearray()
        self._overflow = False
        self._cut_marker = b" [line cut at %d bytes]" % max_line_bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        """Return the lines ``chunk`` ends, without their newline; hold the rest of it for the next chunk."""
        # bytes.split does the per-line work in C: a fast log has tens of thousands of lines per second
        lines = chunk.split(b"\n")
        rest = lines.pop()
        if lines:
            first = None
            if self._partial or self._overflow:
                self._append(lines[0])
                first = self._take()
            if len(chunk) > self.max_line_bytes:  # only then can a line that starts and ends in it be too long
                lines = [self._cut(line) for line in lines]
            if first is not None:
                lines[0] = first
        self._append(rest)
        return lines

    def _cut(self, line: bytes) -> bytes:
        if len(line) <= self.max_line_bytes:
            return line
        return line[: self.max_line_bytes] + self._cut_marker

    def _append(self, data: bytes) -> None:
        room = self.max_line_bytes - len(self._partial)
        if len(data) > room:
            self._overflow = True
            data = data[: max(room, 0)]
        self._partial += data

    def _take(self) -> bytes:
        line = bytes(self._partial)
        if self._overflow:
            line += self._cut_marker
        self._partial.clear()
        self._overflow = False
        return line

    def flush(self) -> Iterator[bytes]:
        if self._partial:
            yield self._take()


@dataclass
class CursorBook:
    """Every container instance's cursor, serializable for the trigger kwargs and the Workflow annotation."""

    cursors: dict[str, LogCursor] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)
    headers: set[str] = field(default_factory=set)

    def cursor(self, key: str) -> LogCursor:
        return self.cursors.setdefault(key, LogCursor())

    def to_dict(self, keep: int = 32) -> dict[str, Any]:
        keys = list(self.cursors)[-keep:]
        return {
            "cursors": {k: self.cursors[k].to_dict() for k in keys},
            "done": sorted(k for k in self.done if k in keys),
            "headers": sorted(k for k in self.headers if k in keys),
        }

    @classmethod
    def from_dict(cls, data: dict | None) -> CursorBook:
        data = data or {}
        return cls(
            cursors={k: LogCursor.from_dict(v) for k, v in (data.get("cursors") or {}).items()},
            done=set(data.get("done") or []),
            headers=set(data.get("headers") or []),
        )

    def merge(self, other: CursorBook) -> None:
        """Keep, per instance, whichever cursor is further along."""
        for key, cursor in other.cursors.items():
            mine = self.cursors.get(key)
            if mine is None or cursor.position() > mine.position():
                self.cursors[key] = cursor
        self.done |= other.done
        self.headers |= other.headers
