"""The pure parts of the shared watches: how selectors split into a shared watch and a local filter, and what
the cache keeps of an object."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.shared_watches import (
    WatchFilter,
    object_name_filter,
    parse_equality_selector,
    slim,
    split_selectors,
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
    [(None, ""), ("metadata.name=wf-1", "wf-1"), ("metadata.name!=wf-1", None), ("status.phase=Running", None)],
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


def test_slim_drops_what_followers_do_not_read_and_leaves_the_original_alone():
    workflow = {
        "metadata": {"name": "wf", "annotations": {"k": "v"}, "managedFields": [{"manager": "x"}]},
        "spec": {"templates": []},
        "status": {"phase": "Running", "nodes": {"n": {}}, "storedWorkflowTemplateSpec": {}, "startedAt": "t"},
    }
    kept = slim("workflows", workflow)
    assert kept == {
        "metadata": {"name": "wf", "annotations": {"k": "v"}},
        "status": {"phase": "Running", "startedAt": "t"},
    }
    assert "nodes" in workflow["status"] and "managedFields" in workflow["metadata"] and "spec" in workflow
    job = {
        "metadata": {"name": "j"},
        "spec": {"minAvailable": 2, "tasks": []},
        "status": {"state": {"phase": "Running"}},
    }
    assert slim("jobs", job) == job  # progress lines read the job's spec (replicas, minAvailable)


def test_watch_timeouts_are_spread_over_five_to_ten_minutes_like_client_go():
    from airflow_provider_volcano_argo.watchers import watch_timeout_seconds

    samples = [watch_timeout_seconds() for _ in range(2000)]
    assert all(300 <= s < 600 for s in samples)
    assert min(samples) < 330 and max(samples) > 570  # spread, not one fixed value
    assert all(10 <= watch_timeout_seconds(10) < 20 for _ in range(100))
