"""The ``container`` and ``script`` template steps: one pod per node, and the node's phase from the pod's.

Follows argoproj/argo-workflows v3.7 ``workflow/controller/workflowpod.go`` (pods: name v2, labels, annotations,
container ``main``) and ``operator.go`` (the node's phase and message from its pod's, the ``completed`` label).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.sandbox.argo.nodes import NODE_DONE, end_node
from airflow_provider_volcano_argo.sandbox.argo.rules import pod_name
from airflow_provider_volcano_argo.sandbox.emulation.cluster import owner_reference
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, status_message

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.argo.nodes import WorkflowRun
    from airflow_provider_volcano_argo.sandbox.emulation.informer import Informer
    from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import KubeApi


def workflow_pod(run: WorkflowRun, template: dict, node_id: str, node_name: str, main: dict) -> dict:
    """Return the pod of a step's node whose container is ``main`` (``workflowpod.go`` ``createWorkflowPod``).

    Name v2, the workflow and completed labels, the node annotations, the Workflow as controller owner; the
    template's service account and ``activeDeadlineSeconds``; never restarted.
    """
    spec = {"containers": [main], "restartPolicy": "Never", "serviceAccountName": run.service_account(template)}
    if template.get("activeDeadlineSeconds") is not None:
        spec["activeDeadlineSeconds"] = int(template["activeDeadlineSeconds"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(run.name, template["name"], node_name),
            "namespace": run.workflow["metadata"]["namespace"],
            "labels": {"workflows.argoproj.io/workflow": run.name, "workflows.argoproj.io/completed": "false"},
            "annotations": {
                "workflows.argoproj.io/node-name": node_name,
                "workflows.argoproj.io/node-id": node_id,
                "kubectl.kubernetes.io/default-container": "main",
            },
            "ownerReferences": [owner_reference(run.workflow)],
        },
        "spec": spec,
    }


class ContainerSteps:
    """Run ``container`` and ``script`` steps as pods."""

    def __init__(self, api: KubeApi, pods: Informer):
        self.api = api
        self.pods = pods

    def run(self, run: WorkflowRun, template: dict, node_name: str, boundary: str | None) -> str:
        """Advance the step's node: create its pod once, then follow the pod; return the node's phase.

        ``template`` is processed already (its parameters substituted).
        """
        node = run.node(node_name, template, boundary, "Pod")
        if node["phase"] in NODE_DONE:
            return node["phase"]
        ns = run.workflow["metadata"]["namespace"]
        name = pod_name(run.name, template["name"], node_name)
        pod = self.pods.get(ns, name)
        if pod is None:
            container = copy.deepcopy(template.get("container") or template.get("script"))
            container["name"] = "main"
            if "script" in template:
                container.setdefault("command", ["sh"])
                container["args"] = [*container.get("args", []), "-c", container.pop("source", "")]
            try:
                self.api.create("pods", workflow_pod(run, template, node["id"], node_name, container), ns)
            except ApiException as exc:
                if exc.status != 409:
                    return end_node(node, "Error", status_message(exc))
            return "Running"
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if phase in ("Succeeded", "Failed"):
            ended = (
                next(
                    (
                        c.get("state", {}).get("terminated")
                        for c in (pod.get("status") or {}).get("containerStatuses", [])
                        if c.get("name") == "main"
                    ),
                    None,
                )
                or {}
            )
            code = int(ended.get("exitCode", 0 if phase == "Succeeded" else 1))
            node["outputs"] = {"exitCode": str(code)}
            reason = (pod.get("status") or {}).get("reason")
            message = (
                ""
                if phase == "Succeeded"
                else (
                    "Pod was active on the node longer than the specified deadline"
                    if reason == "DeadlineExceeded"
                    else f"Error (exit code {code})"
                )
            )
            label_completed(self.api, pod)
            return end_node(node, phase, message)
        return "Running"


def label_completed(api: KubeApi, pod: dict) -> None:
    """Label an ended step pod ``workflows.argoproj.io/completed=true`` (operator.go, so Argo's informer drops it)."""
    meta = pod["metadata"]
    if meta.get("labels", {}).get("workflows.argoproj.io/completed") != "true":
        patch = {"metadata": {"labels": {"workflows.argoproj.io/completed": "true"}}}
        try:
            api.patch("pods", meta["name"], patch, meta["namespace"])
        except ApiException:
            pass
