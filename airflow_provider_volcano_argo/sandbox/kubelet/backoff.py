"""The kubelet's crash-loop back-off of one container: when an exited container may start again.

Follows ``pkg/kubelet/kuberuntime/kuberuntime_manager.go: doBackOff`` over client-go's
``util/flowcontrol/backoff.go: Backoff`` (``IsInBackOffSince``, ``Next``, ``hasExpired``), as the kubelet builds it
(``kubelet.go: NewMainKubelet``, ``flowcontrol.NewBackOff(backOffPeriod, MaxContainerBackOff)``: 10 s, 300 s). The
first restart is immediate: ``doBackOff`` finds no entry yet, so it is not in back-off, and ``Next`` only records
the initial delay. Each later exit waits the entry's delay from the exit's ``FinishedAt``, doubling up to the
maximum; an entry untouched for twice the maximum has expired and starts again.
"""

from __future__ import annotations

from dataclasses import dataclass

BACKOFF_START, BACKOFF_MAX = 10.0, 300.0  # kubelet.go: backOffPeriod, MaxContainerBackOff


@dataclass
class CrashLoopBackOff:
    """One container's back-off entry; times are ``time.monotonic()`` seconds, delays already scaled."""

    initial: float = BACKOFF_START
    maximum: float = BACKOFF_MAX
    delay: float | None = None  # no entry yet
    last_update: float = 0.0

    def _expired(self, now: float) -> bool:
        return self.delay is None or now - self.last_update > 2 * self.maximum

    def remaining(self, finished_at: float, now: float) -> float:
        """Return how long a container that exited at ``finished_at`` still waits (0: restart now)."""
        if self._expired(finished_at):
            return 0.0
        assert self.delay is not None
        return max(self.delay - (now - finished_at), 0.0)

    def next(self, finished_at: float, now: float) -> None:
        """Record a restart at ``now`` of a container that exited at ``finished_at`` (``Next(key, ts)``).

        The next exit waits twice as long, or the initial delay when the entry had expired.
        """
        if self._expired(finished_at):
            self.delay = self.initial
        else:
            assert self.delay is not None
            self.delay = min(self.delay * 2, self.maximum)
        self.last_update = now
