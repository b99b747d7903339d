"""The one-time validation of a Workflow at its first operation, as far as substitution goes.

Follows argoproj/argo-workflows v3.7.10 ``workflow/validate/validate.go`` ``ValidateWorkflow``: from the entrypoint
each template is processed with the Workflow's real parameter values (``validateTemplate`` -> ``ProcessArgs``:
``templates.X <error>``), then ``validateLeaf`` looks for tags left under Argo's prefixes that are not in scope
(``resolveAllVariables``: ``templates.X: failed to resolve {{...}}``; ``{{=`` skipped) and parses a resource
manifest with its expressions replaced by placeholders (``templates.X.resource.manifest must be a valid yaml``);
``validateDAG`` / ``validateSteps`` check each task's or step's JSON the same way before validating the template it
calls with its arguments. ``operator.go`` ``setExecWorkflow`` fails the Workflow with ``invalid spec: <error>``.
"""

from __future__ import annotations

import re

import yaml

from airflow_provider_volcano_argo.sandbox.argo.goyaml import load_manifest
from airflow_provider_volcano_argo.sandbox.argo.rules import TemplateError
from airflow_provider_volcano_argo.sandbox.argo.substitution import (
    SubstitutionError,
    go_json_marshal,
    process_args,
    template_json,
    unresolved_tags,
)

POD_TYPES = ("container", "script", "resource")
_EXPRESSION = re.compile(r"{{\s*=\s*(.+?)\s*}}")  # SubstituteResourceManifestExpressions


def _scope(template: dict, global_scope: dict) -> dict:
    """``validateInputs`` + the globals: what a template may refer to."""
    scope = dict(global_scope)
    for param in (template.get("inputs") or {}).get("parameters") or []:
        scope[f"inputs.parameters.{param['name']}"] = True
    scope["inputs.parameters"] = True
    if any(kind in template for kind in POD_TYPES):
        scope["pod.name"] = True
    return scope


def _check(text: str, scope: dict, where: str, allowed: tuple[str, ...] = ()) -> None:
    missing = unresolved_tags(text, scope, allowed)
    if missing:
        raise TemplateError(f"{where} failed to resolve {{{{{missing[0]}}}}}")


def validate_workflow(templates: dict[str, dict], entrypoint: str, arguments: dict, global_scope: dict) -> None:
    """Raise ``TemplateError`` with upstream's message for the first template that does not validate."""
    seen: set[str] = set()

    def visit(name: str, args: dict) -> None:
        template = templates.get(name)
        if template is None:
            raise TemplateError(f"template name '{name}' undefined")
        local = {"pod.name": "placeholder-pod-name"} if any(k in template for k in POD_TYPES) else {}
        try:
            processed = process_args(template, args, global_scope, local)
        except SubstitutionError as exc:
            raise TemplateError(f"templates.{name} {exc}") from exc
        if name in seen:
            return
        seen.add(name)
        scope = _scope(template, global_scope)
        if "dag" in processed:
            for task in processed["dag"].get("tasks") or []:
                where = f"templates.{name}.tasks.{task['name']}"
                _check(go_json_marshal(task), scope, where, ("tasks.", "item"))
                visit(task["template"], task.get("arguments") or {})
        elif "steps" in processed:
            for group in processed["steps"]:
                for step in group:
                    _check(go_json_marshal(step), scope, f"templates.{name}.steps", ("steps.", "item"))
                    visit(step["template"], step.get("arguments") or {})
        else:
            _check(template_json(processed), scope, f"templates.{name}:")
            _check_manifest(processed)

    visit(entrypoint, arguments)


def _check_manifest(template: dict) -> None:
    resource = template.get("resource")
    if not resource or resource.get("action") in ("delete", "get") or not resource.get("manifest"):
        return
    manifest = _EXPRESSION.sub("placeholder", resource["manifest"])
    try:
        load_manifest(manifest)
    except yaml.YAMLError as exc:
        raise TemplateError(f"templates.{template['name']}.resource.manifest must be a valid yaml") from exc
