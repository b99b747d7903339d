"""The shared watches' pure parts: what the cache keeps of an object, and the watch timeouts."""

from __future__ import annotations

from airflow_provider_volcano_argo.engine import reflector
from airflow_provider_volcano_argo.engine.informer import slim
from airflow_provider_volcano_argo.engine.reflector import watch_timeout_seconds


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
    pod = {"metadata": {"name": "p"}, "spec": {"restartPolicy": "Never", "nodeName": "n", "containers": [{}]}}
    # what followers read of a pod's spec: may_restart, pods_bound and creating
    assert slim("pods", pod) == {"metadata": {"name": "p"}, "spec": {"restartPolicy": "Never", "nodeName": "n"}}


def test_watch_timeouts_are_spread_over_five_to_ten_minutes_like_client_go(monkeypatch):
    draws = iter([0.0, 0.5, 0.999999, 0.0, 0.999999])  # the ends of random.random()'s range, and its middle
    monkeypatch.setattr(reflector.random, "random", lambda: next(draws))
    assert [watch_timeout_seconds() for _ in range(3)] == [300, 450, 599]
    assert [watch_timeout_seconds(10), watch_timeout_seconds(10)] == [10, 19]
