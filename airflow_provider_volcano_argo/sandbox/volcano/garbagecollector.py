"""The emulated Volcano garbage collector: a finished Job is deleted ``spec.ttlSecondsAfterFinished`` after it ended.

Follows volcano-sh/volcano v1.13.3 ``pkg/controllers/garbagecollector/garbagecollector.go``: only Jobs in
Completed, Failed or Terminated (not Aborted) with a TTL; the expiry is ``status.state.lastTransitionTime`` plus
the TTL; a fresh read of the Job is checked again before it is deleted with ``propagationPolicy: Foreground`` and a
``uid`` precondition. What the Job owns (pods, PodGroup, the plugins' Service, ConfigMap and Secret) goes with it
through kube-controller-manager's garbage collector. The TTL is multiplied by the sandbox's ``time_scale``, as the
kubelet's grace periods and back-offs are.
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.sandbox.emulation.informer import RESYNC_SECONDS, Controller
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.emulation.cluster import Cluster

log = logging.getLogger(__name__)

#: garbagecollector.go ``isJobFinished``: Aborted is not among them, so an aborted Job is never collected
FINISHED_PHASES = ("Completed", "Failed", "Terminated")


def needs_cleanup(job: dict) -> bool:
    """Whether a Job has a TTL and has finished (garbagecollector.go ``needsCleanup``, ``isJobFinished``)."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    phase = (((job.get("status") or {}).get("state")) or {}).get("phase")
    return ttl is not None and phase in FINISHED_PHASES


def time_left(job: dict, now: datetime.datetime, time_scale: float = 1.0) -> float | None:
    """Return seconds until the Job's TTL expires (<= 0: expired), or None if it is not to be collected.

    garbagecollector.go ``processTTL`` (a Job being deleted or not needing clean-up: none), ``timeLeft`` and
    ``getFinishAndExpireTime`` (expiry = ``status.state.lastTransitionTime`` + TTL; here the TTL times
    ``time_scale``). ``jobFinishTime`` has no finish time without ``lastTransitionTime``: upstream retries with an
    error; here it is None (nothing to do until the Job changes).
    """
    if job["metadata"].get("deletionTimestamp") or not needs_cleanup(job):
        return None
    finished = ((job.get("status") or {}).get("state") or {}).get("lastTransitionTime")
    if not finished:
        return None
    finished_at = datetime.datetime.fromisoformat(str(finished).replace("Z", "+00:00"))
    ttl = float(job["spec"]["ttlSecondsAfterFinished"]) * time_scale
    return (finished_at + datetime.timedelta(seconds=ttl) - now).total_seconds()


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class VolcanoJobGarbageCollector(Controller):
    """Deletes finished Volcano Jobs whose ``ttlSecondsAfterFinished`` has passed (garbagecollector.go)."""

    name = "volcano-gc-controller"

    def __init__(self, cluster: Cluster, time_scale: float = 1.0):
        super().__init__(cluster.stop, resync_seconds=RESYNC_SECONDS * time_scale)
        self.cluster = cluster
        self.api = cluster.api
        self.time_scale = time_scale

    def start(self) -> None:
        self.jobs = self.cluster.informer("vcjobs")
        self.jobs.subscribe(self._on_job)
        super().start()

    def _on_job(self, kind: str, job: dict, old: dict | None) -> None:
        # garbagecollector.go addJob / updateJob: only Jobs not being deleted that need clean-up
        if kind != "DELETED" and not job["metadata"].get("deletionTimestamp") and needs_cleanup(job):
            self.enqueue((job["metadata"]["namespace"], job["metadata"]["name"]))

    def keys(self) -> list:
        return [(j["metadata"]["namespace"], j["metadata"]["name"]) for j in self.jobs.items() if needs_cleanup(j)]

    def reconcile(self, key: tuple[str, str]) -> float | None:
        """garbagecollector.go ``processJob``: check the cached Job, then a fresh one, then delete."""
        job = self.jobs.get(*key)
        if job is None:
            return None
        left = time_left(job, _now(), self.time_scale)
        if left is None:
            return None
        if left > 0:
            return left  # enqueueAfter
        # the TTL may have changed since the cache saw the Job: decide on the Job as it is now
        fresh = self.api.get_or_none("vcjobs", key[1], key[0])
        if fresh is None:
            return None
        left = time_left(fresh, _now(), self.time_scale)
        if left is None:
            return None
        if left > 0:
            return left
        try:
            self.api.delete("vcjobs", key[1], key[0], propagation="Foreground", uid=fresh["metadata"]["uid"])
        except ApiException as exc:
            if exc.status == 409:  # the uid precondition: a new Job of that name; it is checked on its own events
                return None
            log.debug("deleting job %s/%s: %s", key[0], key[1], exc)
            return 1.0  # handleErr: AddRateLimited
        log.debug("job %s/%s: ttlSecondsAfterFinished expired, deleted", *key)
        return None
