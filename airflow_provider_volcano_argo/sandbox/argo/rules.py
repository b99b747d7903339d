"""Argo Workflows' rules as pure functions.

Resource-template conditions, node IDs and pod names, the globals, and merging a Workflow with its
WorkflowTemplate. Follows argoproj/argo-workflows: ``workflow/controller/operator.go`` ``setGlobalParameters``
(the globals; the substitution itself is ``argo/substitution.py``),
``workflow/executor/resource.go`` (conditions parsed as ``labels.Parse`` requirements over gjson paths),
``pkg/apis/workflow/v1alpha1`` (``Workflow.NodeID``), ``workflow/util/pod_name.go`` (pod names v2),
``workflow/util/merge.go: JoinWorkflowSpec``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any


class TemplateError(ValueError):
    """The Workflow cannot run as written (the Workflow ends in ``Error``)."""


def fnv32a(text: str) -> int:
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def node_id(workflow: str, node_name: str) -> str:
    """Return a node's ID: the Workflow's name for the root node, ``<wf>-<fnv32a(nodeName)>`` for others."""
    return workflow if node_name == workflow else f"{workflow}-{fnv32a(node_name)}"


def pod_name(workflow: str, template: str, node_name: str) -> str:
    """Pod name v2: ``<wf>-<template>-<fnv32a(nodeName)>`` (prefix cut at 242 characters)."""
    prefix = f"{workflow}-{template}"[:242].rstrip("-")
    return f"{prefix}-{fnv32a(node_name)}"


@dataclass(frozen=True)
class Requirement:
    """One condition term, as ``labels.Requirement``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.operator == "exists":
            return self.key
        if self.operator == "!":
            return f"!{self.key}"
        if self.operator in ("in", "notin"):
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        return f"{self.key}{self.operator}{self.values[0]}"


def _split_terms(text: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    return [t.strip() for t in terms + [current] if t.strip()]


def parse_condition(text: str) -> list[Requirement]:
    """Parse a condition into its requirements; a comma means AND.

    Terms: ``key=v``, ``key==v``, ``key!=v``, ``key in (a,b)``, ``key notin (a,b)``, ``key``, ``!key``, ``key>n``,
    ``key<n``.
    """
    requirements = []
    for term in _split_terms(text):
        match = re.fullmatch(r"(\S+)\s+(in|notin)\s*\((.*)\)", term)
        if match:
            values = tuple(sorted(v.strip() for v in match.group(3).split(",") if v.strip()))
            requirements.append(Requirement(match.group(1), match.group(2), values))
            continue
        match = re.fullmatch(r"(\S+?)\s*(==|!=|=|>|<)\s*(\S*)", term)
        if match:
            operator = "==" if match.group(2) == "=" else match.group(2)
            requirements.append(Requirement(match.group(1), operator, (match.group(3),)))
        elif term.startswith("!"):
            requirements.append(Requirement(term[1:].strip(), "!"))
        elif re.fullmatch(r"\S+", term):
            requirements.append(Requirement(term, "exists"))
        else:
            raise TemplateError(f"unable to parse condition {term!r}")
    return requirements


def json_path(obj: Any, path: str) -> Any:
    """Follow gjson's dotted ``path`` (``status.state.phase``; numeric parts index lists); None when absent."""
    for part in path.split("."):
        if isinstance(obj, dict):
            obj = obj.get(part)
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return None
        if obj is None:
            return None
    return obj


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def matches(requirement: Requirement, obj: dict) -> bool:
    value = json_path(obj, requirement.key)
    op = requirement.operator
    if op == "exists":
        return value is not None
    if op == "!":
        return value is None
    if value is None:
        return op in ("!=", "notin")
    text = _text(value)
    if op == "==":
        return text == requirement.values[0]
    if op == "!=":
        return text != requirement.values[0]
    if op == "in":
        return text in requirement.values
    if op == "notin":
        return text not in requirement.values
    try:
        number, bound = float(text), float(requirement.values[0])
    except ValueError:
        return False
    return number > bound if op == ">" else number < bound


def evaluate(success: str | None, failure: str | None, obj: dict) -> tuple[str | None, str]:
    """Check the conditions against ``obj``; the failure condition first.

    Return ("Failed", message) if it holds, ("Succeeded", "") if every success requirement holds, else
    (None, "") to keep checking.
    """
    if failure:
        for requirement in parse_condition(failure):
            if matches(requirement, obj):
                return "Failed", f"failure condition '{requirement}' evaluated true"
    if success:
        if all(matches(r, obj) for r in parse_condition(success)):
            return "Succeeded", ""
        return None, ""
    return "Succeeded", ""


def join_spec(workflow_spec: dict, template_spec: dict | None) -> dict:
    """``JoinWorkflowSpec``: the Workflow's fields over the template's; parameters merged by name."""
    if template_spec is None:
        return copy.deepcopy(workflow_spec)
    joined = copy.deepcopy(template_spec)
    for key, value in workflow_spec.items():
        if key in ("workflowTemplateRef", "arguments"):
            continue
        joined[key] = copy.deepcopy(value)
    params = {p["name"]: p for p in (template_spec.get("arguments") or {}).get("parameters", [])}
    for p in (workflow_spec.get("arguments") or {}).get("parameters", []):
        params[p["name"]] = {**params.get(p["name"], {}), **p}
    joined.setdefault("arguments", {})["parameters"] = list(params.values())
    workflow_templates = {t["name"]: t for t in template_spec.get("templates", [])}
    workflow_templates.update({t["name"]: t for t in workflow_spec.get("templates", [])})
    joined["templates"] = list(workflow_templates.values())
    return joined


def workflow_scope(workflow: dict, spec: dict) -> dict[str, str]:
    """``workflow.*`` variables (``setGlobalParameters``); a parameter without a value is a template error."""
    meta = workflow["metadata"]
    scope = {
        "workflow.name": meta["name"],
        "workflow.namespace": meta["namespace"],
        "workflow.uid": meta["uid"],
        "workflow.mainEntrypoint": spec.get("entrypoint", ""),
        "workflow.serviceAccountName": spec.get("serviceAccountName", "default"),
        "workflow.creationTimestamp": meta.get("creationTimestamp", ""),
    }
    for kind in ("labels", "annotations"):
        for key, value in (meta.get(kind) or {}).items():
            scope[f"workflow.{kind}.{key}"] = value
    for param in (spec.get("arguments") or {}).get("parameters", []):
        if "value" not in param:
            raise TemplateError(f"spec.arguments.{param['name']}.value is required")
        scope[f"workflow.parameters.{param['name']}"] = str(param["value"])
    return scope
