"""The WorkflowTemplates and RBAC this provider ships, and a way to install or update them."""

from __future__ import annotations

import copy
from importlib import resources
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.volcano_argo import VolcanoArgoHook

DEFAULT_TEMPLATE = "volcano-mpi"
MASTER_AFTER_WORKERS_TEMPLATE = "volcano-mpi-master-after-workers"
TEMPLATE_FILES = {
    DEFAULT_TEMPLATE: "volcano-mpi.yaml",
    MASTER_AFTER_WORKERS_TEMPLATE: "volcano-mpi-master-after-workers.yaml",
}


def _documents(filename: str) -> list[dict]:
    text = resources.files(__package__).joinpath(filename).read_text()
    return [doc for doc in yaml.safe_load_all(text) if doc]


def workflow_template(name: str = DEFAULT_TEMPLATE) -> dict:
    """A shipped WorkflowTemplate as a dict."""
    return _documents(TEMPLATE_FILES[name])[0]


def argo_rbac(namespace: str) -> list[dict]:
    """The Argo-side Role and RoleBinding for the Workflow service account ``argo`` in ``namespace``."""
    docs = _documents("argo-rbac.yaml")
    for doc in docs:
        doc["metadata"]["namespace"] = namespace
        for subject in doc.get("subjects", []):
            subject["namespace"] = namespace
    return docs


def airflow_roles(namespace: str) -> list[dict]:
    """The Airflow-side Roles: ``volcano-argo-airflow`` (least privilege) and ``volcano-argo-airflow-installer``."""
    docs = _documents("airflow-role.yaml")
    for doc in docs:
        doc["metadata"]["namespace"] = namespace
    return docs


def airflow_rules() -> list[dict]:
    """The rules of the least-privilege Role (for tests and for building RoleBindings elsewhere)."""
    return copy.deepcopy(_documents("airflow-role.yaml")[0]["rules"])


def install_templates(
    hook: VolcanoArgoHook, namespace: str, names: tuple[str, ...] = tuple(TEMPLATE_FILES)
) -> list[str]:
    """Create or update the shipped WorkflowTemplates in ``namespace``; returns what was done, per template."""
    from airflow_provider_volcano_argo.hooks.volcano_argo import WORKFLOW_TEMPLATES

    done = []
    for name in names:
        body = workflow_template(name)
        body["metadata"]["namespace"] = namespace
        current = hook.get_object(WORKFLOW_TEMPLATES, name, namespace)
        if current is None:
            hook.create_object(WORKFLOW_TEMPLATES, body, namespace)
            done.append(f"created WorkflowTemplate {namespace}/{name}")
        elif current.get("spec") != body["spec"]:
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            hook.replace_object(WORKFLOW_TEMPLATES, body, namespace)
            done.append(f"updated WorkflowTemplate {namespace}/{name}")
        else:
            done.append(f"WorkflowTemplate {namespace}/{name} is up to date")
    return done
