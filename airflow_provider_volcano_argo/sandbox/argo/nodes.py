"""Argo's node bookkeeping during one reconcile of a Workflow: create, link and end nodes, and count progress.

Follows argoproj/argo-workflows v3.7 ``workflow/controller/operator.go`` (``initializeNode``, ``markNodePhase``):
node IDs, display names, boundaries, phases and ``status.progress``.
"""

from __future__ import annotations

import copy

from airflow_provider_volcano_argo.sandbox.argo.rules import node_id
from airflow_provider_volcano_argo.sandbox.emulation.cluster import now_rfc3339

NODE_DONE = ("Succeeded", "Failed", "Error", "Skipped", "Omitted")


class WorkflowRun:
    """One reconcile of one Workflow: the nodes as they are, and what changed."""

    def __init__(self, workflow: dict, spec: dict):
        self.workflow = workflow
        self.spec = spec
        self.name = workflow["metadata"]["name"]
        self.nodes: dict = copy.deepcopy((workflow.get("status") or {}).get("nodes") or {})
        self.templates = {t["name"]: t for t in spec.get("templates", [])}
        self.requeue = False

    def node(self, name: str, template: dict, boundary: str | None, kind: str) -> dict:
        """Return the node called ``name``, created ``Running`` the first time it is asked for."""
        nid = node_id(self.name, name)
        if nid not in self.nodes:
            self.nodes[nid] = {
                "id": nid,
                "name": name,
                "displayName": name.split(".")[-1].split("]")[-1] or name,
                "type": kind,
                "templateName": template["name"],
                "phase": "Running",
                "startedAt": now_rfc3339(),
                "children": [],
            }
            if boundary:
                self.nodes[nid]["boundaryID"] = boundary
        return self.nodes[nid]

    def link(self, parent: dict, child_name: str) -> None:
        """Add the node called ``child_name`` to ``parent``'s children, once."""
        child = node_id(self.name, child_name)
        if child not in parent["children"]:
            parent["children"].append(child)

    def service_account(self, template: dict) -> str:
        """Return the service account a step runs as: the template's, else the Workflow's, else ``default``."""
        return template.get("serviceAccountName") or self.spec.get("serviceAccountName") or "default"


def end_node(node: dict, phase: str, message: str = "") -> str:
    """End ``node`` in ``phase`` (with ``message``) unless it has ended already; return its phase."""
    if node["phase"] not in NODE_DONE:
        node["phase"] = phase
        node["finishedAt"] = now_rfc3339()
        if message:
            node["message"] = message
    return node["phase"]


def progress(nodes: dict) -> str:
    """Return ``status.progress``: succeeded pod nodes over all pod nodes."""
    pods = [n for n in nodes.values() if n.get("type") == "Pod"]
    return f"{sum(1 for n in pods if n['phase'] == 'Succeeded')}/{len(pods)}"
