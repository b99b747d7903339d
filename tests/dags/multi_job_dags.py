"""A DAG of three Volcano Jobs whose middle one fails, through ArgoWorkflowTemplateOperator."""

from __future__ import annotations

import datetime

from airflow.sdk import DAG, Param

from airflow_provider_volcano_argo.operators.argo_workflow import ArgoWorkflowTemplateOperator


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
