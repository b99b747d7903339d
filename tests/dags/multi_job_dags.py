"""The upstream Steps and DAG examples (10-job-step.yaml, 20-job-DAG.yaml), unchanged, through
ArgoWorkflowTemplateOperator; read from the upstream reference folder at parse time."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import yaml
from airflow.sdk import DAG, Param

from airflow_provider_volcano_argo.operators.argo_workflow import ArgoWorkflowTemplateOperator

UPSTREAM = Path(os.environ.get("VOLCANO_ARGO_UPSTREAM_DIR", "/nonexistent")) / "volcano/example/integrations/argo"

for file, dag_id in (("10-job-step.yaml", "test_volcano_steps"), ("20-job-DAG.yaml", "test_volcano_dag")):
    if not (UPSTREAM / file).is_file():
        continue
    with DAG(
        dag_id,
        schedule=None,
        start_date=datetime.datetime(2026, 1, 1),
        params={"namespace": Param("argo", type="string")},
    ) as dag:
        ArgoWorkflowTemplateOperator(
            task_id="jobs",
            namespace="{{ params.namespace }}",
            workflow=yaml.safe_load((UPSTREAM / file).read_text()),
            log_task="default-hello",
            log_container="hello",
        )
    globals()[dag_id] = dag
