"""Finish a trigger's clean-up although Airflow's triggerer cancels it again and again.

Once a task instance is killed, the triggerer's supervisor puts its trigger in ``cancelling_triggers`` and sends
that whole set to the trigger runner on every state sync (about once a second) until the trigger has finished
(``airflow/jobs/triggerer_job_runner.py``: ``TriggerRunnerSupervisor._handle_request`` answers
``TriggerStateSync(to_cancel=self.cancelling_triggers)``; ``TriggerRunner.cancel_triggers`` cancels the trigger's
task with the user-action message each time). ``on_kill`` runs inside that task, so every repeat cancels whatever
it awaits: a clean-up needing more than one sync (read the task state, stop, delete) is cut off half done.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable


async def finish_despite_cancels(work: Awaitable[None], limit: float) -> bool:
    """Await ``work`` to its end through repeated cancellation, for at most ``limit`` seconds.

    Return whether it finished (its own error is raised); past ``limit`` it is cancelled, so that a clean-up stuck
    on an unreachable API server cannot hold the trigger, or the triggerer's shutdown, for ever.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    deadline = loop.time() + limit
    while not task.done():
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), remaining)
    if task.done():
        task.result()  # its own error, if any, is the caller's
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False
