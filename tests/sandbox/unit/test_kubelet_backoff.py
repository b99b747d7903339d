"""The kubelet's crash-loop back-off (client-go ``flowcontrol.Backoff`` as ``doBackOff`` uses it): pure timing."""

from __future__ import annotations

from airflow_provider_volcano_argo.sandbox.kubelet.backoff import CrashLoopBackOff


def test_first_restart_is_immediate_then_each_exit_waits_twice_as_long_up_to_the_maximum():
    backoff = CrashLoopBackOff(initial=10, maximum=40)
    delays, now = [], 0.0
    for _ in range(5):  # each run lasts 1 s, then exits
        now += 1
        finished = now
        wait = backoff.remaining(finished, now)
        delays.append(wait)
        now += wait
        backoff.next(finished, now)
    assert delays == [0, 10, 20, 40, 40]


def test_the_wait_counts_from_the_exit_and_an_entry_left_alone_twice_the_maximum_expires():
    backoff = CrashLoopBackOff(initial=10, maximum=40)
    backoff.next(finished_at=0, now=0)
    assert backoff.remaining(finished_at=5, now=8) == 7  # 10 s from the exit, 3 s of which have passed
    assert backoff.remaining(finished_at=81, now=81) == 0  # untouched for more than 2 x 40 s: stable again
    backoff.next(finished_at=81, now=81)
    assert backoff.delay == 10
