"""What Volcano's job controller does to a Job's objects.

It creates the PodGroup, the plugins' resources and the pods, kills them, and executes an action in the Job's
current phase. Follows volcano-sh/volcano ``pkg/controllers/job/`` (``job_controller_actions.go``: syncJob, killJob,
createOrUpdatePodGroup; ``job_controller_util.go``: createJobPod; ``state/``: each phase's ``Execute(action)``).
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.sandbox.emulation.cluster import owner_reference
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException
from airflow_provider_volcano_argo.sandbox.kubelet.resources import pod_requests
from airflow_provider_volcano_argo.sandbox.volcano.plugins import controlled_resources, mutate_pod, plugin_resources
from airflow_provider_volcano_argo.sandbox.volcano.rules import (
    OUT_OF_SYNC,
    gang_resources,
    phase_action,
    pod_name,
)
from airflow_provider_volcano_argo.sandbox.volcano.status import pod_phase

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.emulation.cluster import Cluster
    from airflow_provider_volcano_argo.sandbox.emulation.informer import Informer

log = logging.getLogger(__name__)
COMPONENT = "vc-controller-manager"


def dependency_ready(pod: dict) -> bool:
    """Tell whether a pod counts for a dependent task (``isDependsOnPodsReady``): Succeeded, or Running and Ready."""
    status = pod.get("status") or {}
    if status.get("phase") == "Succeeded":
        return True
    return status.get("phase") == "Running" and all(c.get("ready") for c in status.get("containerStatuses") or [])


class JobActions:
    """Act on the objects of Volcano Jobs: their PodGroups, plugin resources and pods."""

    def __init__(self, cluster: Cluster, pods: Informer, groups: Informer):
        self.cluster = cluster
        self.api = cluster.api
        self.pods = pods
        self.groups = groups

    def current_pods(self, job: dict) -> list[dict]:
        """Return the pods the Job owns."""
        meta = job["metadata"]
        return [
            p
            for p in self.pods.items(meta["namespace"])
            if p["metadata"].get("labels", {}).get("volcano.sh/job-name") == meta["name"]
            and any(r.get("uid") == meta["uid"] for r in p["metadata"].get("ownerReferences", []))
        ]

    def execute(self, job: dict, status: dict, phase: str, action: str) -> tuple[str, dict, list[dict]]:
        """Execute ``action`` in the Job's ``phase`` as that phase's state does (``state/*.go: Execute``).

        Return the new phase, the status and the pods killed now.
        """
        step = phase_action(phase, action)
        if step.kill is None:
            return phase, status, []
        # killPods: at the last retry (retryCount >= maxRetry-1, before retryCount++) finished pods are kept
        last = int(status.get("retryCount", 0)) >= int(job["spec"].get("maxRetry", 3)) - 1
        killed = self.kill(job, status, self.current_pods(job), retain_finished=last or step.kill == "soft")
        if step.retry:
            status["retryCount"] = int(status.get("retryCount", 0)) + 1
        return step.phase or phase, status, killed

    def kill(self, job: dict, status: dict, pods: list[dict], retain_finished: bool) -> list[dict]:
        """Kill the Job as killJob does.

        Mark and delete its pods (keeping finished ones when soft), drop the plugin resources and the PodGroup,
        and bump the version when there was something to kill. Return the pods deleted now.
        """
        killed = False
        deleted: list[dict] = []
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if retain_finished and pod_phase(pod) in ("Succeeded", "Failed"):
                continue
            meta = pod["metadata"]
            try:
                self.api.patch(
                    "pods", meta["name"], {"metadata": {"annotations": {OUT_OF_SYNC: "true"}}}, meta["namespace"]
                )
                self.api.delete("pods", meta["name"], meta["namespace"])
                killed = True
                deleted.append(pod)
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
        return deleted

    def ensure_group_and_plugins(self, job: dict, status: dict) -> None:
        """Create the plugins' resources and the Job's PodGroup (createOrUpdatePodGroup) where missing."""
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

    def group_admitted(self, job: dict) -> bool:
        """Tell whether the scheduler has admitted the Job's PodGroup; record why not while it is unschedulable."""
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

    def create_pods(self, job: dict, status: dict, pods: list[dict]) -> None:
        """Create each task's missing pods (syncJob), a task only once its ``dependsOn`` tasks are ready."""
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
        """Tell whether the named tasks are ready (``waitDependsOnTaskMeetCondition``, ``isDependsOnPodsReady``).

        A task is when at least its ``minAvailable`` pods are Succeeded, or Running with every container Ready;
        all the named tasks must be, or any of them with ``iteration: any``.
        """
        checks = []
        for dep in depends:
            task = next((t for t in spec["tasks"] if t["name"] == dep), None)
            if task is None:
                return False
            ready = [
                p
                for p in existing.values()
                if p["metadata"]["labels"].get("volcano.sh/task-spec") == dep and dependency_ready(p)
            ]
            checks.append(len(ready) >= int(task.get("minAvailable", task["replicas"])))
        return any(checks) if rule.get("iteration") == "any" and len(depends) > 1 else all(checks)

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
