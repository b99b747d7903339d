"""The one reconnect policy of every watch and log stream: what is worth another try, and how long to wait.

As client-go's reflector and the kubelet's log readers do: back off from 0.2 s, doubling up to 5 s, after a
dropped connection or a server error; a refusal (401/403, or a 404 of a type served before) may be passing
(RBAC changes reach the authorizer's cache a moment later, a restarting API server refuses until its caches
sync and serves custom resources only once their CRDs are registered again), so it is final only once it has
lasted ``REFUSAL_GRACE_SECONDS``.
"""

from __future__ import annotations

import asyncio
import logging
import time

from airflow_provider_volcano_argo.exceptions import ApiNotFoundError, ApiRefusedError, VolcanoArgoApiError

log = logging.getLogger(__name__)

REFUSAL_GRACE_SECONDS = 15.0
FIRST_BACKOFF_SECONDS = 0.2
MAX_BACKOFF_SECONDS = 5.0


def is_transient(exc: BaseException) -> bool:
    """Tell whether ``exc`` is worth another try: API errors, dropped or timed-out connections, cut JSON."""
    if isinstance(exc, (VolcanoArgoApiError, OSError, asyncio.TimeoutError, ValueError)):
        return True
    return type(exc).__module__.startswith("aiohttp")  # aiohttp's errors share no base class with OSError


class Reconnect:
    """The back-off and the refusal grace of one watch or stream; ``reset()`` after every success."""

    def __init__(self, what: str, refusal_grace: float = REFUSAL_GRACE_SECONDS):
        self.what = what
        self.refusal_grace = refusal_grace
        self.delay = FIRST_BACKOFF_SECONDS
        self.refused_since: float | None = None

    def reset(self) -> None:
        self.delay = FIRST_BACKOFF_SECONDS
        self.refused_since = None

    async def recover(self, exc: BaseException) -> None:
        """Wait before the next try after ``exc``, or raise it: lasting refusals and errors that are not transient."""
        if isinstance(exc, (ApiRefusedError, ApiNotFoundError)):
            self.refused_since = self.refused_since or time.monotonic()
            if time.monotonic() - self.refused_since > self.refusal_grace:
                raise exc
        elif not is_transient(exc):
            raise exc
        log.debug("%s interrupted (%s); resuming in %.1f s", self.what, exc, self.delay)
        await asyncio.sleep(self.delay)
        self.delay = min(self.delay * 2, MAX_BACKOFF_SECONDS)
