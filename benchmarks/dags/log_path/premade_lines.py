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
    """Log ``count`` pre-made lines into the task log, ``per_record`` lines per record, then fire."""

    def __init__(self, tag: str, count: int, per_record: int = 1):
        super().__init__()
        self.tag = tag
        self.count = count
        self.per_record = per_record

    def serialize(self) -> tuple[str, dict[str, Any]]:
        arguments = {"tag": self.tag, "count": self.count, "per_record": self.per_record}
        return f"{type(self).__module__}.{type(self).__qualname__}", arguments

    async def run(self) -> AsyncIterator[TriggerEvent]:
        lines = [premade_line(self.tag, i) for i in range(self.count)]
        step = max(self.per_record, 1)
        records = ["\n".join(lines[start : start + step]) for start in range(0, len(lines), step)]
        log, per_yield = self.log, max(LINES_PER_YIELD // step, 1)
        for start in range(0, len(records), per_yield):
            for record in records[start : start + per_yield]:
                log.info(record)
            await asyncio.sleep(0)
        yield TriggerEvent({"lines": len(lines)})


class PremadeLinesOperator(BaseOperator):
    """Defer to ``PremadeLinesTrigger``; return how many lines it logged."""

    template_fields = ("tag", "count", "per_record")

    def __init__(self, tag: str, count: int | str, per_record: int | str = 1, **kwargs: Any):
        super().__init__(**kwargs)
        self.tag = tag
        self.count = count
        self.per_record = per_record

    def execute(self, context: Any) -> None:
        trigger = PremadeLinesTrigger(self.tag, int(self.count), int(self.per_record))
        self.defer(trigger=trigger, method_name="execute_complete")

    def execute_complete(self, context: Any, event: dict[str, Any]) -> int:
        return int(event["lines"])
