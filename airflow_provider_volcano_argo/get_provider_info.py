"""Provider metadata read by Airflow's ProvidersManager (entry point ``apache_airflow_provider``)."""

from __future__ import annotations

from typing import Any

from airflow_provider_volcano_argo import __version__


def get_provider_info() -> dict[str, Any]:
    """Describe the provider: its package, versions and the classes it contributes."""
    return {
        "package-name": "airflow-provider-volcano-argo",
        "name": "Volcano MPI via Argo Workflows",
        "description": "Run Volcano MPI jobs through Argo WorkflowTemplates from Airflow, deferrable, with the "
        "MPI master's log in the task log.",
        "versions": [__version__],
    }
