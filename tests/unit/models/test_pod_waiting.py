"""Why a followed pod's containers do not start: the lines and when a pod counts as stuck creating."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.pod_waiting import creating, creating_notice, waiting_notices


def _pod(containers=(), init=(), phase="Pending", node="node-0") -> dict:
    return {
        "metadata": {"name": "mpi-x-mpimaster-0", "uid": "u1"},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase, "containerStatuses": list(containers), "initContainerStatuses": list(init)},
    }


def _waiting(name: str, reason: str, message: str = "") -> dict:
    waiting = {"reason": reason, **({"message": message} if message else {})}
    return {"name": name, "state": {"waiting": waiting}, "restartCount": 0}


def test_a_missing_secret_is_told_with_the_kubelets_message():
    pod = _pod([_waiting("mpimaster", "CreateContainerConfigError", 'secret "solver-credentials" not found')])
    [notice] = waiting_notices(pod)
    assert notice.line == (
        'pod mpi-x-mpimaster-0: container mpimaster waiting: CreateContainerConfigError: secret "solver-credentials"'
        " not found"
    )


def test_init_containers_and_image_pulls_are_told_and_benign_reasons_are_not():
    pod = _pod(
        [_waiting("mpimaster", "PodInitializing"), _waiting("sidecar", "ImagePullBackOff", 'Back-off pulling "x"')],
        [_waiting("init", "ErrImagePull", "rpc error:\n  not found")],
    )
    lines = [n.line for n in waiting_notices(pod)]
    assert lines == [
        "pod mpi-x-mpimaster-0: init container init waiting: ErrImagePull: rpc error: not found",
        'pod mpi-x-mpimaster-0: container sidecar waiting: ImagePullBackOff: Back-off pulling "x"',
    ]
    assert waiting_notices(_pod([_waiting("mpimaster", "ContainerCreating")])) == []


def test_the_key_changes_with_the_reason_or_the_message():
    keys = {
        waiting_notices(_pod([_waiting("m", reason, message)]))[0].key
        for reason, message in (("ErrImagePull", "a"), ("ErrImagePull", "a"), ("ErrImagePull", "b"), ("X", "a"))
    }
    assert len(keys) == 3


def test_an_ended_pod_is_not_told():
    pod = _pod([_waiting("m", "CrashLoopBackOff", "back-off")], phase="Failed")
    assert waiting_notices(pod) == []


def test_creating_means_bound_and_nothing_started_nor_failing():
    assert creating(_pod([_waiting("m", "ContainerCreating")]))
    assert creating(_pod([_waiting("m", "PodInitializing")], [_waiting("i", "PodInitializing")]))
    assert creating(_pod([]))  # bound, no status yet
    assert not creating(_pod([_waiting("m", "ContainerCreating")], node=None))  # not bound
    assert not creating(_pod([_waiting("m", "CreateContainerConfigError", "x")]))  # its own line says why
    running = {"name": "i", "state": {"running": {}}}
    assert not creating(_pod([_waiting("m", "PodInitializing")], [running]))
    assert not creating(_pod([{"name": "m", "state": {"running": {}}}], phase="Running"))


def _event(reason: str, message: str, when: str, kind: str = "Warning", uid: str = "u1") -> dict:
    return {
        "type": kind,
        "reason": reason,
        "message": message,
        "lastTimestamp": when,
        "involvedObject": {"kind": "Pod", "name": "mpi-x-mpimaster-0", "uid": uid},
    }


def test_the_newest_failed_mount_of_this_pod_is_told():
    pod = _pod([_waiting("m", "ContainerCreating")])
    events = [
        _event("FailedMount", 'MountVolume.SetUp failed for volume "data" : new', "2026-01-01T00:00:09Z"),
        _event("FailedMount", 'MountVolume.SetUp failed for volume "data" : old', "2026-01-01T00:00:01Z"),
        _event("FailedMount", "an earlier pod of that name", "2026-01-01T00:00:30Z", uid="u0"),
        _event("Scheduled", "not a warning", "2026-01-01T00:00:40Z", kind="Normal"),
        _event("BackOff", "not about creating", "2026-01-01T00:00:50Z"),
    ]
    notice = creating_notice(pod, events)
    assert notice is not None
    assert notice.line == (
        "pod mpi-x-mpimaster-0: containers waiting ContainerCreating: FailedMount: MountVolume.SetUp failed for volume"
        ' "data" : new'
    )
    assert creating_notice(pod, events[2:]) is None
