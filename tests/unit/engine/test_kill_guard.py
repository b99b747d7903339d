"""``finish_despite_cancels``: a kill's clean-up survives the triggerer's repeated cancels, within a limit."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_volcano_argo.engine.kill_guard import finish_despite_cancels


async def _cancel_every(task: asyncio.Task, seconds: float, times: int) -> None:
    for _ in range(times):
        await asyncio.sleep(seconds)
        task.cancel("user action")  # as TriggerRunner.cancel_triggers does at every state sync


def test_work_cut_by_repeated_cancels_still_finishes():
    steps: list[str] = []

    async def clean_up() -> None:
        for step in ("read state", "stop", "delete"):
            await asyncio.sleep(0.05)
            steps.append(step)

    async def on_kill() -> bool:
        return await finish_despite_cancels(clean_up(), limit=10)

    async def main() -> bool:
        kill = asyncio.ensure_future(on_kill())
        canceller = asyncio.ensure_future(_cancel_every(kill, 0.02, 5))
        finished = await kill
        await canceller
        return finished

    assert asyncio.run(main()) is True
    assert steps == ["read state", "stop", "delete"]


def test_work_past_the_limit_is_cancelled_and_reported():
    ended: list[str] = []

    async def stuck() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise

    assert asyncio.run(finish_despite_cancels(stuck(), limit=0.1)) is False
    assert ended == ["cancelled"]


def test_the_work_s_own_error_reaches_the_caller():
    async def failing() -> None:
        await asyncio.sleep(0)
        raise ValueError("API refused")

    with pytest.raises(ValueError, match="API refused"):
        asyncio.run(finish_despite_cancels(failing(), limit=5))
