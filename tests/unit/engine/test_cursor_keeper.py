"""When a follower stores its log cursors: not before the earlier ones are taken up, when due, when cancelled
(while following or draining), and not at the end (store and watches faked: pure asyncio).
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_volcano_argo.engine import cursor_keeper
from airflow_provider_volcano_argo.engine.cursor_keeper import CursorKeeper
from airflow_provider_volcano_argo.engine.follow_loop import FollowLoop
from airflow_provider_volcano_argo.models.follow import FollowOutcome
from airflow_provider_volcano_argo.models.log_cursor import CursorBook, LogLine


class Store:
    """Records what was stored; fails while ``failing``."""

    def __init__(self) -> None:
        self.stored: list[dict] = []
        self.failing = False

    async def __call__(self, cursors: dict) -> bool:
        if self.failing:
            return False
        self.stored.append(cursors)
        return True


def _show(book: CursorBook, timestamp_ns: int) -> None:
    assert book.cursor("pod-0").accept(LogLine(timestamp_ns, "a line"))


@pytest.fixture
def fast(monkeypatch):
    """Check every millisecond, store at most every ``every`` (0: at every check)."""
    monkeypatch.setattr(cursor_keeper, "CHECK_SECONDS", 0.001)
    monkeypatch.setattr(cursor_keeper, "CURSOR_SAVE_SECONDS", 0.0)


def test_nothing_is_stored_before_the_earlier_cursors_are_taken_up_then_they_are_merged_not_overwritten():
    async def scenario():
        book, store = CursorBook(), Store()
        keeper = CursorKeeper(book, store)
        _show(book, 5)
        await keeper.save()
        assert store.stored == []  # would have overwritten the earlier follower's cursors (at 9) with less
        keeper.take_up({"cursors": {"pod-0": {"ts": 9, "n": 1}}})
        assert book.cursor("pod-0").position() == (9, 1)
        await keeper.save()
        assert store.stored == []  # what was taken up is stored already
        _show(book, 10)
        await keeper.save()
        assert store.stored == [book.to_dict()]

    asyncio.run(scenario())


def test_the_keeper_stores_when_the_cursors_moved_and_only_then(fast):
    async def scenario():
        book, store = CursorBook(), Store()
        keeper = CursorKeeper(book, store)
        keeper.take_up(None)
        keeping = asyncio.create_task(keeper.keep())
        await asyncio.sleep(0.05)
        assert store.stored == []  # nothing shown: nothing written
        _show(book, 1)
        while not store.stored:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.05)
        keeping.cancel()
        assert store.stored == [book.to_dict()] and keeper.stores == 1  # once, however many checks since

    asyncio.run(scenario())


def test_a_failed_store_is_not_counted_as_stored():
    async def scenario():
        book, store = CursorBook(), Store()
        keeper = CursorKeeper(book, store)
        keeper.take_up(None)
        _show(book, 1)
        store.failing = True
        await keeper.save()
        store.failing = False
        await keeper.save()
        assert store.stored == [book.to_dict()] and keeper.stores == 1

    asyncio.run(scenario())


class Follower(FollowLoop):
    """Shows a line at each step; ends after ``steps`` steps; its logs drain for ever unless ``drains``."""

    def __init__(self, steps: int | None, store: Store, drains: bool = True) -> None:
        self.book = CursorBook()
        keeper = CursorKeeper(self.book, store)
        keeper.take_up(None)
        super().__init__(Logs(drains), keeper)
        self.steps, self.taken = steps, 0

    def watchers(self) -> list:
        return []

    async def step(self, now: float) -> FollowOutcome | None:
        self.taken += 1
        _show(self.book, self.taken)
        return FollowOutcome("success", "done", "completed") if self.taken == self.steps else None


class Logs:
    """Stands in for ``PodLogForwarder``: drains at once, or until cancelled."""

    def __init__(self, drains: bool) -> None:
        self.drains, self.cancelled, self.draining = drains, False, asyncio.Event()

    async def drain(self, bounded: bool = False) -> None:
        self.draining.set()
        if not self.drains:
            await asyncio.sleep(3600)

    def raise_failure(self) -> None:
        return None

    def cancel(self) -> None:
        self.cancelled = True


def test_a_follower_that_ends_stores_nothing_more_its_event_carries_the_cursors():
    """The end is not a store: the event carries the cursors (``log_book``), and the PATCH it saves pays for the
    list of the Jobs' pods at the end of a run (the API budget, ``benchmarks/api_load.py``).
    """
    store = Store()
    follower = Follower(steps=2, store=store)
    outcome = asyncio.run(follower.follow())
    assert outcome.reason == "completed"
    assert follower.book.to_dict()["cursors"]  # lines were shown
    assert store.stored == []


@pytest.mark.parametrize("cancelled_while", ["following", "draining"])
def test_a_cancelled_follower_stores_where_it_stopped(monkeypatch, cancelled_while):
    """A triggerer restart cancels the trigger: the next one must find every line shown so far stored."""
    monkeypatch.setattr("airflow_provider_volcano_argo.engine.follow_loop.TICK_SECONDS", 0.001)

    async def scenario():
        store = Store()
        follower = Follower(steps=None if cancelled_while == "following" else 3, store=store, drains=False)
        task = asyncio.create_task(follower.follow())
        if cancelled_while == "following":
            while follower.taken < 5:
                await asyncio.sleep(0.001)
        else:
            await follower.logs.draining.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert follower.logs.cancelled  # the streams stop with the trigger
        assert store.stored and store.stored[-1] == follower.book.to_dict()

    asyncio.run(scenario())


def test_a_follow_ended_by_an_unexpected_error_stores_nothing_after_it(fast):
    class Broken(Follower):
        async def step(self, now: float) -> FollowOutcome | None:
            await super().step(now)
            raise RuntimeError("a bug")

    async def scenario():
        store = Store()
        follower = Broken(steps=None, store=store)
        with pytest.raises(RuntimeError):
            await follower.follow()
        stored = len(store.stored)
        _show(follower.book, 99)  # the keeper would store this if it still ran
        await asyncio.sleep(0.05)
        assert len(store.stored) == stored

    asyncio.run(scenario())


def test_a_cancelled_follower_gives_up_a_store_that_hangs(monkeypatch):
    """A triggerer stopping waits for its triggers: a store whose channel no longer answers must not hold it."""
    monkeypatch.setattr("airflow_provider_volcano_argo.engine.follow_loop.TICK_SECONDS", 0.001)
    monkeypatch.setattr(cursor_keeper, "STOP_STORE_SECONDS", 0.05)

    class Hangs(Store):
        async def __call__(self, cursors: dict) -> bool:
            await asyncio.sleep(3600)
            return True

    async def scenario():
        follower = Follower(steps=None, store=Hangs())
        task = asyncio.create_task(follower.follow())
        while follower.taken < 2:
            await asyncio.sleep(0.001)
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=30)
        return done

    assert asyncio.run(scenario())  # the follower ended (cancelled) instead of waiting on the store
