"""How one instance's stream reads: where the kubelet serves it, once it ended, after the instance before (hook faked).

The sandbox tests (``tests/integration/test_container_restarts.py``) run the same against the emulated kubelet.
"""

from __future__ import annotations

import asyncio

from airflow_provider_volcano_argo.engine import pod_logs
from airflow_provider_volcano_argo.engine.object_follower import ObjectPhaseFollower
from airflow_provider_volcano_argo.engine.pod_log_forwarder import PodLogForwarder
from airflow_provider_volcano_argo.engine.pod_logs import InstanceStream
from airflow_provider_volcano_argo.models.container_instances import LogRead
from airflow_provider_volcano_argo.models.follow import FollowOutcome
from airflow_provider_volcano_argo.models.log_cursor import CursorBook


class LogsByRead:
    """``stream_log`` answering from fixed logs per ``previous``; a follow read ends at once (the container exited)."""

    def __init__(self, current: list[str], previous: list[str]):
        self.logs = {False: current, True: previous}
        self.reads: list[tuple[str, bool, bool]] = []

    async def stream_log(self, pod, container, namespace, since_time, follow, previous=False):
        self.reads.append((pod, follow, previous))
        for i, text in enumerate(self.logs[previous]):
            await asyncio.sleep(0.01)  # a stream reads over time: other streams run meanwhile
            yield f"2026-12-05T08:00:0{i}.000000000Z {text}\n".encode()


def _stream(hook, shown: list[str], where, is_finished=lambda: True, pod: str = "p", **kw) -> InstanceStream:
    return InstanceStream(
        hook, "ns", pod, "c", f"{pod}/c/0", CursorBook(), shown.append, is_finished, where=where, **kw
    )


def test_an_ended_instance_held_as_last_state_is_read_once_with_previous():
    hook, shown = LogsByRead(current=["next run"], previous=["ended run"]), []
    asyncio.run(_stream(hook, shown, lambda: LogRead(previous=True, ended=True)).run())
    assert shown == ["ended run"] and hook.reads == [("p", False, True)]


def test_an_instance_no_longer_served_is_not_read_at_all():
    """Its pod uid left the watch (the name may be a re-created pod's) or it restarted twice: a read would get
    another instance's lines.
    """
    hook, shown = LogsByRead(current=["another pod's line"], previous=[]), []
    asyncio.run(_stream(hook, shown, lambda: None).run())
    assert shown == [] and hook.reads == []


def test_a_follow_that_ended_is_read_again_only_once_the_watch_shows_the_end():
    """The kubelet restarts a container at once the first time: a read by name before the watch shows the exit
    could get the next instance's lines; so no second read while the watch still says it runs.
    """
    hook, shown = LogsByRead(current=["line"], previous=[]), []
    watch = {"ended": False}

    async def scenario() -> None:
        where = lambda: LogRead(previous=False, ended=watch["ended"])  # noqa: E731
        task = asyncio.create_task(_stream(hook, shown, where, is_finished=lambda: watch["ended"]).run())
        await asyncio.sleep(1.5)
        reads_while_running = list(hook.reads)
        watch["ended"] = True
        await asyncio.wait_for(task, 5)
        assert reads_while_running == [("p", True, False)]

    asyncio.run(scenario())
    assert hook.reads == [("p", True, False), ("p", False, False)] and shown == ["line"]


def test_an_instance_shown_ended_before_its_restart_shows_is_read_through_previous_once_it_does():
    """The kubelet serves a read by name from its own status, ahead of the watch's: while the watch shows the
    instance ended as the current one and its container restarts, a plain read could get the next instance's lines.
    """
    hook, shown = LogsByRead(current=["next run"], previous=["ended run"]), []
    watch = {"where": LogRead(previous=False, ended=True, restart_due=True)}

    async def scenario() -> None:
        news = asyncio.Event()
        stream = _stream(hook, shown, lambda: watch["where"], pod_news=lambda: news)
        task = asyncio.create_task(stream.run())
        await asyncio.sleep(0.5)
        assert hook.reads == []  # not while the restart is due
        watch["where"] = LogRead(previous=True, ended=True)  # restarted: lastState holds it
        news.set()
        await asyncio.wait_for(task, 2)

    asyncio.run(scenario())
    assert hook.reads == [("p", False, True)] and shown == ["ended run"]


def test_an_instance_whose_restart_never_shows_is_read_by_name_after_a_while(monkeypatch):
    """The kubelet did not restart it (or its status is lost): what a read by name serves is all there is."""
    monkeypatch.setattr(pod_logs, "RESTART_SHOW_SECONDS", 0.3)
    hook, shown = LogsByRead(current=["ended run"], previous=[]), []
    where = LogRead(previous=False, ended=True, restart_due=True)
    asyncio.run(asyncio.wait_for(_stream(hook, shown, lambda: where).run(), 2))
    assert hook.reads == [("p", False, False)] and shown == ["ended run"]


def test_the_next_instance_of_a_pod_shows_its_header_after_the_lines_of_the_one_before():
    hook, shown = LogsByRead(current=["second"], previous=["first 0", "first 1"]), []

    async def scenario() -> None:
        first = _stream(hook, shown, lambda: LogRead(previous=True, ended=True), header="== first")
        first_task = asyncio.create_task(first.run())
        second = _stream(hook, shown, lambda: LogRead(previous=False, ended=True), header="== second", after=first_task)
        second.key = "p/c/1"
        await asyncio.gather(second.run(), first_task)

    asyncio.run(scenario())
    assert shown == ["== first", "first 0", "first 1", "== second", "second"]


def _master(uid: str, retry: int, task: str = "c") -> dict:
    """A pod of Job ``j`` whose container ``task`` ran and ended (attempt ``retry + 1``)."""
    return {
        "metadata": {
            "uid": uid,
            "name": "j-c-0",
            "labels": {"volcano.sh/job-name": "j"},
            "annotations": {"volcano.sh/job-retry-count": str(retry)},
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": task}]},
        "status": {"containerStatuses": [{"name": task, "restartCount": 0, "state": {"terminated": {"exitCode": 7}}}]},
    }


def test_pods_listed_after_the_outcome_stream_what_the_pod_watch_had_not_delivered():
    """The Job's watch may show it Failed before the pod watch shows the last attempt's master (no order holds
    between two watches): the pods listed then start its stream; the list only adds and replaces.
    """
    hook = LogsByRead(current=["attempt line"], previous=[])
    shown: list[str] = []

    async def scenario() -> PodLogForwarder:
        forwarder = PodLogForwarder(hook, "ns", "", "c", jobs=lambda: {"j"}, book=CursorBook(), emit=shown.append)
        await forwarder._on_pod("SYNCED", {"items": [_master("u1", 0)]})  # what the watch delivered
        forwarder.catch_up([_master("u2", 1), _master("w1", 1, task="worker")])  # u1 deleted since: not listed
        await forwarder.drain()
        return forwarder

    forwarder = asyncio.run(scenario())
    assert sorted(forwarder.pods) == ["u1", "u2"]  # the worker's pod is not the task's; u1 stays as the watch had it
    assert forwarder.pods["u2"]["spec"] == {"restartPolicy": "Never"}  # cached as the watch caches it
    assert [h for h in shown if h.startswith("-----")] == [
        "----- log of j-c-0 (job attempt 1, container restart 0) -----",
        "----- log of j-c-0 (job attempt 2, container restart 0) -----",
    ]
    assert shown.count("attempt line") == 2


def test_a_sensor_lists_its_log_tasks_pods_once_its_verdict_is_reached_and_not_at_a_timeout():
    class Lister(LogsByRead):
        async def list_objects(self, res, namespace, label_selector=None, **_):
            self.selectors.append(label_selector)
            return {"items": [_master("u2", 1, task="mpimaster")]}

    def outcome_of(outcome: FollowOutcome) -> tuple[list[str], list[str]]:
        hook, shown = Lister(current=["attempt line"], previous=[]), []
        hook.selectors = []
        follower = ObjectPhaseFollower(
            hook, "volcano_job", "j", "ns", ["Completed"], ["Failed"], log_task="mpimaster", emit=shown.append
        )

        async def scenario() -> None:
            await follower.before_drain(outcome)
            await follower.logs.drain()

        asyncio.run(scenario())
        return hook.selectors, shown

    selectors, shown = outcome_of(FollowOutcome("failed", "Failed", "failed"))
    assert selectors == ["volcano.sh/task-spec=mpimaster,volcano.sh/job-name=j"]
    assert shown == ["----- log of j-c-0 (job attempt 2, container restart 0) -----", "attempt line"]
    assert outcome_of(FollowOutcome("timeout", "Running", "timeout")) == ([], [])
