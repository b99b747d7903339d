"""The waiting reporter: one line per new reason, Events only for pods stuck creating, once per interval."""

from __future__ import annotations

import asyncio

from airflow_provider_volcano_argo.engine.pod_waiting import PodWaitingReporter
from airflow_provider_volcano_argo.exceptions import VolcanoArgoApiError
from airflow_provider_volcano_argo.models.names import VOLCANO_JOB_NAME_LABEL


class FakeHook:
    """Lists the given Events (or fails), recording each call."""

    def __init__(self, events=(), error: Exception | None = None):
        self.events, self.error, self.calls = list(events), error, []

    async def list_objects(self, res, namespace, label_selector=None, field_selector=None):
        self.calls.append((res.plural, namespace, field_selector))
        if self.error:
            raise self.error
        return {"items": self.events}


def _pod(reason: str, message: str = "", job: str = "mpi-x", uid: str = "u1") -> dict:
    return {
        "metadata": {"name": f"{job}-mpimaster-0", "uid": uid, "labels": {VOLCANO_JOB_NAME_LABEL: job}},
        "spec": {"nodeName": "node-0"},
        "status": {
            "phase": "Pending",
            "containerStatuses": [{"name": "mpimaster", "state": {"waiting": {"reason": reason, "message": message}}}],
        },
    }


class Clock:
    """A monotonic clock the test sets."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _reporter(hook, lines, clock):
    return PodWaitingReporter(hook, "ns", lines.append, events_interval=60.0, stuck_after=30.0, clock=clock)


def test_a_waiting_reason_is_told_once_and_again_when_it_changes():
    lines, clock, hook = [], Clock(), FakeHook()
    reporter = _reporter(hook, lines, clock)
    secret = _pod("CreateContainerConfigError", 'secret "s" not found')
    for _ in range(3):
        asyncio.run(reporter.report([secret], {"mpi-x"}))
    asyncio.run(reporter.report([_pod("CreateContainerConfigError", 'configmap "c" not found')], {"mpi-x"}))
    asyncio.run(reporter.report([_pod("CreateContainerConfigError", "x", job="other")], {"mpi-x"}))  # not ours
    assert lines == [
        'pod mpi-x-mpimaster-0: container mpimaster waiting: CreateContainerConfigError: secret "s" not found',
        'pod mpi-x-mpimaster-0: container mpimaster waiting: CreateContainerConfigError: configmap "c" not found',
    ]
    assert hook.calls == []  # no request: the pod watch had it all


def test_events_are_read_for_a_pod_stuck_creating_once_per_interval():
    event = {
        "type": "Warning",
        "reason": "FailedMount",
        "message": 'MountVolume.SetUp failed for volume "data" : not found',
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "involvedObject": {"uid": "u1"},
    }
    lines, clock, hook = [], Clock(), FakeHook([event])
    reporter = _reporter(hook, lines, clock)
    pod = _pod("ContainerCreating")
    for now in (0.0, 10.0, 29.0):
        clock.now = now
        asyncio.run(reporter.report([pod], {"mpi-x"}))
    assert hook.calls == []  # not stuck yet
    for now in (30.0, 31.0, 60.0, 89.0):
        clock.now = now
        asyncio.run(reporter.report([pod], {"mpi-x"}))
    assert hook.calls == [
        ("events", "ns", "involvedObject.kind=Pod,involvedObject.name=mpi-x-mpimaster-0,type=Warning")
    ]
    clock.now = 90.0
    asyncio.run(reporter.report([pod], {"mpi-x"}))
    assert len(hook.calls) == 2  # the next heartbeat: read again, the same message is not told again
    assert lines == [
        "pod mpi-x-mpimaster-0: containers waiting ContainerCreating: FailedMount: MountVolume.SetUp failed for "
        'volume "data" : not found'
    ]


def test_a_pod_that_started_is_no_longer_stuck_and_a_failed_read_is_not_fatal():
    lines, clock, hook = [], Clock(), FakeHook(error=VolcanoArgoApiError("forbidden"))
    reporter = _reporter(hook, lines, clock)
    asyncio.run(reporter.report([_pod("ContainerCreating")], {"mpi-x"}))
    clock.now = 40.0
    asyncio.run(reporter.report([_pod("ContainerCreating")], {"mpi-x"}))
    assert len(hook.calls) == 1 and lines == []
    started = _pod("ContainerCreating")
    started["status"]["containerStatuses"][0]["state"] = {"running": {}}
    asyncio.run(reporter.report([started], {"mpi-x"}))
    clock.now = 200.0
    asyncio.run(reporter.report([_pod("ContainerCreating")], {"mpi-x"}))  # creating again: a fresh 30 s
    assert len(hook.calls) == 1
