"""Which container instances of a task's pods have a log, when each has ended, and how each exited."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.container_instances import (
    LogInstance,
    LogRead,
    exit_codes,
    instance_finished,
    instance_started_at,
    job_of_pod,
    log_instances,
    log_read,
    restarts,
    started_instances,
)
from airflow_provider_volcano_argo.models.log_cursor import parse_timestamp


def _pod(uid: str, restart: int, state: str, retry: str = "0") -> dict:
    return {
        "metadata": {
            "uid": uid,
            "name": "j-mpimaster-0",
            "labels": {"volcano.sh/job-name": "j"},
            "annotations": {"volcano.sh/job-retry-count": retry},
            "creationTimestamp": "t",
        },
        "status": {
            "containerStatuses": [
                {
                    "name": "mpimaster",
                    "restartCount": restart,
                    "state": {state: {"exitCode": 3} if state == "terminated" else {}},
                }
            ]
        },
    }


def test_log_instances_and_their_end():
    pods = [_pod("p1", 0, "running")]
    [(pod, instance)] = log_instances(pods, "mpimaster", {"j"})
    assert instance.key == "p1/mpimaster/0" and "job attempt 1" in instance.header("j", False)
    assert not instance_finished(pods, instance.key)
    assert instance_finished([_pod("p1", 1, "running")], instance.key)  # restarted
    assert instance_finished([_pod("p1", 0, "terminated")], instance.key)
    assert instance_finished([], instance.key)  # pod gone
    assert log_instances([_pod("p1", 0, "waiting")], "mpimaster", {"j"}) == []
    assert exit_codes([_pod("p1", 0, "terminated")], "mpimaster", {"j"})[0]["exit_code"] == 3


def test_exit_codes_come_only_from_the_followed_jobs_pods():
    """A Workflow follower's pod watch sees the task's pods of every Job in the namespace."""
    assert exit_codes([_pod("p1", 0, "terminated")], "mpimaster", {"someone-elses-job"}) == []


def _instance_pod(name: str, uid: str, created: str | None, retry: str | None, **status) -> dict:
    meta = {"uid": uid, "name": name, "labels": {"volcano.sh/job-name": "j"}}
    if created is not None:
        meta["creationTimestamp"] = created
    if retry is not None:
        meta["annotations"] = {"volcano.sh/job-retry-count": retry}
    return {"metadata": meta, "status": {"containerStatuses": [{"name": "mpimaster", **status}]}}


def test_log_instances_oldest_attempt_first_then_oldest_pod_then_restart():
    ended = {"terminated": {"exitCode": 0}}
    pods = [
        _instance_pod("j-mpimaster-0", "p3", "2026-12-04T10:05:00Z", "1", restartCount=0, state={"running": {}}),
        {**_pod("p9", 0, "running"), "metadata": {**_pod("p9", 0, "running")["metadata"], "labels": {}}},
        _instance_pod("j-mpimaster-0", "p2", "2026-12-04T10:01:00Z", None, restartCount=0, state=ended),
        _instance_pod("j-mpimaster-0", "p4", "2026-12-04T10:06:00Z", "1", state={"waiting": {}}),
        _instance_pod("j-mpimaster-0", "p1", "2026-12-04T10:00:00Z", "0", restartCount=2, state={"running": {}}),
    ]
    found = log_instances(pods, "mpimaster", {"j"})
    assert [instance for _, instance in found] == [
        LogInstance("p1/mpimaster/2", "j-mpimaster-0", 0, 2),
        LogInstance("p2/mpimaster/0", "j-mpimaster-0", 0, 0),  # no retry annotation: attempt 0
        LogInstance("p3/mpimaster/0", "j-mpimaster-0", 1, 0),
    ]
    assert [pod["metadata"]["uid"] for pod, _ in found] == ["p1", "p2", "p3"]


def test_a_pod_not_yet_stamped_sorts_first_and_an_instance_without_restart_count_is_the_first():
    pods = [
        _instance_pod("a", "p1", "2026-12-04T10:00:00Z", "0", restartCount=0, state={"running": {}}),
        _instance_pod("b", "p2", None, "0", state={"running": {}}),
    ]
    assert [instance.key for _, instance in log_instances(pods, "mpimaster", {"j"})] == [
        "p2/mpimaster/0",
        "p1/mpimaster/0",
    ]


def test_init_containers_have_instances_too():
    pod = _instance_pod("a", "p1", "t", "0")
    pod["status"] = {"initContainerStatuses": [{"name": "setup", "restartCount": 0, "state": {"running": {}}}]}
    assert [instance.key for _, instance in log_instances([pod], "setup", {"j"})] == ["p1/setup/0"]


def test_headers_name_the_attempt_the_restart_and_on_request_the_job():
    instance = LogInstance("p1/mpimaster/1", "j-mpimaster-0", 2, 1)
    assert instance.header("j", False) == "----- log of j-mpimaster-0 (job attempt 3, container restart 1) -----"
    assert instance.header("j", True) == "[j] ----- log of j-mpimaster-0 (job attempt 3, container restart 1) -----"


def test_an_instance_is_finished_only_when_its_own_pod_says_so():
    running = _instance_pod("a", "p1", "t", "0", state={"running": {}})  # no restartCount yet: 0
    other = _instance_pod("b", "p0", "t", "0", restartCount=0, state={"terminated": {"exitCode": 1}})
    assert not instance_finished([other, running], "p1/mpimaster/0")
    no_status = {**running, "status": {"containerStatuses": [{"name": "sidecar"}]}}
    assert instance_finished([no_status], "p1/mpimaster/0")


def test_exit_codes_of_the_current_and_the_last_instance():
    pod = _instance_pod(
        "j-mpimaster-0",
        "p1",
        "t",
        "0",
        restartCount=1,
        state={"terminated": {"exitCode": 2, "reason": "Error"}},
        lastState={"terminated": {"exitCode": 137}},
    )
    elsewhere = _instance_pod("k-mpimaster-0", "p0", "t", "0", state={"terminated": {"exitCode": 9}})
    elsewhere["metadata"]["labels"] = {"volcano.sh/job-name": "k"}
    assert exit_codes([elsewhere, pod], "mpimaster", {"j"}) == [
        {"pod": "j-mpimaster-0", "container": "mpimaster", "exit_code": 2, "reason": "Error", "restart_count": 1},
        {"pod": "j-mpimaster-0", "container": "mpimaster", "exit_code": 137, "reason": "", "restart_count": 1},
    ]
    pod["status"]["containerStatuses"][0].pop("restartCount")
    assert [code["restart_count"] for code in exit_codes([pod], "mpimaster", {"j"})] == [0, 0]


def test_a_pod_without_the_job_label_belongs_to_no_job():
    assert job_of_pod({"metadata": {}}) == "" and job_of_pod({"metadata": {"labels": None}}) == ""
    assert job_of_pod(_pod("p1", 0, "running")) == "j"


def _restarting(restart: int, state: dict, last: int | None, current_id: int | None = None) -> dict:
    """The master's pod as the kubelet reports it around a restart (container IDs name the instance)."""
    status: dict = {
        "restartCount": restart,
        "state": state,
        "containerID": f"c{restart if current_id is None else current_id}",
    }
    if last is not None:
        status["lastState"] = {"terminated": {"exitCode": 1, "containerID": f"c{last}"}}
    return _instance_pod("j-mpimaster-0", "p1", "t", "0", **status)


def test_an_instance_is_read_where_the_kubelet_serves_it_current_then_previous_then_nowhere():
    """kubelet_pods.go: validateContainerLogStatus serves the current instance, or lastState with previous=true."""
    back_off = {"waiting": {"reason": "CrashLoopBackOff"}}
    assert log_read([_restarting(0, {"running": {}}, None)], "p1/mpimaster/0") == LogRead(previous=False, ended=False)
    ended = _restarting(0, {"terminated": {"exitCode": 1}}, None)
    ended["spec"] = {"restartPolicy": "Never"}
    assert log_read([ended], "p1/mpimaster/0") == LogRead(previous=False, ended=True)
    # crash-looping: waiting, the exited instance 1 as lastState (same container ID), restartCount still 1
    waiting = _restarting(1, back_off, last=1)
    assert log_read([waiting], "p1/mpimaster/1") == LogRead(previous=True, ended=True)
    assert log_read([waiting], "p1/mpimaster/0") is None  # served no more
    # instance 2 created, not started yet: its own ID, lastState is instance 1
    assert log_read([_restarting(2, {"waiting": {}}, last=1)], "p1/mpimaster/1") == LogRead(previous=True, ended=True)
    running = _restarting(2, {"running": {}}, last=1)
    assert log_read([running], "p1/mpimaster/1") == LogRead(previous=True, ended=True)
    assert log_read([running], "p1/mpimaster/2") == LogRead(previous=False, ended=False)
    assert log_read([], "p1/mpimaster/2") is None  # pod gone: its name may be another pod's already
    assert instance_finished([waiting], "p1/mpimaster/1") and not instance_finished([running], "p1/mpimaster/2")


def test_instances_seen_only_as_last_state_are_listed_too():
    """An instance that started and crashed between two watch events is seen only as lastState."""
    back_off = {"waiting": {"reason": "CrashLoopBackOff"}}
    keys = [i.key for _, i in log_instances([_restarting(1, back_off, last=1)], "mpimaster", {"j"})]
    assert keys == ["p1/mpimaster/1"]
    keys = [i.key for _, i in log_instances([_restarting(2, {"running": {}}, last=1)], "mpimaster", {"j"})]
    assert keys == ["p1/mpimaster/1", "p1/mpimaster/2"]


def test_started_instances_are_the_current_and_the_last_state():
    assert started_instances(_instance_pod("a", "p1", "t", "0", state={"waiting": {}}), "mpimaster") == set()
    assert started_instances({"metadata": {"uid": "p1"}, "status": {}}, "mpimaster") == set()
    assert started_instances(_restarting(0, {"running": {}}, None), "mpimaster") == {"p1/mpimaster/0"}
    assert started_instances(_restarting(2, {"running": {}}, last=1), "mpimaster") == {
        "p1/mpimaster/1",
        "p1/mpimaster/2",
    }


def test_an_instance_started_when_its_own_state_says():
    """``startedAt`` of the state that holds the instance: running or terminated, or lastState's for the one before."""
    at = {"startedAt": "2026-12-05T08:00:07Z"}
    seven = parse_timestamp("2026-12-05T08:00:07Z")
    assert instance_started_at([_restarting(0, {"running": at}, None)], "p1/mpimaster/0") == seven
    assert instance_started_at([_restarting(0, {"terminated": at}, None)], "p1/mpimaster/0") == seven
    pod = _restarting(2, {"running": {"startedAt": "2026-12-05T08:01:00Z"}}, last=1)
    pod["status"]["containerStatuses"][0]["lastState"]["terminated"].update(at)
    assert instance_started_at([pod], "p1/mpimaster/1") == seven
    assert instance_started_at([pod], "p1/mpimaster/2") == parse_timestamp("2026-12-05T08:01:00Z")
    assert instance_started_at([pod], "p1/mpimaster/0") is None  # served no more
    assert instance_started_at([], "p1/mpimaster/2") is None  # pod gone
    assert instance_started_at([_restarting(0, {"running": {}}, None)], "p1/mpimaster/0") is None  # not said
    bad = {"running": {"startedAt": "yesterday"}}
    assert instance_started_at([_restarting(0, bad, None)], "p1/mpimaster/0") is None


def test_an_ended_container_restarts_only_where_the_kubelet_restarts_it():
    failed = _pod("p1", 0, "terminated")  # exit code 3
    ended = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    for policy, expected in (("Always", True), ("OnFailure", True), ("Never", False)):
        failed["spec"] = {"restartPolicy": policy}
        assert restarts(failed, ended) is expected, policy
    failed["spec"] = {"restartPolicy": "OnFailure"}
    assert not restarts(failed, {"exitCode": 0})  # OnFailure and exit 0: it stays ended
    failed["metadata"]["deletionTimestamp"] = "t"
    assert not restarts(failed, ended)  # a pod being deleted is not restarted


def test_an_ended_instance_is_due_to_restart_only_while_it_is_its_containers_current_one():
    """The kubelet serves a read by name from its own status, ahead of the watch: the next instance may be served."""
    key = "p1/mpimaster/0"
    failed = _pod("p1", 0, "terminated")
    failed["spec"] = {"restartPolicy": "OnFailure"}
    assert log_read([failed], key) == LogRead(previous=False, ended=True, restart_due=True)
    failed["spec"] = {"restartPolicy": "Never"}
    assert log_read([failed], key) == LogRead(previous=False, ended=True)
    assert log_read([_pod("p1", 0, "running")], key) == LogRead(previous=False, ended=False)  # not ended
    restarted = _restarting(1, {"running": {}}, last=0)
    assert log_read([restarted], key) == LogRead(previous=True, ended=True)  # the status shows the restart
