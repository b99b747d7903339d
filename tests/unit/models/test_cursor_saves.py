"""When log cursors are stored: only when they moved, at most once per interval, and never far behind the log."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_volcano_argo.models.cursor_saves import SaveSchedule, cursors_text


def test_nothing_is_due_while_the_cursors_stay_where_they_were_stored():
    schedule = SaveSchedule(started=0.0, every=90.0)
    schedule.succeeded("a")
    assert not schedule.due("a", 10_000.0)  # a quiet log writes nothing, however long


def test_the_start_counts_as_a_store_and_the_first_move_after_a_quiet_spell_is_due_at_once():
    schedule = SaveSchedule(started=0.0, every=90.0)
    assert not schedule.due("a", 89.0)  # the cursors taken up at the start are where the next follower looks
    assert schedule.due("a", 90.0)
    schedule.attempted(90.0)
    schedule.succeeded("a")
    assert not schedule.due("b", 179.0)  # moved again, but within the interval
    assert schedule.due("b", 180.0)
    assert schedule.due("c", 5_000.0)  # after a quiet spell: the first new line is stored at the next check


def test_a_failed_store_is_retried_an_interval_later_not_at_every_check():
    schedule = SaveSchedule(started=0.0, every=90.0)
    schedule.attempted(90.0)  # and it failed: nothing succeeded
    assert not schedule.due("a", 91.0)
    assert schedule.due("a", 180.0)


def test_cursors_taken_up_from_an_earlier_follower_are_not_stored_again():
    schedule = SaveSchedule(started=0.0, every=1.0)
    schedule.taken_up("a")
    assert not schedule.moved("a") and not schedule.due("a", 100.0)
    assert schedule.due("b", 100.0)


def test_equal_cursors_give_equal_text_whatever_the_order_of_their_keys():
    assert cursors_text({"b": 1, "a": {"y": 2, "x": 1}}) == cursors_text({"a": {"x": 1, "y": 2}, "b": 1})


@given(
    every=st.integers(1, 120),
    shown=st.lists(st.integers(0, 1_000), max_size=60),  # seconds at which a line was shown
    kill=st.integers(0, 1_100),
)
def test_a_hard_kill_repeats_only_lines_shown_within_the_last_interval_plus_one_check(every, shown, kill):
    """Check every second, as the keeper does (stores instant): the lines not stored at a kill, which the next
    follower repeats, were all shown in the last ``every + 1`` seconds.
    """
    schedule = SaveSchedule(started=0.0, every=float(every))
    lines = sorted(shown)
    stored_up_to = 0  # lines[:stored_up_to] are in the stored cursors
    for second in range(kill + 1):
        shown_now = sum(1 for t in lines if t <= second)  # the book after this second's lines
        if schedule.due(str(shown_now), float(second)):
            schedule.attempted(float(second))
            schedule.succeeded(str(shown_now))
            stored_up_to = shown_now
    repeated = [t for t in lines[stored_up_to:] if t <= kill]
    assert all(t > kill - every - 1 for t in repeated), (repeated, kill)
