"""A limit on the log streams one triggerer follows at once; the logs beyond it are read every few seconds.

A followed ``pods/log`` request holds its HTTP/1.1 connection for the life of the container, and CPython's asyncio
gives every TLS connection a 256 KiB read buffer (``asyncio.sslproto.SSLProtocol``): about 300 KiB of triggerer
memory per followed log, most of what a deferred run costs there (``benchmarks/triggerer_capacity.py``). Up to
``[volcano_argo] max_followed_logs`` logs per event loop (the triggerer runs every trigger in one) are followed;
the others are read every ``[volcano_argo] overflow_log_poll_interval`` seconds over pooled connections, from their
cursors (nothing lost or repeated), and such a log is followed again at its next read after a followed log ended.
"""

from __future__ import annotations

import asyncio
import weakref

SECTION = "volcano_argo"
DEFAULT_MAX_FOLLOWED_LOGS = 100
DEFAULT_OVERFLOW_POLL_SECONDS = 10.0


class FollowedLogSlots:
    """Counts the followed logs of one event loop against ``limit`` (0: no limit)."""

    def __init__(self, limit: int, overflow_poll_interval: float):
        self.limit = limit
        self.overflow_poll_interval = overflow_poll_interval
        self.held = 0

    def try_acquire(self) -> bool:
        """Take a slot if one is free; the caller must ``release()`` it when its follow read ends."""
        if self.limit and self.held >= self.limit:
            return False
        self.held += 1
        return True

    def release(self) -> None:
        self.held -= 1


def configured_limits() -> tuple[int, float]:
    """Read ``(max_followed_logs, overflow_log_poll_interval)`` from Airflow's configuration; refuse bad values."""
    from airflow.configuration import conf

    limit = conf.getint(SECTION, "max_followed_logs", fallback=DEFAULT_MAX_FOLLOWED_LOGS)
    interval = conf.getfloat(SECTION, "overflow_log_poll_interval", fallback=DEFAULT_OVERFLOW_POLL_SECONDS)
    if limit < 0:
        raise ValueError(f"[{SECTION}] max_followed_logs must be >= 0 (0: no limit), got {limit}")
    if not interval > 0:
        raise ValueError(f"[{SECTION}] overflow_log_poll_interval must be a number of seconds > 0, got {interval}")
    return limit, interval


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FollowedLogSlots] = weakref.WeakKeyDictionary()


def followed_log_slots() -> FollowedLogSlots:
    """Return the running event loop's slots, made from the configuration on first use."""
    loop = asyncio.get_running_loop()
    slots = _BY_LOOP.get(loop)
    if slots is None:
        slots = _BY_LOOP[loop] = FollowedLogSlots(*configured_limits())
    return slots
