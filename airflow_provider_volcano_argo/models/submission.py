"""The Workflow object a task creates, from a WorkflowTemplate or an inline manifest.

As ``argo submit --from workflowtemplate/NAME -p k=v`` does, with the task instance's labels.
"""

from __future__ import annotations

import copy
from typing import Any

WORKFLOW_API_VERSION = "argoproj.io/v1alpha1"
TEMPLATE_LABEL = "workflows.argoproj.io/workflow-template"


def workflow_from_template(template: str) -> dict[str, Any]:
    """Return a Workflow that runs ``template`` (``common.NewWorkflowFromWorkflowTemplate``)."""
    return {
        "apiVersion": WORKFLOW_API_VERSION,
        "kind": "Workflow",
        "metadata": {"labels": {TEMPLATE_LABEL: template}},
        "spec": {"workflowTemplateRef": {"name": template}},
    }


def workflow_from_manifest(manifest: Any, source: str) -> dict[str, Any]:
    """Return a copy of an inline Workflow manifest, or raise ``ValueError`` naming ``source`` if it is not one."""
    if not isinstance(manifest, dict) or manifest.get("kind", "Workflow") != "Workflow":
        raise ValueError(f"{source}: must hold one Argo Workflow manifest (kind: Workflow)")
    body = copy.deepcopy(manifest)
    body.setdefault("apiVersion", WORKFLOW_API_VERSION)
    body.setdefault("kind", "Workflow")
    body.setdefault("metadata", {}).pop("generateName", None)
    return body


def with_submission(
    body: dict[str, Any],
    name: str,
    labels: dict[str, str],
    parameters: dict[str, str],
    annotations: dict[str, str] | None = None,
) -> dict:
    """Name ``body``, add ``labels`` and ``annotations``, set ``parameters`` over the arguments it has (by name)."""
    meta = body.setdefault("metadata", {})
    meta["name"] = name
    meta.setdefault("labels", {}).update(labels)
    if annotations:
        meta.setdefault("annotations", {}).update(annotations)
    if parameters:
        spec = body.setdefault("spec", {})
        given = {p["name"]: p for p in (spec.get("arguments") or {}).get("parameters", [])}
        given.update({k: {"name": k, "value": v} for k, v in parameters.items()})
        spec.setdefault("arguments", {})["parameters"] = list(given.values())
    return body


def submitted_parameters(workflow: dict) -> dict[str, str]:
    """Return the parameters a Workflow was submitted with."""
    return {
        p["name"]: str(p.get("value", ""))
        for p in ((workflow.get("spec") or {}).get("arguments") or {}).get("parameters", [])
    }


def undeclared_parameters(template: dict, parameters: dict[str, str]) -> list[str]:
    """Return the names of ``parameters`` that the WorkflowTemplate ``template`` does not declare, sorted."""
    declared = {p.get("name") for p in ((template.get("spec") or {}).get("arguments") or {}).get("parameters", [])}
    return sorted(set(parameters) - declared)
