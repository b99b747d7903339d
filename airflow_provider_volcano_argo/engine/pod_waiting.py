"""Tell the task log why a followed pod's containers do not start (``models/pod_waiting.py`` decides what).

Waiting reasons come from the pod watch the log forwarder runs already: no request of their own. Only a pod whose
containers have waited ``ContainerCreating`` for ``STUCK_CREATING_SECONDS`` costs one list of its Events, at most
once per ``events_interval`` (the heartbeat).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.exceptions import VolcanoArgoApiError
from airflow_provider_volcano_argo.models.container_instances import job_of_pod
from airflow_provider_volcano_argo.models.pod_waiting import (
    STUCK_CREATING_SECONDS,
    creating,
    creating_notice,
    waiting_notices,
)
from airflow_provider_volcano_argo.models.resources import EVENTS

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook
    from airflow_provider_volcano_argo.models.pod_waiting import WaitingNotice


class PodWaitingReporter:
    """Writes one line per new waiting reason (or message) of the followed pods' containers."""

    def __init__(
        self,
        hook: AsyncVolcanoArgoHook,
        namespace: str,
        emit: Callable[[str], None],
        events_interval: float = 60.0,
        stuck_after: float = STUCK_CREATING_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.hook, self.namespace, self.emit = hook, namespace, emit
        self.events_interval, self.stuck_after, self.clock = events_interval, stuck_after, clock
        self.told: set[str] = set()
        self.creating_since: dict[str, float] = {}  # pod uid -> when it was first seen creating
        self.events_read_at: float | None = None

    async def report(self, pods: Iterable[dict], jobs: set[str]) -> None:
        """Report the waiting containers of ``pods`` of ``jobs``; read the Events of pods stuck creating."""
        now = self.clock()
        stuck: list[dict] = []
        creating_now: dict[str, float] = {}
        for pod in pods:
            if job_of_pod(pod) not in jobs:
                continue
            for notice in waiting_notices(pod):
                self._tell(notice)
            if creating(pod):
                uid = pod["metadata"].get("uid", "")
                creating_now[uid] = self.creating_since.get(uid, now)
                if now - creating_now[uid] >= self.stuck_after:
                    stuck.append(pod)
        self.creating_since = creating_now
        due = self.events_read_at is None or now - self.events_read_at >= self.events_interval
        if stuck and due:
            self.events_read_at = now
            for pod in stuck:
                await self._read_events(pod)

    async def _read_events(self, pod: dict) -> None:
        name = pod["metadata"]["name"]
        selector = f"involvedObject.kind=Pod,involvedObject.name={name},type=Warning"
        try:
            listed = await self.hook.list_objects(EVENTS, self.namespace, field_selector=selector)
        except VolcanoArgoApiError:  # a diagnosis only: the run goes on, the next heartbeat tries again
            return
        notice = creating_notice(pod, listed.get("items") or [])
        if notice is not None:
            self._tell(notice)

    def _tell(self, notice: WaitingNotice) -> None:
        if notice.key not in self.told:
            self.told.add(notice.key)
            self.emit(notice.line)
