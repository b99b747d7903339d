"""The ``resource`` template step: an ``argoexec resource ACTION`` pod, and the node's phase from the pod's.

Follows argoproj/argo-workflows v3.7 ``workflow/controller/operator.go``: ``executeResource`` (the node starts
Pending; one pod whose ``main`` container runs ``argoexec resource ACTION``, the manifest with the Workflow's
controller reference in ``ARGO_TEMPLATE``), ``requeueIfTransientErr`` (a create refused for quota or throttled
keeps the node Pending, with the error as its message; any other refusal is the node's Error),
``podReconciliation`` (a pod gone while its node ran: Error ``pod deleted``; while Pending: created again),
``assessNodeStatus`` / ``inferFailedReason`` (the pod's ``status.message``, else ``main: REASON (exit code N):
TERMINATION-MESSAGE``) and ``taskresult.go`` (outputs from the WorkflowTaskResult named by the node ID). What the pod
does is ``argo/executor.py``; the emulated kubelet runs it, so it can be Pending, evicted, OOM-killed or refused.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING

import yaml

from airflow_provider_volcano_argo.sandbox.argo.container_step import label_completed, workflow_pod
from airflow_provider_volcano_argo.sandbox.argo.executor import EXECUTOR_IMAGE, transient
from airflow_provider_volcano_argo.sandbox.argo.goyaml import load_manifest
from airflow_provider_volcano_argo.sandbox.argo.nodes import NODE_DONE, end_node
from airflow_provider_volcano_argo.sandbox.argo.rules import pod_name
from airflow_provider_volcano_argo.sandbox.emulation.cluster import owner_reference
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, status_message

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.argo.nodes import WorkflowRun
    from airflow_provider_volcano_argo.sandbox.emulation.informer import Informer
    from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import KubeApi


class ResourceSteps:
    """Run ``resource`` steps as ``argoexec`` pods."""

    def __init__(self, api: KubeApi, pods: Informer):
        self.api = api
        self.pods = pods

    def run(self, run: WorkflowRun, template: dict, node_name: str, boundary: str | None) -> str:
        """Advance the step's node: create its pod while Pending, then follow the pod; return the node's phase.

        ``template`` is processed already (its parameters substituted: ``argo/substitution.py``).
        """
        fresh = node_name not in {n["name"] for n in run.nodes.values()}
        node = run.node(node_name, template, boundary, "Pod")
        if fresh:
            node["phase"] = "Pending"  # initializeExecutableNode(..., NodePending)
        if node["phase"] in NODE_DONE:
            return node["phase"]
        ns = run.workflow["metadata"]["namespace"]
        pod = self.pods.get(ns, pod_name(run.name, template["name"], node_name))
        if pod is None:
            if node["phase"] != "Pending":
                return end_node(node, "Error", "pod deleted")
            return self._create(run, template, node)
        status = pod.get("status") or {}
        phase = status.get("phase", "Pending")
        if phase == "Pending":
            return node["phase"]
        if phase == "Running":
            node["phase"] = "Running"
            node.pop("message", None)
            return "Running"
        label_completed(self.api, pod)
        if phase == "Succeeded":
            result = self.api.get_or_none("workflowtaskresults", node["id"], ns) or {}
            outputs = (result.get("outputs") or {}).get("parameters")
            node["outputs"] = {"parameters": outputs} if outputs else {}
            return end_node(node, "Succeeded")
        outcome, message = _failed_reason(pod)
        return end_node(node, outcome, message)

    def _create(self, run: WorkflowRun, template: dict, node: dict) -> str:
        ns = run.workflow["metadata"]["namespace"]
        step = copy.deepcopy(template)
        resource = step["resource"]
        if resource.get("manifest") and resource.get("setOwnerReference"):
            # sigs.k8s.io/yaml: read as go-yaml v2 reads it, written back from the object (keys sorted)
            try:
                obj = load_manifest(resource["manifest"])
            except yaml.YAMLError as exc:
                return end_node(node, "Error", f"error converting YAML to JSON: {exc}")
            if not isinstance(obj, dict):
                return end_node(node, "Error", "error unmarshaling JSON: the manifest is not an object")
            obj.setdefault("metadata", {}).setdefault("ownerReferences", []).append(owner_reference(run.workflow))
            resource["manifest"] = yaml.safe_dump(obj, sort_keys=True, allow_unicode=True)
        action = resource.get("action", "create")
        env = {
            "ARGO_TEMPLATE": json.dumps(step),
            "ARGO_NODE_ID": node["id"],
            "ARGO_WORKFLOW_NAME": run.name,
            "ARGO_WORKFLOW_UID": run.workflow["metadata"]["uid"],
        }
        main = {
            "name": "main",
            "image": EXECUTOR_IMAGE,
            "command": ["argoexec", "resource", action],
            "env": [{"name": k, "value": v} for k, v in env.items()],
        }
        try:
            self.api.create("pods", workflow_pod(run, template, node["id"], node["name"], main), ns)
        except ApiException as exc:
            if exc.status == 409:
                return node["phase"]
            if transient(exc) or _quota_refusal(exc):  # createWorkflowPod -> requeueIfTransientErr
                node["message"] = status_message(exc)  # markNodePending: tried again on the requeue
                run.requeue = True
                return node["phase"]
            return end_node(node, "Error", status_message(exc))
        return node["phase"]


def _quota_refusal(exc: ApiException) -> bool:
    """Tell whether a refusal is a ResourceQuota's (util/errors ``isExceededQuotaErr``: transient for Argo)."""
    return exc.status == 403 and "exceeded quota" in status_message(exc)


def _failed_reason(pod: dict) -> tuple[str, str]:
    """Return the node's phase and message for a Failed pod (operator.go ``inferFailedReason``)."""
    status = pod.get("status") or {}
    if status.get("message"):
        return "Failed", status["message"]
    for ctr in status.get("containerStatuses") or []:
        state = ctr.get("state") or {}
        if "waiting" in state:
            waiting = state["waiting"]
            return "Error", (
                f"Pod failed before {ctr['name']} container starts due to {waiting.get('reason')}: "
                f"{waiting.get('message', '')}"
            )
        ended = state.get("terminated") or {}
        if ended.get("exitCode", 0) == 0:
            continue
        message = f"{ended.get('reason')} (exit code {ended['exitCode']})"
        if ended.get("message"):
            message = f"{message}: {ended['message']}"
        return "Failed", f"{ctr['name']}: {message}"
    return (
        "Failed",
        f"can't find failed message for pod {pod['metadata']['name']} namespace {pod['metadata']['namespace']}",
    )
