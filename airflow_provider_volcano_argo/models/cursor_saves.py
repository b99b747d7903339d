"""When a follower stores its log cursors, so that a triggerer killed hard repeats only a bounded stretch of log.

A follower stopped cleanly (a triggerer restart, a trigger moved to another triggerer) stores its cursors on its way
out, and the next one repeats no line. One killed hard (SIGKILL, the OOM killer, a lost node) cannot: the next one
resumes from the cursors stored last and shows again every line shown since. Each store is a write: the operator's
follower patches its Workflow (an API request, which also wakes Argo's controller), a sensor's trigger writes an
XCom row (through the triggerer, into Airflow's database). So the cursors are stored only when they moved, and at
most once per ``CURSOR_SAVE_SECONDS``; nothing is written while the log is quiet.

What a hard kill repeats: the lines shown since the last completed store. A store starts at the first check (every
``CHECK_SECONDS``) at which the cursors differ from the stored ones and ``every`` seconds have passed since the last
attempt, so those lines were all shown in the last ``every + CHECK_SECONDS`` seconds (plus one store's round trip).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

#: The bound on what a hard kill repeats, paid for in writes. 90 s is the shortest interval that keeps the
#: operator's follower within issue 15's API budget (<= 2 requests per run-minute besides the log stream) for runs
#: of 5 minutes and longer: start-up costs 6 requests (3 lists, 3 watches) and the last store 1, so a 5-minute run
#: has room for 3 periodic stores. ``benchmarks/api_load.py`` (5 min, a line every 5 s) measured 1.99 per
#: run-minute at 90 s (4 PATCHes), 2.19 at 60 s (over), 1.79 at 100 s and at the former 120 s; by the same count,
#: 76-85 s fit the 5-minute run but put a 5.5- or 6-minute one over. Long runs pay 0.67 PATCH a minute while
#: lines flow, and none while the log is quiet.
CURSOR_SAVE_SECONDS = 90.0
#: How often a follower looks whether its cursors are due.
CHECK_SECONDS = 1.0


def cursors_text(cursors: dict[str, Any]) -> str:
    """Return the cursors as stored and compared: JSON with sorted keys (equal cursors, equal text)."""
    return json.dumps(cursors, sort_keys=True, separators=(",", ":"))


@dataclass
class SaveSchedule:
    """Say when a follower's cursors are due to be stored: moved since the last store, and not stored lately.

    ``started`` (monotonic seconds) counts as the first store: the cursors then are the ones taken up from the
    earlier follower (or none), already where the next one will look.
    """

    started: float
    every: float = CURSOR_SAVE_SECONDS
    stored: str | None = None  # ``cursors_text`` of what was stored last
    last_attempt: float = field(init=False)

    def __post_init__(self) -> None:
        self.last_attempt = self.started

    def taken_up(self, text: str) -> None:
        """Record the cursors an earlier follower stored (and this one took up): storing them again is no news."""
        self.stored = text

    def moved(self, text: str) -> bool:
        """Tell whether the cursors differ from the stored ones."""
        return text != self.stored

    def due(self, text: str, now: float) -> bool:
        """Tell whether to store now: the cursors moved and ``every`` seconds passed since the last attempt."""
        return self.moved(text) and now - self.last_attempt >= self.every

    def attempted(self, now: float) -> None:
        """Record a store's start: a failing store is retried ``every`` seconds later, not at each check."""
        self.last_attempt = now

    def succeeded(self, text: str) -> None:
        """Record what a store wrote."""
        self.stored = text
