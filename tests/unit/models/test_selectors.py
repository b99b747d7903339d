"""Selectors: how they split into a shared watch and a local filter."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.models.selectors import (
    OWNED_SELECTOR,
    SharedSelectors,
    WatchFilter,
    name_selector,
    object_name_filter,
    parse_equality_selector,
    split_selectors,
    task_pods_selector,
    with_owned,
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
    assert shared == SharedSelectors("volcano.sh/task-spec=mpimaster")
    assert local == WatchFilter("", (("volcano.sh/job-name", "j1"),))
    pod = {"metadata": {"name": "j1-mpimaster-0", "labels": {"volcano.sh/job-name": "j1"}}}
    other = {"metadata": {"name": "j2-mpimaster-0", "labels": {"volcano.sh/job-name": "j2"}}}
    assert local.matches(pod) and not local.matches(other)


def test_a_named_object_shares_the_namespace_watch():
    shared, local = split_selectors("metadata.name=wf-1", None)
    assert shared == SharedSelectors()
    assert local.matches({"metadata": {"name": "wf-1"}})
    assert not local.matches({"metadata": {"name": "wf-10"}})


def test_selectors_that_cannot_be_split_are_refused():
    assert split_selectors("status.phase=Running", None) is None
    assert split_selectors(None, "a!=b") is None


def test_the_selectors_the_followers_build_split_as_the_shared_watch_expects():
    assert object_name_filter(name_selector("wf-1")) == "wf-1"
    assert task_pods_selector("mpimaster") == "volcano.sh/task-spec=mpimaster"
    shared, local = split_selectors(None, task_pods_selector("mpimaster", "j1"))
    assert shared == SharedSelectors("volcano.sh/task-spec=mpimaster")
    assert local == WatchFilter("", (("volcano.sh/job-name", "j1"),))


def test_the_shared_part_keeps_every_label_but_the_per_object_ones():
    shared, local = split_selectors(None, "b=2,volcano.sh/job-name=j1,a=1")
    assert shared == SharedSelectors("a=1,b=2")
    assert local == WatchFilter("", (("volcano.sh/job-name", "j1"),))


def test_the_followers_of_submitted_runs_share_watches_narrowed_by_the_providers_label():
    """A Workflow, Job or log-task pod watch of any run of the namespace: the same server-side selector."""
    assert OWNED_SELECTOR == "app.kubernetes.io/managed-by=airflow-provider-volcano-argo"
    for name in ("wf-1", "wf-2"):
        shared, local = split_selectors(f"metadata.name={name}", with_owned(None, True))
        assert shared == SharedSelectors(OWNED_SELECTOR)
        assert local == WatchFilter(name)
    pods = {split_selectors(None, task_pods_selector("mpimaster", job, owned=True)) for job in ("j1", "j2")}
    assert {shared for shared, _ in pods} == {SharedSelectors(f"{OWNED_SELECTOR},volcano.sh/task-spec=mpimaster")}
    assert {local for _, local in pods} == {
        WatchFilter("", (("volcano.sh/job-name", "j1"),)),
        WatchFilter("", (("volcano.sh/job-name", "j2"),)),
    }


def test_without_the_label_the_selectors_stay_as_older_versions_built_them():
    assert with_owned(None, False) is None
    assert with_owned("a=b", False) == "a=b"
    assert with_owned("a=b", True) == f"a=b,{OWNED_SELECTOR}"
    assert task_pods_selector("mpimaster", "j1") == "volcano.sh/task-spec=mpimaster,volcano.sh/job-name=j1"


def test_a_sensor_sends_its_name_and_per_object_labels_to_the_server():
    """Objects the provider did not submit carry none of its labels: their watch is narrowed by name instead."""
    shared, local = split_selectors("metadata.name=job-1", None, per_object_on_server=True)
    assert shared == SharedSelectors("", "metadata.name=job-1")
    assert local == WatchFilter()
    shared, local = split_selectors(None, task_pods_selector("mpimaster", "job-1"), per_object_on_server=True)
    assert shared == SharedSelectors("volcano.sh/job-name=job-1,volcano.sh/task-spec=mpimaster")
    assert local == WatchFilter()
    assert split_selectors("status.phase=Running", None, per_object_on_server=True) is None
