"""Whether a log's first line may come after lines the kubelet rotated away before any read got them.

The kubelet serves only the current log file and rotates it at ``containerLogMaxSize``
(``logs/container_log_manager.go: rotateLatestLog``). A ``LogCursor`` detects lines rotated away after the newest
line shown, but a read that has shown nothing yet has no cursor: when the log rotated before the first read that
gets lines, that read simply begins later. Its first line's stamp against the container instance's start
(``containerStatuses[].state.running.startedAt``; both are the node's clock) tells how much later: what the
container wrote in between, if anything, is gone unread.

Only a read that may have come late can lose the start: one that polls, resumes, reconnects or overflows
(``engine/followed_log_slots.py``). A follow opened as soon as the pod watch showed the container start reads the
file from its beginning and across rotations, so a container that is silent at first is not said to have lost
anything there.
"""

from __future__ import annotations

from dataclasses import dataclass

#: containerd stamps a line when it writes it, a little after the program printed it
START_TOLERANCE_NS = 1_000_000_000
#: ``startedAt`` is ``metav1.Time``: whole seconds, the start itself up to a second later
_STARTED_AT_PRECISION_NS = 1_000_000_000
#: A follow opened within this long after the pod watch showed the instance start counts as open from its start
#: (the watch itself lags the start by about a second: the kubelet's status update)
PROMPT_FOLLOW_SECONDS = 5.0


@dataclass
class StartCoverage:
    """Whether the reads of one instance so far have read its log from its start, with no pause to lose lines in.

    If so, its first line, whenever it comes, is its first: the container was silent until then.

    ``covered_at``: when (``time.monotonic()``) the reads had read everything written until then; at first when the
    pod watch showed the instance start, having shown the pod before without it, and None when it was already
    running when first seen (the follower started or resumed late, or re-listed after a lost watch). A follow opened
    within ``PROMPT_FOLLOW_SECONDS`` of it reads on from there: the kubelet serves the current file from its
    beginning, and a follow reopens it when it rotates (``kuberuntime/logs/logs.go: waitLogs``). A follow that
    ended without an error ended with the container, so a read of the ended instance after it misses nothing either.
    Any other read (polled, overflowing, late) ends the coverage.
    """

    covered_at: float | None = None
    followed_to_end: bool = False

    def opening(self, follow: bool, ended: bool, now: float) -> bool:
        """Tell whether a read that opens ``now`` reads on from the start (its first line needs no check)."""
        if self.covered_at is not None:
            if (ended and self.followed_to_end) or (follow and now - self.covered_at <= PROMPT_FOLLOW_SECONDS):
                return True
            self.covered_at = None
        return False

    def closed(self, follow: bool, clean: bool, now: float) -> None:
        """Record that a read ended ``now``, with an error unless ``clean``."""
        if self.covered_at is not None:
            self.covered_at = now
            self.followed_to_end = follow and clean


def late_start_seconds(first_stamp_ns: int, started_at_ns: int | None) -> float | None:
    """Return the seconds from the instance's start to its log's first line, or None when they are few.

    Few: within the precision of ``startedAt`` and ``START_TOLERANCE_NS``. None also when the start is unknown.
    """
    if not started_at_ns or not first_stamp_ns:
        return None
    late = first_stamp_ns - started_at_ns
    if late <= _STARTED_AT_PRECISION_NS + START_TOLERANCE_NS:
        return None
    return late / 1e9
