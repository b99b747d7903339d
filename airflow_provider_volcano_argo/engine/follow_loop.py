"""The one loop every follower runs: watch, take a step on each change, then let the logs drain.

It starts the follower's watches, wakes on each change (or every second) to take a step, and once the outcome is
known lets the logs read their last lines. Meanwhile a ``CursorKeeper`` stores the log cursors when they are due.

``WorkflowFollower`` (a Workflow and its Volcano Jobs, for the operators) and ``ObjectPhaseFollower`` (one
object, for the sensors) differ only in their watches and in ``step``.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.exceptions import VolcanoArgoApiError
from airflow_provider_volcano_argo.models.follow import FollowOutcome, with_unreadable_log

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.engine.cursor_keeper import CursorKeeper
    from airflow_provider_volcano_argo.engine.pod_log_forwarder import PodLogForwarder
    from airflow_provider_volcano_argo.engine.reflector import ObjectWatcher

#: Wake-ups without a change: deadlines and heartbeats are checked at least this often.
TICK_SECONDS = 1.0


class FollowLoop(abc.ABC):
    """Runs the watches of ``watchers()`` and calls ``step()`` after every change until it returns an outcome.

    With a ``keeper``, the log cursors are stored while following and draining (when due), on the way out of a
    cancelled follow (a triggerer restart: the next follower repeats nothing), and once more at the end.
    """

    def __init__(self, logs: PodLogForwarder | None = None, keeper: CursorKeeper | None = None) -> None:
        self.logs = logs
        self.keeper = keeper
        self.changed = asyncio.Event()

    @abc.abstractmethod
    def watchers(self) -> list[ObjectWatcher]:
        """Return the watches to run; their callbacks set ``self.changed``."""

    @abc.abstractmethod
    async def step(self, now: float) -> FollowOutcome | None:
        """Report progress and return the outcome once it is known (``now``: epoch seconds)."""

    async def before_drain(self, outcome: FollowOutcome) -> None:
        """Report the last progress, before the logs' last lines."""
        return None

    async def follow(self) -> FollowOutcome:
        """Follow until the outcome is known and the logs are read; API errors become an ``error`` outcome."""
        keeping = asyncio.create_task(self.keeper.keep()) if self.keeper is not None else None
        try:
            outcome = await self._watch()
            await self.before_drain(outcome)
            if self.logs is not None:
                outcome = await self._drain(self.logs, outcome)
        except asyncio.CancelledError:  # a triggerer restart: stop reading, keep the place for the next follower
            if self.logs is not None:
                self.logs.cancel()
            await _stopped(keeping)
            if self.keeper is not None:
                await self.keeper.save_on_the_way_out()
            raise
        finally:
            # Whatever ended the follow: no store after it. Not even at the end: the event carries the cursors,
            # and one PATCH less per run keeps the per-run list of the Jobs' pods within the API budget; a trigger
            # run again because its event was lost (a hard kill in between) repeats what a hard kill repeats.
            await _stopped(keeping)
        return outcome

    async def _watch(self) -> FollowOutcome:
        tasks: list[asyncio.Task] = []
        outcome: FollowOutcome | None = None
        try:
            tasks = [asyncio.create_task(watcher.run()) for watcher in self.watchers()]
            while outcome is None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), timeout=TICK_SECONDS)
                self.changed.clear()
                for task in tasks:
                    if task.done() and task.exception():
                        raise task.exception()  # type: ignore[misc]
                if self.logs is not None:
                    self.logs.raise_failure()
                outcome = await self.step(time.time())
        except VolcanoArgoApiError as exc:
            outcome = FollowOutcome("error", str(exc), reason="api_error")
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # their connections are closed
        return outcome

    @staticmethod
    async def _drain(logs: PodLogForwarder, outcome: FollowOutcome) -> FollowOutcome:
        await logs.drain(bounded=not outcome.run_ended)
        try:
            logs.raise_failure()
        except VolcanoArgoApiError as exc:
            outcome = with_unreadable_log(outcome, str(exc))
        return outcome


async def _stopped(task: asyncio.Task | None) -> None:
    """Cancel ``task`` and wait until it has ended (a store it was making is abandoned, not left running)."""
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
