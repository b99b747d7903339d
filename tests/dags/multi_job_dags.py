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


def _job_task(name: str, depends: list[str]) -> dict:
    return {
        "name": name,
        "template": "job",
        "dependencies": depends,
        "arguments": {"parameters": [{"name": "task", "value": name.lower()}]},
    }


FAILING_IN_THE_MIDDLE = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Workflow",
    "metadata": {"generateName": "middle-fails-"},
    "spec": {
        "entrypoint": "main",
        "serviceAccountName": "argo",
        "templates": [
            {"name": "main", "dag": {"tasks": [_job_task("A", []), _job_task("B", ["A"]), _job_task("C", ["B"])]}},
            {
                "name": "job",
                "inputs": {"parameters": [{"name": "task"}]},
                "resource": {
                    "action": "create",
                    "setOwnerReference": True,
                    "successCondition": "status.state.phase == Completed",
                    "failureCondition": "status.state.phase in (Failed,Terminated,Aborted)",
                    "manifest": (
                        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n"
                        "  generateName: middle-{{inputs.parameters.task}}-\n"
                        "spec:\n  minAvailable: 1\n  schedulerName: volcano\n  maxRetry: 1\n  tasks:\n"
                        "  - name: work\n    replicas: 1\n    template:\n      spec:\n        containers:\n"
                        "        - name: work\n          image: busybox\n        restartPolicy: Never\n"
                    ),
                },
            },
        ],
    },
}

with DAG(
    "test_middle_job_fails",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1),
    params={"namespace": Param("argo", type="string")},
) as middle_job_fails:
    ArgoWorkflowTemplateOperator(
        task_id="jobs", namespace="{{ params.namespace }}", workflow=FAILING_IN_THE_MIDDLE, log_task="work"
    )
