"""The emulated Volcano job controller: Job -> PodGroup, plugin resources, pods, policies, phases and status.

Follows volcano-sh/volcano ``pkg/controllers/job/`` (``job_controller_actions.go``: syncJob, killJob,
createOrUpdatePodGroup; ``job_controller_handler.go``: which pod changes raise which events; ``state/``: phases;
``pkg/controllers/job/plugins/``: svc, ssh, env) and ``bus/v1alpha1`` Commands.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections import defaultdict

from airflow_provider_volcano_argo.sandbox.emulation.cluster import Cluster, now_rfc3339, owner_reference
from airflow_provider_volcano_argo.sandbox.emulation.informer import RESYNC_SECONDS, Controller
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException
from airflow_provider_volcano_argo.sandbox.kubelet.resources import pod_requests
from airflow_provider_volcano_argo.sandbox.volcano.plugins import controlled_resources, mutate_pod, plugin_resources
from airflow_provider_volcano_argo.sandbox.volcano.rules import (
    FINISHING,
    OUT_OF_SYNC,
    TERMINAL,
    Counts,
    Request,
    gang_resources,
    next_phase,
    pod_name,
    resolve_action,
    with_defaults,
)

log = logging.getLogger(__name__)
COMPONENT = "vc-controller-manager"


def _phase_of(pod: dict) -> str:
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return (pod.get("status") or {}).get("phase", "Pending") or "Pending"


def _restarts(pod: dict) -> int:
    status = pod.get("status") or {}
    return sum(
        int(c.get("restartCount", 0))
        for c in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])
    )


class VolcanoJobController(Controller):
    """Reconciles ``batch.volcano.sh`` Jobs; pod changes become policy events, Commands become actions."""

    name = "volcano-job-controller"

    def __init__(self, cluster: Cluster, time_scale: float = 1.0):
        super().__init__(cluster.stop, resync_seconds=RESYNC_SECONDS * time_scale)
        self.cluster = cluster
        self.api = cluster.api
        self.time_scale = time_scale
        self.requests: dict[tuple[str, str], list[Request]] = defaultdict(list)
        self._in_flight: tuple[tuple[str, str] | None, list[Request]] = (None, [])
        self.lock = threading.Lock()

    def start(self) -> None:
        self.jobs = self.cluster.informer("vcjobs")
        self.pods = self.cluster.informer("pods")
        self.groups = self.cluster.informer("podgroups")
        self.commands = self.cluster.informer("commands")
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
                self._add_request(key, Request("PodEvicted", task))
            self.enqueue(key)
            return
        new_phase = _phase_of(pod)
        old_phase = _phase_of(old) if old else ""
        if new_phase != old_phase and new_phase == "Failed":
            statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
            code = int(((statuses[0].get("state") or {}).get("terminated") or {}).get("exitCode", 0))
            self._add_request(key, Request("PodFailed", task, code))
        log.debug("pod %s: %s -> %s", pod["metadata"]["name"], old_phase, new_phase)
        if new_phase != old_phase and new_phase == "Succeeded" and job_obj and self._task_completed(job_obj, task):
            self._add_request(key, Request("TaskCompleted", task))
        if new_phase in ("Running", "Pending") and job_obj and _restarts(pod) > (_restarts(old) if old else 0):
            if self._task_failed(job_obj, task):
                self._add_request(key, Request("TaskFailed", task))
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
        return sum(1 for p in self._task_pods(job, task) if _phase_of(p) == "Succeeded") >= replicas > 0

    def _task_failed(self, job: dict, task: str) -> bool:
        spec = with_defaults(job["spec"])
        limit = next((int(t.get("maxRetry", 3)) for t in spec["tasks"] if t["name"] == task), 3)
        if limit == -1:
            return False
        limit = limit or 3
        active = [p for p in self._task_pods(job, task) if _phase_of(p) in ("Running", "Pending")]
        return sum(_restarts(p) for p in active) >= limit

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
        for request in pending:
            action = resolve_action(spec, request)
            log.debug("job %s/%s in %s: %s -> %s", key[0], key[1], phase, request, action)
            if action != "SyncJob":
                self.cluster.record_event(
                    job, "Normal", "ExecuteAction", f"Start to execute action {action} ", COMPONENT
                )
                phase, status = self._act(job, status, phase, action)
        pods = self._current_pods(job, status)
        if phase in TERMINAL:
            self._kill(job, status, pods, retain_finished=True)
        elif phase == "Pending":
            self._ensure_group_and_plugins(job, status)
            if self._group_admitted(job):
                self._create_pods(job, status, pods)
        counts, per_task = self._count(job, status)
        task_succeeded = {t: c.get("Succeeded", 0) for t, c in per_task.items()}
        new_phase = (
            phase
            if phase in TERMINAL
            else next_phase(phase, spec, counts, int(status.get("retryCount", 0)), task_succeeded)
        )
        if new_phase in TERMINAL and phase not in TERMINAL:
            self._kill(job, status, self._current_pods(job, status), retain_finished=True)
        self._write_status(job, status, new_phase, counts, per_task)
        self._in_flight = (None, [])
        return None if new_phase in TERMINAL else self.resync_seconds

    def _init(self, job: dict) -> float:
        status = {
            "minAvailable": int(job["spec"]["minAvailable"]),
            "retryCount": 0,
            "version": 0,
            "controlledResources": controlled_resources(job),
        }
        self._write_status(job, status, "Pending", Counts(), {})
        return 0.0

    def _act(self, job: dict, status: dict, phase: str, action: str) -> tuple[str, dict]:
        if phase in TERMINAL:
            return phase, status
        pods = self._current_pods(job, status)
        if action in ("RestartJob", "RestartTask", "RestartPod", "ResumeJob"):
            if action == "ResumeJob" and phase not in ("Aborting", "Aborted"):
                return phase, status
            # killJob runs before retryCount++ (state/*.go): the last retry keeps finished pods for their logs
            last = int(status.get("retryCount", 0)) >= int(job["spec"].get("maxRetry", 3)) - 1
            self._kill(job, status, pods, retain_finished=last or action == "ResumeJob")
            status["retryCount"] = int(status.get("retryCount", 0)) + 1
            return "Restarting", status
        if action in FINISHING and phase not in FINISHING.values():
            self._kill(job, status, pods, retain_finished=True)
            return FINISHING[action], status
        return phase, status

    # -- pods -----------------------------------------------------------------------------------------------
    def _current_pods(self, job: dict, status: dict) -> list[dict]:
        meta = job["metadata"]
        return [
            p
            for p in self.pods.items(meta["namespace"])
            if p["metadata"].get("labels", {}).get("volcano.sh/job-name") == meta["name"]
            and any(r.get("uid") == meta["uid"] for r in p["metadata"].get("ownerReferences", []))
        ]

    def _kill(self, job: dict, status: dict, pods: list[dict], retain_finished: bool) -> None:
        """killJob: mark and delete pods (keeping finished ones when soft), drop plugin resources and the
        PodGroup, and bump the version when there was something to kill."""
        killed = False
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if retain_finished and _phase_of(pod) in ("Succeeded", "Failed"):
                continue
            meta = pod["metadata"]
            try:
                self.api.patch(
                    "pods", meta["name"], {"metadata": {"annotations": {OUT_OF_SYNC: "true"}}}, meta["namespace"]
                )
                self.api.delete("pods", meta["name"], meta["namespace"])
                killed = True
            except ApiException as exc:
                log.debug("deleting %s: %s", meta["name"], exc)
        meta = job["metadata"]
        if status.get("controlledResources"):
            for kind, obj in plugin_resources(job, owner_reference(job)):
                self.api.delete(kind, obj["metadata"]["name"], meta["namespace"])
            killed = True
        if self.api.delete("podgroups", f"{meta['name']}-{meta['uid']}", meta["namespace"]) is not None:
            killed = True
        if killed:
            status["version"] = int(status.get("version", 0)) + 1
        status["controlledResources"] = {}

    def _ensure_group_and_plugins(self, job: dict, status: dict) -> None:
        meta = job["metadata"]
        owner = owner_reference(job)
        for kind, obj in plugin_resources(job, owner):
            try:
                self.api.create(kind, obj, meta["namespace"])
            except ApiException as exc:
                if exc.status != 409:
                    raise
        status["controlledResources"] = controlled_resources(job)
        group_name = f"{meta['name']}-{meta['uid']}"
        if self.groups.get(meta["namespace"], group_name) is not None:
            return
        spec = job["spec"]
        minimum = gang_resources(spec, lambda task: pod_requests({"spec": task["template"].get("spec", {})}))
        minimum.pop("pods", None)
        group = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": group_name,
                "namespace": meta["namespace"],
                "ownerReferences": [owner],
                "labels": meta.get("labels", {}),
                "annotations": meta.get("annotations", {}),
            },
            "spec": {
                "minMember": int(spec["minAvailable"]),
                "queue": spec["queue"],
                "minTaskMember": {t["name"]: int(t.get("minAvailable", t["replicas"])) for t in spec["tasks"]},
                "minResources": {k: f"{v:g}" for k, v in minimum.items()},
            },
        }
        if spec.get("priorityClassName"):  # omitted when empty, as Go's omitempty does
            group["spec"]["priorityClassName"] = spec["priorityClassName"]
        try:
            self.api.create("podgroups", group, meta["namespace"])
        except ApiException as exc:
            if exc.status != 409:
                raise

    def _group_admitted(self, job: dict) -> bool:
        meta = job["metadata"]
        group = self.groups.get(meta["namespace"], f"{meta['name']}-{meta['uid']}")
        phase = ((group or {}).get("status") or {}).get("phase", "")
        if group and phase in ("", "Pending"):
            for cond in (group.get("status") or {}).get("conditions") or []:
                if cond.get("type") == "Unschedulable" and cond.get("status") == "True":
                    self.cluster.record_event(
                        job,
                        "Warning",
                        "PodGroupPending",
                        f"PodGroup {meta['namespace']}:{meta['name']} unschedulable, reason: {cond.get('message')}",
                        COMPONENT,
                    )
                    break
        return phase not in ("", "Pending")

    def _create_pods(self, job: dict, status: dict, pods: list[dict]) -> None:
        meta, spec = job["metadata"], job["spec"]
        existing = {p["metadata"]["name"]: p for p in pods}
        for task in spec["tasks"]:
            depends = (task.get("dependsOn") or {}).get("name") or []
            if depends and not self._dependencies_ready(spec, existing, depends, task.get("dependsOn", {})):
                continue
            for index in range(int(task["replicas"])):
                name = pod_name(meta["name"], task["name"], index)
                if name in existing:
                    continue
                self._create_pod(job, status, task, index, name)

    @staticmethod
    def _dependencies_ready(spec: dict, existing: dict, depends: list[str], rule: dict) -> bool:
        """dependsOn: the named tasks' pods are running (all of them, or any with ``iteration: any``)."""
        checks = []
        for dep in depends:
            task = next((t for t in spec["tasks"] if t["name"] == dep), None)
            if task is None:
                return False
            running = [
                p
                for p in existing.values()
                if p["metadata"]["labels"].get("volcano.sh/task-spec") == dep
                and _phase_of(p) in ("Running", "Succeeded")
            ]
            checks.append(len(running) >= int(task["replicas"]))
        return any(checks) if rule.get("iteration") == "any" else all(checks)

    def _create_pod(self, job: dict, status: dict, task: dict, index: int, name: str) -> None:
        meta, spec = job["metadata"], job["spec"]
        template = copy.deepcopy(task.get("template") or {})
        pod_meta = template.get("metadata") or {}
        labels = {
            **(pod_meta.get("labels") or {}),
            "volcano.sh/job-name": meta["name"],
            "volcano.sh/task-spec": task["name"],
            "volcano.sh/job-namespace": meta["namespace"],
            "volcano.sh/queue-name": spec["queue"],
            "volcano.sh/task-index": str(index),
        }
        annotations = {
            **(pod_meta.get("annotations") or {}),
            "volcano.sh/task-spec": task["name"],
            "scheduling.k8s.io/group-name": f"{meta['name']}-{meta['uid']}",
            "volcano.sh/job-name": meta["name"],
            "volcano.sh/queue-name": spec["queue"],
            "volcano.sh/job-version": str(status.get("version", 0)),
            "volcano.sh/template-uid": f"{meta['name']}-{task['name']}",
            "volcano.sh/task-index": str(index),
            "volcano.sh/job-retry-count": str(status.get("retryCount", 0)),
        }
        pod_spec = template.get("spec") or {}
        pod_spec.setdefault("schedulerName", spec.get("schedulerName", "volcano"))
        if spec.get("priorityClassName") and not pod_spec.get("priorityClassName"):
            pod_spec["priorityClassName"] = spec["priorityClassName"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [owner_reference(job)],
            },
            "spec": pod_spec,
        }
        pod = mutate_pod(pod, job, task, index)
        try:
            self.api.create("pods", pod, meta["namespace"])
        except ApiException as exc:
            if exc.status != 409:
                self.cluster.record_event(
                    job, "Warning", "FailedCreate", f"Error creating pods: {exc.reason}", COMPONENT
                )

    # -- status ---------------------------------------------------------------------------------------------
    def _count(self, job: dict, status: dict) -> tuple[Counts, dict[str, dict[str, int]]]:
        counts = Counts()
        per_task: dict[str, dict[str, int]] = {}
        version = int(status.get("version", 0))
        for pod in self._current_pods(job, status):
            annotations = pod["metadata"].get("annotations", {})
            if (
                int(annotations.get("volcano.sh/job-version", 0)) < version
                and not pod["metadata"].get("deletionTimestamp")
                and _phase_of(pod) not in ("Succeeded", "Failed")
            ):
                continue
            phase = _phase_of(pod)
            field = {
                "Pending": "pending",
                "Running": "running",
                "Succeeded": "succeeded",
                "Failed": "failed",
                "Terminating": "terminating",
            }.get(phase, "unknown")
            setattr(counts, field, getattr(counts, field) + 1)
            task = pod["metadata"].get("labels", {}).get("volcano.sh/task-spec", "")
            bucket = per_task.setdefault(task, {})
            shown = phase if phase in ("Pending", "Running", "Succeeded", "Failed") else "Unknown"
            bucket[shown] = bucket.get(shown, 0) + 1
        return counts, per_task

    def _write_status(
        self, job: dict, status: dict, phase: str, counts: Counts, per_task: dict[str, dict[str, int]]
    ) -> None:
        old = job.get("status") or {}
        state = dict(old.get("state") or {})
        conditions = list(old.get("conditions") or [])
        if state.get("phase") != phase:
            now = now_rfc3339()
            state = {"phase": phase, "lastTransitionTime": now}
            conditions = [c for c in conditions if c.get("status") != phase] + [
                {"status": phase, "lastTransitionTime": now}
            ]
        new = {
            "state": state,
            "minAvailable": int(job["spec"]["minAvailable"]),
            "pending": counts.pending,
            "running": counts.running,
            "succeeded": counts.succeeded,
            "failed": counts.failed,
            "terminating": counts.terminating,
            "unknown": counts.unknown,
            "version": int(status.get("version", 0)),
            "retryCount": int(status.get("retryCount", 0)),
            "taskStatusCount": {t: {"phase": c} for t, c in per_task.items()},
            "controlledResources": status.get("controlledResources", {}),
            "conditions": conditions,
        }
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
