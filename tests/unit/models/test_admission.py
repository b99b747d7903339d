"""Gang admission per attempt: a restarted or image-pulling gang is admitted, one never scheduled is not."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.admission import (
    attempt_key,
    overdue_for_admission,
    podgroup_admitted,
    pods_bound,
    unschedulable_reasons,
    waiting_since,
)
from airflow_provider_volcano_argo.models.follow import FollowSpec, decide


def _job(phase: str = "Pending", retry: int = 0, since: str | None = None, **counts) -> dict:
    state = {"phase": phase, **({"lastTransitionTime": since} if since else {})}
    return {
        "metadata": {"name": "j", "uid": "ju", "creationTimestamp": "1970-01-01T00:00:50Z"},
        "status": {"state": state, "retryCount": retry, **counts},
    }


def _pod(retry: int, node: str | None, job: str = "j", deleting: bool = False) -> dict:
    meta = {
        "name": f"{job}-mpimaster-0",
        "labels": {"volcano.sh/job-name": job},
        "annotations": {"volcano.sh/job-retry-count": str(retry)},
    }
    if deleting:
        meta["deletionTimestamp"] = "1970-01-01T00:01:00Z"
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


def test_an_attempt_waits_since_its_last_transition_else_since_creation():
    assert waiting_since(_job()) == 50.0
    assert waiting_since(_job(retry=1, since="1970-01-01T00:10:00Z")) == 600.0
    assert attempt_key(_job(retry=2)) == "ju/2" and attempt_key({"metadata": {"uid": "u"}}) == "u/0"


def test_only_a_live_bound_pod_of_the_current_attempt_shows_admission():
    job = _job(retry=1)
    assert pods_bound([_pod(1, "node-0")], job)
    assert not pods_bound([_pod(1, None)], job)  # created (Inqueue) but not bound: the gang may never fit
    assert not pods_bound([_pod(0, "node-0")], job)  # the last attempt's pod
    assert not pods_bound([_pod(1, "node-0", deleting=True)], job)
    assert not pods_bound([_pod(1, "node-0", job="other")], job)


def test_a_podgroup_admits_once_scheduled_not_when_only_enqueued():
    assert podgroup_admitted({"status": {"phase": "Running"}})
    assert podgroup_admitted({"status": {"phase": "Completed"}})
    assert not podgroup_admitted({"status": {"phase": "Inqueue"}})
    assert not podgroup_admitted({"status": {"phase": "Pending"}})
    assert not podgroup_admitted(None)


def test_overdue_counts_from_the_attempt_and_spares_admitted_attempts():
    restarted = {"j": _job(retry=1, since="1970-01-01T00:10:00Z")}  # created long ago, restarted at 600
    assert overdue_for_admission(restarted, set(), 30, 629) == []
    assert overdue_for_admission(restarted, set(), 30, 630) == ["j"]
    assert overdue_for_admission(restarted, {"ju/1"}, 30, 10_000) == []
    assert overdue_for_admission(restarted, {"ju/0"}, 30, 630) == ["j"]  # the first attempt's admission is old news
    assert overdue_for_admission({"j": _job("Restarting", retry=1)}, set(), 30, 10_000) == []
    assert overdue_for_admission({"j": _job(running=1)}, set(), 30, 10_000) == []


def test_schedule_timeout_spares_a_restarted_job_older_than_the_timeout():
    spec = FollowSpec(namespace="ns", workflow_name="wf", job_name="j", schedule_timeout=300)
    wf = {"metadata": {"name": "wf"}, "status": {"phase": "Running"}}
    restarted = {"j": _job(retry=1, since="1970-01-01T00:15:00Z")}  # 15 min old, Pending again for 10 s
    assert decide(spec, wf, False, restarted, set(), 910) is None
    assert decide(spec, wf, False, restarted, set(), 1200).reason == "unschedulable"
    assert decide(spec, wf, False, restarted, set(), 1200, admitted={"ju/1"}) is None


def test_a_gang_refused_at_enqueue_is_explained_by_its_newest_event():
    group = {"metadata": {"name": "mpi-j-ju"}, "status": {"phase": "Pending"}}
    events = [
        {"reason": "Unschedulable", "message": "resource in cluster is overused: overused cpu",
         "lastTimestamp": "2026-12-05T08:00:02Z"},
        {"reason": "Unschedulable", "message": "resource in cluster is overused: overused memory",
         "lastTimestamp": "2026-12-05T08:00:01Z"},
        {"reason": "Scheduled", "message": "pod group is ready", "lastTimestamp": "2026-12-05T08:00:03Z"},
    ]  # fmt: skip
    assert unschedulable_reasons(group, events) == ["PodGroup mpi-j-ju: resource in cluster is overused: overused cpu"]
    assert unschedulable_reasons(group, []) == []
    assert unschedulable_reasons(None, events) == []


def test_the_gang_plugins_condition_comes_first():
    condition = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": "1/3 tasks"}
    group = {"metadata": {"name": "mpi-j-ju"}, "status": {"phase": "Inqueue", "conditions": [condition]}}
    events = [{"reason": "Unschedulable", "message": "resource in cluster is overused: overused cpu"}]
    assert unschedulable_reasons(group, events) == ["PodGroup mpi-j-ju: NotEnoughResources: 1/3 tasks"]
