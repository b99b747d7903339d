"""Selectors: how they split into a shared watch and a local filter."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.models.selectors import (
    WatchFilter,
    name_selector,
    object_name_filter,
    parse_equality_selector,
    split_selectors,
    task_pods_selector,
)


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, {}),
        ("", {}),
        ("a=b", {"a": "b"}),
        (
            "volcano.sh/task-spec=mpimaster, volcano.sh/job-name=j1",
            {"volcano.sh/task-spec": "mpimaster", "volcano.sh/job-name": "j1"},
        ),
        ("a=b,,c=d", {"a": "b", "c": "d"}),
        ("a = b", None),  # not split: the API server parses it, the local filter would not
        ("a==b", None),
        ("a!=b", None),
        ("a in (b,c)", None),
        ("a", None),
    ],
)
def test_parse_equality_selector(selector, expected):
    assert parse_equality_selector(selector) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, ""),
        ("metadata.name=wf-1", "wf-1"),
        ("metadata.name!=wf-1", None),
        ("metadata.name==wf-1", None),
        ("metadata.name=wf-1,status.phase=Running", None),
        ("status.phase=Running", None),
    ],
)
def test_object_name_filter(selector, expected):
    assert object_name_filter(selector) == expected


def test_pods_of_one_job_share_the_watch_of_their_task_and_filter_by_job_locally():
    shared, local = split_selectors(None, "volcano.sh/job-name=j1,volcano.sh/task-spec=mpimaster")
    assert shared == "volcano.sh/task-spec=mpimaster"
    assert local == WatchFilter("", (("volcano.sh/job-name", "j1"),))
    pod = {"metadata": {"name": "j1-mpimaster-0", "labels": {"volcano.sh/job-name": "j1"}}}
    other = {"metadata": {"name": "j2-mpimaster-0", "labels": {"volcano.sh/job-name": "j2"}}}
    assert local.matches(pod) and not local.matches(other)


def test_a_named_object_shares_the_namespace_watch():
    shared, local = split_selectors("metadata.name=wf-1", None)
    assert shared == ""
    assert local.matches({"metadata": {"name": "wf-1"}})
    assert not local.matches({"metadata": {"name": "wf-10"}})


def test_selectors_that_cannot_be_split_are_refused():
    assert split_selectors("status.phase=Running", None) is None
    assert split_selectors(None, "a!=b") is None


def test_the_selectors_the_followers_build_split_as_the_shared_watch_expects():
    assert object_name_filter(name_selector("wf-1")) == "wf-1"
    assert task_pods_selector("mpimaster") == "volcano.sh/task-spec=mpimaster"
    shared, local = split_selectors(None, task_pods_selector("mpimaster", "j1"))
    assert shared == "volcano.sh/task-spec=mpimaster"
    assert local == WatchFilter("", (("volcano.sh/job-name", "j1"),))


def test_the_shared_part_keeps_every_label_but_the_per_object_ones():
    shared, local = split_selectors(None, "b=2,volcano.sh/job-name=j1,a=1")
    assert shared == "a=1,b=2"
    assert local == WatchFilter("", (("volcano.sh/job-name", "j1"),))
