"""Which of a run's objects carry the provider's label, so that its followers' watches can select by it.

The operator labels every Workflow it submits (``names.task_instance_labels``); the shipped templates label the
Volcano Job and each task's pod template as well. Volcano's job controller copies a task's pod-template labels onto
the pods it creates, not the Job's own labels (volcano-sh/volcano ``pkg/controllers/job/job_controller_util.go``
``createJobPod``: ``Labels: templateCopy.Labels``), and Argo's resource step creates the manifest as written,
adding only the owner reference (argo-workflows ``workflow/controller/operator.go`` ``executeResource``). A template
of one's own may leave the label out: its Jobs and pods are then watched as before, namespace-wide.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from airflow_provider_volcano_argo.models.names import MANAGED_BY, MANAGED_BY_LABEL

#: What ``FollowSpec.labelled`` may hold: the Workflow, its Volcano Jobs, their pods.
LABELLED_WORKFLOW, LABELLED_JOBS, LABELLED_PODS = "workflow", "jobs", "pods"
_MERGED_EXPRESSION = re.compile(r"<<:[ \t]*\{\{.*?\}\}")
_EXPRESSION = re.compile(r"\{\{.*?\}\}")
_PLACEHOLDER = "argo-expression"


def carries_owned_label(obj: dict | None) -> bool:
    """Tell whether an object (or a pod template) carries ``app.kubernetes.io/managed-by`` with the provider's name."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return isinstance(labels, dict) and labels.get(MANAGED_BY_LABEL) == MANAGED_BY


#: Reads a manifest's YAML documents; None when it is no YAML (the operator passes PyYAML's ``safe_load_all``).
LoadDocuments = Callable[[str], "list[Any] | None"]


def without_expressions(manifest: str) -> str:
    """Return a resource template's manifest with Argo's ``{{...}}`` expressions stood in for, so it parses as YAML.

    A merge key's expression (``<<: {{...}}``, a JSON object given as a parameter) becomes an empty mapping, so
    that only the keys the template writes itself count; any other expression becomes a plain word.
    """
    return _EXPRESSION.sub(_PLACEHOLDER, _MERGED_EXPRESSION.sub("<<: {}", manifest))


def _volcano_jobs(spec: dict, load: LoadDocuments) -> Iterator[dict | None]:
    """Yield the Volcano Job manifests of a Workflow spec's resource templates (None for one that cannot be read)."""
    for template in spec.get("templates") or []:
        manifest = ((template or {}).get("resource") or {}).get("manifest")
        if not isinstance(manifest, str):
            continue
        docs = load(without_expressions(manifest))
        if docs is None:
            yield None
            continue
        for doc in docs:
            if (
                isinstance(doc, dict)
                and doc.get("kind") == "Job"
                and str(doc.get("apiVersion", "")).startswith("batch.volcano.sh/")
            ):
                yield doc
            elif isinstance(doc, dict) and _PLACEHOLDER in str(doc.get("kind", "")):
                yield None  # a kind chosen at run time: it may be a Volcano Job


def _refers_elsewhere(value: Any) -> bool:
    """Tell whether a spec runs templates it does not hold (``templateRef``, ``workflowTemplateRef``)."""
    if isinstance(value, dict):
        return any(k in ("templateRef", "workflowTemplateRef") or _refers_elsewhere(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_refers_elsewhere(v) for v in value)
    return False


def labelled_kinds(spec: dict | None, load: LoadDocuments) -> frozenset[str]:
    """Return which of ``jobs`` and ``pods`` carry the provider's label in every Volcano Job a Workflow spec creates.

    ``jobs``: every Job manifest labels the Job; ``pods``: and every task's pod template. Nothing when the spec
    creates no Job it holds the manifest of, refers to templates elsewhere, or has a manifest that cannot be read:
    whose Jobs those are is not known before they exist.
    """
    if not isinstance(spec, dict) or _refers_elsewhere(spec.get("templates")) or "workflowTemplateRef" in spec:
        return frozenset()
    jobs = list(_volcano_jobs(spec, load))
    if not jobs or any(job is None for job in jobs):
        return frozenset()
    if not all(carries_owned_label(job) for job in jobs):
        return frozenset()
    tasks = [task.get("template") for job in jobs for task in ((job.get("spec") or {}).get("tasks") or [])]
    if tasks and all(isinstance(t, dict) and carries_owned_label(t) for t in tasks):
        return frozenset({LABELLED_JOBS, LABELLED_PODS})
    return frozenset({LABELLED_JOBS})


def template_ref(workflow: dict) -> str | None:
    """Return the name of the (namespaced) WorkflowTemplate a Workflow runs, if it runs one."""
    ref = (workflow.get("spec") or {}).get("workflowTemplateRef") or {}
    return None if ref.get("clusterScope") else ref.get("name")


def run_spec(workflow: dict, template: dict | None) -> dict | None:
    """Return the spec whose templates a Workflow runs.

    That is Argo's stored copy of its WorkflowTemplate, else ``template`` (the WorkflowTemplate read), or its own.
    """
    spec = workflow.get("spec") or {}
    if not spec.get("workflowTemplateRef"):
        return spec
    stored = (workflow.get("status") or {}).get("storedWorkflowTemplateSpec")
    return stored or (template or {}).get("spec")


def unlabelled_note(source: str, namespace: str, labelled: frozenset[str], shipped: bool) -> str | None:
    """Return the task-log line saying which watches stay namespace-wide and why; None when all are narrowed."""
    kinds = ((LABELLED_JOBS, "Volcano Jobs"), (LABELLED_PODS, "log-task pods"))
    missing = [what for kind, what in kinds if kind not in labelled]
    if not missing:
        return None
    fix = (
        f"it was installed by an older version: `volcano-argo install-templates --namespace {namespace}` updates it"
        if shipped
        else "the README's custom-template contract says where the label goes"
    )
    return (
        f"The {' and '.join(missing)} of {source} are not known to carry the label {MANAGED_BY_LABEL}={MANAGED_BY}:"
        f" the triggerer watches all of namespace {namespace} and keeps this run's ({fix})."
    )
