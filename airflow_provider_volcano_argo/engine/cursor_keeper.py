"""Keep a follower's log cursors where the next follower finds them, when ``models/cursor_saves.py`` says so.

Where they are kept is the follower's: the operator's on its Workflow (an annotation, read back with the Workflow
watch's first list), a sensor's trigger in an XCom of its task instance. The keeper runs while the follower
follows and drains its logs, and stores on the way out of a cancelled follower; not at the end (the event
carries the cursors).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from airflow_provider_volcano_argo.models.cursor_saves import (
    CHECK_SECONDS,
    CURSOR_SAVE_SECONDS,
    SaveSchedule,
    cursors_text,
)
from airflow_provider_volcano_argo.models.log_cursor import CursorBook

#: How long a cancelled follower waits for its last store: a triggerer stopping waits for its triggers (Airflow
#: SIGKILLs a trigger runner still running 10 s after SIGTERM), and a store can hang where the channel to Airflow
#: is already closed (a sensor's XCom while the whole triggerer stops).
STOP_STORE_SECONDS = 5.0
#: Writes the cursors (``CursorBook.to_dict()``); returns whether they were written. Never raises: a lost store
#: only means more lines repeated after a hard kill, never a failed run.
StoreCursors = Callable[[dict[str, Any]], Awaitable[bool]]


class CursorStore(Protocol):
    """Where a follower that reads its cursors itself keeps them (a sensor's trigger: an XCom)."""

    async def load(self) -> dict[str, Any] | None:
        """Return the cursors stored last, or None (none stored, or unreadable)."""

    async def save(self, cursors: dict[str, Any]) -> bool:
        """Store ``cursors``; return whether they were stored."""


class CursorKeeper:
    """Stores ``book`` through ``store`` when due; ``ready`` once the earlier follower's cursors are taken up."""

    def __init__(self, book: CursorBook, store: StoreCursors):
        self.book, self.store = book, store
        # read here, not as a default argument: tests and benchmarks set the module's value to measure others
        self.schedule = SaveSchedule(started=time.monotonic(), every=CURSOR_SAVE_SECONDS)
        self.ready = False  # storing before the earlier cursors are known would overwrite them with less
        self.stores = 0  # completed stores (benchmarks count them)
        self._lock = asyncio.Lock()

    def take_up(self, saved: dict[str, Any] | None) -> None:
        """Merge the cursors an earlier follower stored (None: there are none), then allow storing.

        The book as it is then is where a next follower would begin anyway: no news to store.
        """
        if saved:
            self.book.merge(CursorBook.from_dict(saved))
        self.schedule.taken_up(cursors_text(self.book.to_dict()))
        self.ready = True

    async def keep(self) -> None:
        """Store the cursors whenever they are due, until cancelled."""
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            await self.save(only_when_due=True)

    async def save_on_the_way_out(self) -> None:
        """Store the cursors of a cancelled follower; give up after ``STOP_STORE_SECONDS``.

        Shielded: the cancellation that ends the follower does not end the store.
        """
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.save()), STOP_STORE_SECONDS)

    async def save(self, only_when_due: bool = False) -> None:
        """Store the cursors if they moved (and, with ``only_when_due``, if the schedule says so)."""
        if not self.ready:
            return
        async with self._lock:  # the periodic store and the last one never write out of order
            cursors = self.book.to_dict()
            text, now = cursors_text(cursors), time.monotonic()
            if not (self.schedule.due(text, now) if only_when_due else self.schedule.moved(text)):
                return
            self.schedule.attempted(now)
            if await self.store(cursors):
                self.schedule.succeeded(text)
                self.stores += 1
