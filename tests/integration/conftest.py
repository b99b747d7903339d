"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest

from tests.integration.helpers import install_mpi_templates


@pytest.fixture
def mpi_namespace(sandbox, sandbox_namespace, airflow_db, monkeypatch):
    """A namespace with the shipped template and Argo RBAC, and Airflow's connection as the least-privilege SA."""
    ns = install_mpi_templates(sandbox, sandbox_namespace)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())
    return ns
