"""Stream one container instance's log into the task log: in order, nothing lost, nothing repeated.

Each container instance (pod uid + container + restart count) has its own ``LogCursor``. Reading starts at the
cursor's ``sinceTime`` (second precision on the wire) and the cursor drops what was already shown, so a dropped
connection, an API server restart or a new trigger (triggerer restart) resumes exactly where the last one stopped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from airflow_provider_volcano_argo.errors import KubernetesApiError
from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook
from airflow_provider_volcano_argo.logs import LineSplitter, LogCursor, parse_log_line
from airflow_provider_volcano_argo.watchers import FORBIDDEN_GRACE_SECONDS

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 1024 * 1024
TAIL_LINES = 20


def instance_key(pod_uid: str, container: str, restart_count: int) -> str:
    """Cursor key of one container instance: a restart or a re-created pod starts a new log."""
    return f"{pod_uid}/{container}/{restart_count}"


@dataclass
class CursorBook:
    """Every instance's cursor, serializable for the trigger kwargs and the Workflow annotation."""

    cursors: dict[str, LogCursor] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)
    headers: set[str] = field(default_factory=set)

    def cursor(self, key: str) -> LogCursor:
        return self.cursors.setdefault(key, LogCursor())

    def to_dict(self, keep: int = 32) -> dict:
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
    tail: deque = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    lines_emitted: int = 0

    async def run(self) -> None:
        """Stream until the instance ended (or its pod is gone), reconnecting from the cursor as needed."""
        if self.key in self.book.done:
            return
        if self.header and self.key not in self.book.headers:
            self.emit(self.header)
            self.book.headers.add(self.key)
        cursor = self.book.cursor(self.key)
        backoff = 0.2
        denied_since: float | None = None
        while True:
            finished_before = self.is_finished()
            try:
                await self._read(cursor, follow=not finished_before)
                backoff = 0.2
            except KubernetesApiError as exc:
                if exc.status == 404:  # pod deleted: what was streamed is all there is
                    break
                if exc.status in (401, 403):
                    denied_since = denied_since or time.monotonic()
                    if time.monotonic() - denied_since > FORBIDDEN_GRACE_SECONDS:
                        raise
                await asyncio.sleep(backoff)  # 400 while the container is still being created, 5xx, ...
                backoff = min(backoff * 2, 5.0)
                continue
            except (OSError, asyncio.TimeoutError) as exc:
                log.debug("log stream of %s interrupted: %s", self.pod, exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            if finished_before:
                break  # a complete read of an ended instance: nothing more can come
            if self.is_finished():
                continue  # the follow stream ended with the container: one more read catches the tail
        self.book.done.add(self.key)

    async def _read(self, cursor: LogCursor, follow: bool) -> None:
        splitter = LineSplitter(MAX_LINE_BYTES)
        cursor.rewind()
        async for chunk in self.hook.stream_log(self.pod, self.container, self.namespace, cursor.since_time(), follow):
            for raw in splitter.feed(chunk):
                self._accept(cursor, raw)
        for raw in splitter.flush():
            self._accept(cursor, raw)

    def _accept(self, cursor: LogCursor, raw: bytes) -> None:
        line = parse_log_line(raw)
        if line is None or not cursor.accept(line):
            return
        text = self.prefix + line.text
        self.emit(text)
        self.tail.append(text)
        self.lines_emitted += 1
