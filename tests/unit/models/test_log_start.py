"""Which reads may have come too late for a log's start, and when its first line says they did."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.log_cursor import parse_timestamp
from airflow_provider_volcano_argo.models.log_start import PROMPT_FOLLOW_SECONDS, StartCoverage, late_start_seconds

STARTED = parse_timestamp("2026-12-05T08:00:00Z")  # startedAt: whole seconds


def test_a_first_line_within_the_start_second_and_the_tolerance_is_not_late():
    assert late_start_seconds(STARTED + 1_999_999_999, STARTED) is None  # the start may be 08:00:00.999
    assert late_start_seconds(STARTED - 5, STARTED) is None
    assert late_start_seconds(STARTED + 2_000_000_001, STARTED) == 2.000000001
    assert late_start_seconds(STARTED + 31_500_000_000, STARTED) == 31.5


def test_without_a_start_or_a_stamp_nothing_is_said():
    assert late_start_seconds(STARTED + 60_000_000_000, None) is None
    assert late_start_seconds(0, STARTED) is None  # a line without a stamp


def test_a_follow_opened_promptly_after_the_watch_showed_the_start_reads_from_the_start():
    coverage = StartCoverage(covered_at=100.0)
    assert coverage.opening(follow=True, ended=False, now=100.0 + PROMPT_FOLLOW_SECONDS)


def test_an_instance_already_running_when_first_seen_is_never_read_from_its_start():
    """The follower started or resumed late, or re-listed: the start may have rotated away before."""
    coverage = StartCoverage(covered_at=None)
    assert not coverage.opening(follow=True, ended=False, now=100.0)
    coverage.closed(follow=True, clean=True, now=101.0)
    assert not coverage.opening(follow=False, ended=True, now=101.5)


def test_polled_overflowing_and_late_reads_end_the_coverage():
    for follow, ended, now in ((False, False, 100.5), (True, False, 100.0 + PROMPT_FOLLOW_SECONDS + 0.1)):
        coverage = StartCoverage(covered_at=100.0)
        assert not coverage.opening(follow=follow, ended=ended, now=now)
        assert coverage.covered_at is None
        assert not coverage.opening(follow=True, ended=False, now=now + 0.1)  # not even a prompt follow after it


def test_a_reconnect_soon_after_a_broken_follow_reads_on_from_the_start():
    coverage = StartCoverage(covered_at=100.0)
    assert coverage.opening(follow=True, ended=False, now=101.0)
    coverage.closed(follow=True, clean=False, now=200.0)  # the connection broke after 99 s
    assert coverage.opening(follow=True, ended=False, now=201.0)
    coverage.closed(follow=True, clean=False, now=300.0)
    assert not coverage.opening(follow=True, ended=False, now=300.0 + PROMPT_FOLLOW_SECONDS + 1)


def test_the_read_of_an_ended_instance_after_a_follow_that_ended_with_it_reads_on_from_the_start():
    """The kubelet ends a follow when the container exits: nothing is written after it."""
    coverage = StartCoverage(covered_at=100.0)
    assert coverage.opening(follow=True, ended=False, now=101.0)
    coverage.closed(follow=True, clean=True, now=500.0)
    assert coverage.opening(follow=False, ended=True, now=509.0)  # the watch showed the end 9 s later
    broken = StartCoverage(covered_at=100.0)
    assert broken.opening(follow=True, ended=False, now=101.0)
    broken.closed(follow=True, clean=False, now=500.0)  # broken, not ended: lines written meanwhile may be gone
    assert not broken.opening(follow=False, ended=True, now=509.0)
