"""Sensors on Volcano Jobs and Argo Workflows created outside Airflow; ``params`` name the object."""

from __future__ import annotations

import datetime

from airflow.sdk import DAG, Param

from airflow_provider_volcano_argo.sensors.argo_workflow import ArgoWorkflowSensor
from airflow_provider_volcano_argo.sensors.volcano_job import VolcanoJobSensor

PARAMS = {"namespace": Param("argo", type="string"), "name": Param("x", type="string")}
START = datetime.datetime(2026, 1, 1)

for mode, kwargs in (("deferred", {"log_task": "mpimaster"}), ("poke", {"deferrable": False, "poke_interval": 1})):
    with DAG(f"test_job_sensor_{mode}", schedule=None, start_date=START, params=PARAMS) as dag:
        VolcanoJobSensor(
            task_id="wait", name="{{ params.name }}", namespace="{{ params.namespace }}", timeout=60, **kwargs
        )
    globals()[dag.dag_id] = dag

with DAG("test_job_sensor_short", schedule=None, start_date=START, params=PARAMS) as job_sensor_short:
    VolcanoJobSensor(task_id="wait", name="{{ params.name }}", namespace="{{ params.namespace }}", timeout=3)

with DAG("test_job_sensor_soft", schedule=None, start_date=START, params=PARAMS) as job_sensor_soft:
    VolcanoJobSensor(
        task_id="wait", name="{{ params.name }}", namespace="{{ params.namespace }}", timeout=60, soft_fail=True
    )

with DAG("test_workflow_sensor", schedule=None, start_date=START, params=PARAMS) as workflow_sensor:
    ArgoWorkflowSensor(task_id="wait", name="{{ params.name }}", namespace="{{ params.namespace }}", timeout=60)
