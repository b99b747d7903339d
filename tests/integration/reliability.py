"""The reliability table (issue R1-R13): each scenario test records one row; the run prints the table at its end
and, with ``VOLCANO_ARGO_RELIABILITY_REPORT=file``, writes the rows as JSON (``benchmarks/reliability.py``)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass

import pytest

ROWS = pytest.StashKey[list]()
KINDS_LEFT = ("workflows", "vcjobs", "podgroups", "pods")
COLUMNS = ("scenario", "result", "lines expected", "delivered", "repeated", "objects left", "clean-up s")


@dataclass
class Row:
    """One scenario's figures; ``result`` is filled from the test's outcome."""

    scenario: str
    nodeid: str
    expected: int | None = None
    delivered: int | None = None
    repeated: int | None = None
    objects_left: int | None = None
    cleanup_seconds: float | None = None
    result: str = "not run"

    def cells(self) -> list[str]:
        def show(value):
            return "-" if value is None else f"{value:.1f}" if isinstance(value, float) else str(value)

        return [self.scenario, self.result, *map(show, (self.expected, self.delivered, self.repeated)),
                show(self.objects_left), show(self.cleanup_seconds)]  # fmt: skip


def numbered_lines(tag: str, count: int) -> list[str]:
    """Lines no one of which is a substring of another, so counting them in a log is exact."""
    return [f"{tag}-line-{i:06d}." for i in range(count)]


def line_counts(log: str, expected: list[str], times: int = 1) -> tuple[int, int]:
    """(delivered, repeated): lines of ``expected`` present ``times`` times or more, and occurrences beyond that."""
    counts = [log.count(line) for line in expected]
    return sum(c >= times for c in counts), sum(max(c - times, 0) for c in counts)


def leftovers(sandbox, namespace: str, timeout: float = 90.0, selector: str | None = None) -> tuple[int, float]:
    """Wait until no Workflow, Volcano Job, PodGroup or pod is left in ``namespace``: (objects left, seconds)."""
    started = time.monotonic()
    while True:
        left = sum(len(sandbox.api.list(kind, namespace, selector)["items"]) for kind in KINDS_LEFT)
        if left == 0 or time.monotonic() - started > timeout:
            return left, round(time.monotonic() - started, 1)
        time.sleep(0.2)


def format_table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in sorted(rows, key=lambda r: _order(r.scenario))]
    return "\n".join(lines)


def _order(scenario: str) -> tuple[int, str]:
    head = scenario.split()[0]
    return (int(head[1:]) if head[1:].isdigit() else 99, scenario)


def write_report(rows: list[Row]) -> None:
    target = os.environ.get("VOLCANO_ARGO_RELIABILITY_REPORT")
    if target:
        with open(target, "w") as out:
            json.dump([asdict(r) for r in rows], out, indent=1)
