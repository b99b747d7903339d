"""The WorkflowTemplates and RBAC this provider ships, loaded from their YAML.

Installing one is a hook call: ``VolcanoArgoHook.apply_workflow_template``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from importlib import resources

import yaml

DEFAULT_TEMPLATE = "volcano-mpi"
MASTER_AFTER_WORKERS_TEMPLATE = "volcano-mpi-master-after-workers"
TEMPLATE_FILES = {
    DEFAULT_TEMPLATE: "volcano-mpi.yaml",
    MASTER_AFTER_WORKERS_TEMPLATE: "volcano-mpi-master-after-workers.yaml",
}


def yaml_documents(text: str) -> list | None:
    """Return the YAML documents of ``text``; None when it is no YAML (e.g. a template's resource manifest)."""
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return None


def _documents(filename: str) -> list[dict]:
    text = resources.files(__package__).joinpath(filename).read_text()
    return [doc for doc in yaml.safe_load_all(text) if doc]


def workflow_template(name: str = DEFAULT_TEMPLATE) -> dict:
    """Return a shipped WorkflowTemplate as a dict."""
    return _documents(TEMPLATE_FILES[name])[0]


def argo_rbac(namespace: str) -> list[dict]:
    """Return the Workflow service account ``argo`` and its Argo-side Role and RoleBinding in ``namespace``."""
    docs = _documents("argo-rbac.yaml")
    for doc in docs:
        doc["metadata"]["namespace"] = namespace
        for subject in doc.get("subjects", []):
            subject["namespace"] = namespace
    return docs


def airflow_roles(namespace: str) -> list[dict]:
    """Return the Airflow-side Roles: ``volcano-argo-airflow`` (least privilege), ``volcano-argo-airflow-installer``."""
    docs = _documents("airflow-role.yaml")
    for doc in docs:
        doc["metadata"]["namespace"] = namespace
    return docs


def airflow_rules() -> list[dict]:
    """Return the rules of the least-privilege Role (for tests and for building RoleBindings elsewhere)."""
    return copy.deepcopy(_documents("airflow-role.yaml")[0]["rules"])


def workflow_templates(names: Iterable[str], namespace: str) -> list[dict]:
    """Return the shipped WorkflowTemplates ``names``, placed in ``namespace``."""
    bodies = []
    for name in names:
        body = workflow_template(name)
        body["metadata"]["namespace"] = namespace
        bodies.append(body)
    return bodies
