"""The emulated Volcano job controller: Job -> PodGroup, plugin resources, pods, policies, phases and status.

Follows volcano-sh/volcano ``pkg/controllers/job/`` (``job_controller_handler.go``: which pod changes raise which
events; ``state/``: phases) and ``bus/v1alpha1`` Commands. What it does to a Job's objects is in
``volcano/actions.py`` (``job_controller_actions.go``: syncJob, killJob, createOrUpdatePodGroup;
``pkg/controllers/job/plugins/``: svc, ssh, env), the status it writes in ``volcano/status.py``.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections import defaultdict
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.sandbox.emulation.informer import RESYNC_SECONDS, Controller
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException
from airflow_provider_volcano_argo.sandbox.volcano.actions import COMPONENT, JobActions
from airflow_provider_volcano_argo.sandbox.volcano.plugins import controlled_resources
from airflow_provider_volcano_argo.sandbox.volcano.rules import (
    OUT_OF_SYNC,
    TERMINAL,
    Counts,
    Request,
    next_phase,
    phase_action,
    request_action,
    with_defaults,
)
from airflow_provider_volcano_argo.sandbox.volcano.status import (
    KILLING_PHASES,
    count_pods,
    job_status,
    kill_counts,
    pod_phase,
    restarts,
)

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.emulation.cluster import Cluster

log = logging.getLogger(__name__)


class VolcanoJobController(Controller):
    """Reconciles ``batch.volcano.sh`` Jobs; pod changes become policy events, Commands become actions."""

    name = "volcano-job-controller"

    def __init__(self, cluster: Cluster, time_scale: float = 1.0, counts_retained_pods: bool = False):
        super().__init__(cluster.stop, resync_seconds=RESYNC_SECONDS * time_scale)
        self.cluster = cluster
        self.api = cluster.api
        self.time_scale = time_scale
        # Volcano <= v1.10: killJob counted the pods it retained, so a Completed or Failed Job showed them in
        # succeeded, failed and taskStatusCount; from v1.11 it counts none (volcano#4616). May change at run time.
        self.counts_retained_pods = counts_retained_pods
        self.requests: dict[tuple[str, str], list[Request]] = defaultdict(list)
        self._in_flight: tuple[tuple[str, str] | None, list[Request]] = (None, [])
        self.lock = threading.Lock()

    def start(self) -> None:
        self.jobs = self.cluster.informer("vcjobs")
        self.pods = self.cluster.informer("pods")
        self.groups = self.cluster.informer("podgroups")
        self.commands = self.cluster.informer("commands")
        self.actions = JobActions(self.cluster, self.pods, self.groups)
        self.jobs.subscribe(
            lambda kind, obj, old: self.enqueue((obj["metadata"]["namespace"], obj["metadata"]["name"]))
        )
        self.groups.subscribe(self._on_group)
        self.pods.subscribe(self._on_pod)
        self.commands.subscribe(self._on_command)
        super().start()

    def keys(self) -> list:
        return [(j["metadata"]["namespace"], j["metadata"]["name"]) for j in self.jobs.items()]

    # -- events (job_controller_handler.go) ---------------------------------------------------------------
    def _add_request(self, key: tuple[str, str], request: Request) -> None:
        with self.lock:
            self.requests[key].append(request)
        self.enqueue(key)

    def _on_group(self, kind: str, obj: dict, old: dict | None) -> None:
        job = next((r["name"] for r in obj["metadata"].get("ownerReferences", []) if r.get("kind") == "Job"), None)
        if job:
            key = (obj["metadata"]["namespace"], job)
            if (
                kind != "DELETED"
                and (obj.get("status") or {}).get("phase") == "Unknown"
                and ((old or {}).get("status") or {}).get("phase") != "Unknown"
            ):
                self._add_request(key, Request("Unknown"))
            self.enqueue(key)

    def _on_pod(self, kind: str, pod: dict, old: dict | None) -> None:
        labels = pod["metadata"].get("labels", {})
        job = labels.get("volcano.sh/job-name")
        if not job or labels.get("volcano.sh/job-namespace") != pod["metadata"]["namespace"]:
            return
        key = (pod["metadata"]["namespace"], job)
        task = labels.get("volcano.sh/task-spec", "")
        version = int(pod["metadata"].get("annotations", {}).get("volcano.sh/job-version", "0"))
        job_obj = self.jobs.get(*key)
        current = int(((job_obj or {}).get("status") or {}).get("version", 0))
        if version < current:
            self.enqueue(key)  # requests from an older job version are downgraded to SyncJob
            return
        if kind == "DELETED":
            if pod["metadata"].get("annotations", {}).get(OUT_OF_SYNC) != "true":
                self._add_request(key, Request("PodEvicted", task, version=version))
            self.enqueue(key)
            return
        new_phase = pod_phase(pod)
        old_phase = pod_phase(old) if old else ""
        if new_phase != old_phase and new_phase == "Failed":
            statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
            code = int(((statuses[0].get("state") or {}).get("terminated") or {}).get("exitCode", 0))
            self._add_request(key, Request("PodFailed", task, code, version=version))
        log.debug("pod %s: %s -> %s", pod["metadata"]["name"], old_phase, new_phase)
        if new_phase != old_phase and new_phase == "Succeeded" and job_obj and self._task_completed(job_obj, task):
            self._add_request(key, Request("TaskCompleted", task, version=version))
        if new_phase in ("Running", "Pending") and job_obj and restarts(pod) > (restarts(old) if old else 0):
            if self._task_failed(job_obj, task):
                self._add_request(key, Request("TaskFailed", task, version=version))
        self.enqueue(key)

    def _task_pods(self, job: dict, task: str) -> list[dict]:
        meta = job["metadata"]
        return [
            p
            for p in self.pods.items(meta["namespace"])
            if p["metadata"].get("labels", {}).get("volcano.sh/job-name") == meta["name"]
            and p["metadata"]["labels"].get("volcano.sh/task-spec") == task
        ]

    def _task_completed(self, job: dict, task: str) -> bool:
        spec = with_defaults(job["spec"])
        replicas = next((int(t["replicas"]) for t in spec["tasks"] if t["name"] == task), 0)
        return sum(1 for p in self._task_pods(job, task) if pod_phase(p) == "Succeeded") >= replicas > 0

    def _task_failed(self, job: dict, task: str) -> bool:
        spec = with_defaults(job["spec"])
        limit = next((int(t.get("maxRetry", 3)) for t in spec["tasks"] if t["name"] == task), 3)
        if limit == -1:
            return False
        limit = limit or 3
        active = [p for p in self._task_pods(job, task) if pod_phase(p) in ("Running", "Pending")]
        return sum(restarts(p) for p in active) >= limit

    def _on_command(self, kind: str, command: dict, old: dict | None) -> None:
        if kind == "DELETED":
            return
        target = command.get("target") or {}
        meta = command["metadata"]
        if target.get("kind") != "Job" or not target.get("name"):
            return
        self.api.delete("commands", meta["name"], meta["namespace"])  # first, so it runs at most once
        key = (meta["namespace"], target["name"])
        job = self.jobs.get(*key)
        if job:
            self.cluster.record_event(
                job,
                "Normal",
                "CommandIssued",
                f"Start to execute command {command.get('action')}, and clean it up to make "
                "sure executed not more than once.",
                COMPONENT,
            )
        self._add_request(key, Request("CommandIssued", action=command.get("action", "")))

    # -- reconcile ----------------------------------------------------------------------------------------
    def reconcile(self, key: tuple[str, str]) -> float | None:
        # read the job itself, not the informer's copy: acting on a stale status would undo newer transitions
        job = self.api.get_or_none("vcjobs", key[1], key[0]) if self.jobs.get(*key) is not None else None
        if job is None:
            with self.lock:
                self.requests.pop(key, None)
            return None
        if job["metadata"].get("deletionTimestamp"):
            return None  # the garbage collector removes what the job owns
        spec = with_defaults(job["spec"])
        job = {**job, "spec": spec}
        status = copy.deepcopy(job.get("status") or {})
        phase = (status.get("state") or {}).get("phase", "")
        if not phase:
            return self._init(job)
        with self.lock:
            pending = self.requests.pop(key, [])
        self._in_flight = (key, pending)
        killed: dict[str, dict] = {}
        for index, request in enumerate(pending):
            # applyPolicies runs when the request is handled: an earlier request of this batch may have killed the
            # attempt (version++), so a second eviction of the same drain only syncs (one retry per restart)
            action = request_action(spec, request, int(status.get("version", 0)))
            log.debug("job %s/%s in %s: %s -> %s", key[0], key[1], phase, request, action)
            if action == "SyncJob" or phase_action(phase, action).kill is None:
                continue
            self.cluster.record_event(job, "Normal", "ExecuteAction", f"Start to execute action {action} ", COMPONENT)
            phase, status, gone = self.actions.execute(job, status, phase, action)
            killed.update((p["metadata"]["name"], p) for p in gone)
            # killPods writes the action's transition (its LastTransitionTime and condition) before any later
            # sync: a Job restarted while Pending goes Restarting, then Pending again with a new transition time
            with self.lock:
                self.requests[key][:0] = pending[index + 1 :]
            self._in_flight = (key, [request])
            self._write_status(job, status, phase, *self._counts(job, status, phase, killed, killing=True))
            self._in_flight = (None, [])
            return 0.0
        # a sync: Pending, Running and Restarting's SyncJob count the pods as syncJob does, the other states kill
        killing = phase_action(phase, "SyncJob").kill is not None
        pods = self.actions.current_pods(job)
        if killing:
            # completing.go, terminating.go, aborting.go, aborted.go, finished.go: a sync kills softly too
            gone = self.actions.kill(job, status, pods, retain_finished=True)
            killed.update((p["metadata"]["name"], p) for p in gone)
        elif phase in ("Pending", "Running", "Restarting"):
            # pending.go, running.go and restarting.go all SyncJob: a task whose dependsOn was not met yet gets its
            # pods while the job runs, and a restarting job's new pods are created once its PodGroup is admitted
            # again, while killed pods may still be terminating
            self.actions.ensure_group_and_plugins(job, status)
            if self.actions.group_admitted(job):
                self.actions.create_pods(job, status, pods)
        counts, per_task = self._counts(job, status, phase, killed, killing)
        task_succeeded = {t: c.get("Succeeded", 0) for t, c in per_task.items()}
        new_phase = (
            phase
            if phase in TERMINAL
            else next_phase(phase, spec, counts, int(status.get("retryCount", 0)), task_succeeded)
        )
        if new_phase in TERMINAL and phase not in TERMINAL:
            self.actions.kill(job, status, self.actions.current_pods(job), retain_finished=True)
        self._write_status(job, status, new_phase, counts, per_task)
        self._in_flight = (None, [])
        return None if new_phase in TERMINAL else self.resync_seconds

    def _counts(
        self, job: dict, status: dict, phase: str, killed: dict[str, dict], killing: bool
    ) -> tuple[Counts, dict[str, dict[str, int]]]:
        """Count the Job's pods for its status: as killPods does when this pass killed, else as syncJob does."""
        if killing and phase in KILLING_PHASES and not self.counts_retained_pods:
            last = int(status.get("retryCount", 0)) >= int(job["spec"].get("maxRetry", 3)) - 1
            retain = phase != "Restarting" or last  # restarting.go: PodRetainPhaseNone, soft at the last retry
            return kill_counts(self.actions.current_pods(job), retain), {}
        # killPods counts each pod it deleted as terminating, whether the informer still shows it or it is gone
        # already (a container that ends on SIGTERM at once): the finishing phases wait for them for one sync
        current = self.actions.current_pods(job)
        names = {p["metadata"]["name"] for p in current}
        pods = [
            {**p, "metadata": {**p["metadata"], "deletionTimestamp": "killed"}}
            if p["metadata"]["name"] in killed and not p["metadata"].get("deletionTimestamp")
            else p
            for p in current + [p for n, p in killed.items() if n not in names]
        ]
        return count_pods(pods, int(status.get("version", 0)))

    def _init(self, job: dict) -> float:
        status = {
            "minAvailable": int(job["spec"]["minAvailable"]),
            "retryCount": 0,
            "version": 0,
            "controlledResources": controlled_resources(job),
        }
        self._write_status(job, status, "Pending", Counts(), {})
        return 0.0

    def _write_status(
        self, job: dict, status: dict, phase: str, counts: Counts, per_task: dict[str, dict[str, int]]
    ) -> None:
        old = job.get("status") or {}
        new = job_status(job, status, phase, counts, per_task)
        if new == {k: old.get(k) for k in new}:
            return
        meta = job["metadata"]
        # replace, not merge-patch: a merge patch cannot drop keys (an emptied controlledResources), and the
        # resourceVersion makes a write from a stale cache fail with 409 instead of undoing newer state
        current = self.jobs.get(meta["namespace"], meta["name"]) or job
        body = {
            **current,
            "status": new,
            "metadata": {**current["metadata"], "resourceVersion": meta["resourceVersion"]},
        }
        try:
            self.api.replace("vcjobs", body, subresource="status")
        except ApiException as exc:
            if exc.status in (404, 409):
                key, requests = getattr(self, "_in_flight", (None, []))
                if exc.status == 409 and key == (meta["namespace"], meta["name"]) and requests:
                    with self.lock:  # the transition was not recorded: handle these events again
                        self.requests[key][:0] = requests
                self.enqueue((meta["namespace"], meta["name"]), 0.05)
            else:
                raise
