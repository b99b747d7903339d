"""Provider metadata read by Airflow's ProvidersManager (entry point ``apache_airflow_provider``)."""

from __future__ import annotations

from typing import Any

from airflow_provider_volcano_argo import __version__
from airflow_provider_volcano_argo.engine.followed_log_slots import (
    DEFAULT_MAX_FOLLOWED_LOGS,
    DEFAULT_OVERFLOW_POLL_SECONDS,
    SECTION,
)
from airflow_provider_volcano_argo.engine.log_records import DEFAULT_LINES_PER_RECORD

_PKG = "airflow_provider_volcano_argo"


def get_provider_info() -> dict[str, Any]:
    """Describe the provider: package, versions, and the hooks, operators, sensors, triggers and links it adds."""
    return {
        "package-name": "airflow-provider-volcano-argo",
        "name": "Volcano MPI via Argo Workflows",
        "description": "Run Volcano MPI jobs through Argo WorkflowTemplates from Airflow, deferrable, with the "
        "MPI master's log in the task log.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Volcano (Argo Workflows)",
                "external-doc-url": "https://volcano.sh/en/docs/",
                "tags": ["software"],
            }
        ],
        "operators": [
            {
                "integration-name": "Volcano (Argo Workflows)",
                "python-modules": [f"{_PKG}.operators.volcano_mpi", f"{_PKG}.operators.argo_workflow"],
            }
        ],
        "sensors": [
            {
                "integration-name": "Volcano (Argo Workflows)",
                "python-modules": [f"{_PKG}.sensors.volcano_job", f"{_PKG}.sensors.argo_workflow"],
            }
        ],
        "hooks": [{"integration-name": "Volcano (Argo Workflows)", "python-modules": [f"{_PKG}.hooks.volcano_argo"]}],
        "triggers": [
            {
                "integration-name": "Volcano (Argo Workflows)",
                "python-modules": [f"{_PKG}.triggers.argo_workflow", f"{_PKG}.triggers.phase"],
            }
        ],
        "extra-links": [f"{_PKG}.links.argo.ArgoWorkflowLink"],
        "config": {
            SECTION: {
                "description": "Log streaming of deferred Volcano MPI runs in the triggerer.",
                "options": {
                    "max_followed_logs": {
                        "description": "How many logs one triggerer follows at once (each holds a connection "
                        "and about 300 KiB); the others are read every overflow_log_poll_interval seconds until "
                        "a followed one ends. 0: no limit.",
                        "version_added": "0.1.0",
                        "type": "integer",
                        "example": None,
                        "default": str(DEFAULT_MAX_FOLLOWED_LOGS),
                    },
                    "overflow_log_poll_interval": {
                        "description": "Seconds between two reads of a log beyond max_followed_logs.",
                        "version_added": "0.1.0",
                        "type": "float",
                        "example": None,
                        "default": str(DEFAULT_OVERFLOW_POLL_SECONDS),
                    },
                    "log_lines_per_record": {
                        "description": "At most how many lines of a master's log, read in one chunk, go into one "
                        "task-log record (joined by newlines; they share its timestamp). Airflow's triggerer passes "
                        "about as many records per second whatever their size, so more lines per record forward a "
                        "fast log many times faster. 1: a record per line.",
                        "version_added": "0.1.0",
                        "type": "integer",
                        "example": "1000",
                        "default": str(DEFAULT_LINES_PER_RECORD),
                    },
                },
            }
        },
    }
