"""Why a followed pod's containers do not start: task-log lines for a bound pod that waits.

A pod the gang scheduler bound can still wait for ever: the kubelet leaves its containers *waiting* with a reason
(``CreateContainerConfigError`` for a Secret or ConfigMap its env names that does not exist, ``ErrImagePull`` /
``ImagePullBackOff``, ...) and a message. A volume that cannot be mounted leaves them waiting ``ContainerCreating``
(``PodInitializing`` with init containers) and says why only in a Warning Event on the pod (``FailedMount``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Waiting reasons of containers on their way to start: nothing to report by themselves.
BENIGN_WAITING = frozenset({"ContainerCreating", "PodInitializing"})
#: Warning Events that say why a pod's containers wait ``ContainerCreating`` (the newest is reported).
CREATING_WARNINGS = ("FailedMount", "FailedAttachVolume", "FailedCreatePodSandBox")
#: A pod whose containers waited ``ContainerCreating`` this long has its Warning Events read.
STUCK_CREATING_SECONDS = 30.0


@dataclass(frozen=True)
class WaitingNotice:
    """One task-log line; ``key`` is the same for the same container, reason and message (told once)."""

    key: str
    line: str


def _statuses(pod: dict) -> list[tuple[str, dict]]:
    status = pod.get("status") or {}
    init = [("init container", s) for s in status.get("initContainerStatuses") or []]
    return init + [("container", s) for s in status.get("containerStatuses") or []]


def _ended(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or bool(
        pod["metadata"].get("deletionTimestamp")
    )


def waiting_notices(pod: dict) -> list[WaitingNotice]:
    """Return a line per container (or init container) of ``pod`` waiting for a reason worth telling.

    E.g. ``pod mpi-x-mpimaster-0: container mpimaster waiting: CreateContainerConfigError: secret "s" not found``.
    """
    if _ended(pod):
        return []
    meta = pod["metadata"]
    found = []
    for kind, status in _statuses(pod):
        waiting = (status.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason") or ""
        if not reason or reason in BENIGN_WAITING:
            continue
        message = " ".join(str(waiting.get("message") or "").split())
        name = status.get("name", "")
        text = f"{reason}: {message}" if message else reason
        found.append(
            WaitingNotice(
                f"{meta.get('uid', '')}/{name}/{reason}/{message}",
                f"pod {meta['name']}: {kind} {name} waiting: {text}",
            )
        )
    return found


def creating(pod: dict) -> bool:
    """Tell whether ``pod`` is bound to a node and none of its containers has started, nor waits for a reason.

    What a volume that cannot be mounted (or a sandbox that cannot be created) looks like in the pod's status.
    """
    if _ended(pod) or not (pod.get("spec") or {}).get("nodeName"):
        return False
    if (pod.get("status") or {}).get("phase", "Pending") != "Pending":
        return False
    for _, status in _statuses(pod):
        state, last = status.get("state") or {}, status.get("lastState") or {}
        if {"running", "terminated"} & (set(state) | set(last)):
            return False
        if ((state.get("waiting") or {}).get("reason") or "ContainerCreating") not in BENIGN_WAITING:
            return False
    return True


def _event_time(event: dict) -> str:
    series = event.get("series") or {}
    times = (
        series.get("lastObservedTime"),
        event.get("lastTimestamp"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        (event.get("metadata") or {}).get("creationTimestamp"),
    )
    return max((t[:19] for t in times if t), default="")


def creating_notice(pod: dict, events: list[dict]) -> WaitingNotice | None:
    """Return a line for the newest Warning Event of ``CREATING_WARNINGS`` among ``pod``'s ``events``, or None.

    E.g. ``pod mpi-x-mpimaster-0: containers waiting ContainerCreating: FailedMount: MountVolume.SetUp failed ...``.
    """
    uid = pod["metadata"].get("uid", "")
    mine = [
        e
        for e in events
        if e.get("type") == "Warning"
        and e.get("reason") in CREATING_WARNINGS
        and (e.get("involvedObject") or {}).get("uid", uid) == uid
    ]
    if not mine:
        return None
    newest = max(reversed(mine), key=_event_time)  # of equal times, the last listed
    reason, message = newest["reason"], " ".join(str(newest.get("message") or "").split())
    return WaitingNotice(
        f"{uid}/events/{reason}/{message}",
        f"pod {pod['metadata']['name']}: containers waiting ContainerCreating: {reason}: {message}",
    )
