"""Airflow's own ceiling for the log path benchmark: a trigger that only logs lines it made before it started.

It goes through the same triggerer, task-log handler and API as the provider's trigger, minus reading a pod's log.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.sdk import BaseOperator
from airflow.triggers.base import BaseTrigger, TriggerEvent

#: Lines logged between two yields to the event loop (the provider's trigger yields once per chunk it reads, a
#: 64 KiB chunk being about 1,000 such lines with the kubelet's timestamps).
LINES_PER_YIELD = 1000


def premade_line(tag: str, i: int) -> str:
    """Return line ``i`` of a run: no line is a part of another, so counting them in a task log is exact."""
    return f"{tag}-line-{i:07d}."


class PremadeLinesTrigger(BaseTrigger):
    """Log ``count`` pre-made lines into the task log, then fire."""

    def __init__(self, tag: str, count: int):
        super().__init__()
        self.tag = tag
        self.count = count

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", {"tag": self.tag, "count": self.count}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        lines = [premade_line(self.tag, i) for i in range(self.count)]
        log = self.log
        for start in range(0, len(lines), LINES_PER_YIELD):
            for line in lines[start : start + LINES_PER_YIELD]:
                log.info(line)
            await asyncio.sleep(0)
        yield TriggerEvent({"lines": len(lines)})


class PremadeLinesOperator(BaseOperator):
    """Defer to ``PremadeLinesTrigger``; return how many lines it logged."""

    template_fields = ("tag", "count")

    def __init__(self, tag: str, count: int | str, **kwargs: Any):
        super().__init__(**kwargs)
        self.tag = tag
        self.count = count

    def execute(self, context: Any) -> None:
        self.defer(trigger=PremadeLinesTrigger(self.tag, int(self.count)), method_name="execute_complete")

    def execute_complete(self, context: Any, event: dict[str, Any]) -> int:
        return int(event["lines"])
