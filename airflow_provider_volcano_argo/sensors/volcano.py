"""Deprecated module: the sensors are in ``sensors.volcano_job`` and ``sensors.argo_workflow``."""

from __future__ import annotations

from airflow_provider_volcano_argo._deprecated import moved_names

__getattr__ = moved_names(
    __name__,
    {
        "VolcanoJobSensor": "airflow_provider_volcano_argo.sensors.volcano_job:VolcanoJobSensor",
        "ArgoWorkflowSensor": "airflow_provider_volcano_argo.sensors.argo_workflow:ArgoWorkflowSensor",
    },
)
