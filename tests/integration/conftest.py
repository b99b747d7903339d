"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo import templates


@pytest.fixture
def mpi_namespace(sandbox, sandbox_namespace, airflow_db, monkeypatch):
    """A namespace with the shipped template and Argo RBAC, and Airflow's connection as the least-privilege SA."""
    ns = sandbox_namespace
    for name in templates.TEMPLATE_FILES:
        body = templates.workflow_template(name)
        body["metadata"]["namespace"] = ns
        sandbox.apply(body)
    for doc in templates.argo_rbac(ns):
        sandbox.apply(doc)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())
    return ns
