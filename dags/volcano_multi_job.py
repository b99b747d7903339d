"""Several Volcano Jobs in one Argo Workflow, through ``ArgoWorkflowTemplateOperator``.

Runs Volcano's own multi-job examples unchanged (``example/integrations/argo/`` in volcano-sh/volcano):
``10-job-step.yaml`` (steps: ``hello-1``, then ``hello-2a`` and ``hello-2b`` in parallel), then
``20-job-DAG.yaml`` (B and C after A, D after B and C). Every Volcano Job the Workflow creates is followed; each
job's ``default-hello`` log lands in the task log prefixed with ``[job-name]``, and the XCom result lists every
job with its phase.

Point the ``examples_dir`` param (default: the ``VOLCANO_EXAMPLES_DIR`` environment variable) at a checkout's
``example/integrations/argo`` folder. The Workflows run as the ``argo`` service account with the example's
``rbac.yaml`` applied in the namespace.
"""

from __future__ import annotations

import datetime
import os

from airflow.sdk import DAG, Param

from airflow_provider_volcano_argo.operators.argo_workflow import ArgoWorkflowTemplateOperator

with DAG(
    dag_id="volcano_multi_job",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1),
    catchup=False,
    tags=["volcano", "argo", "example"],
    doc_md=__doc__,
    params={
        "namespace": Param("argo", type="string"),
        "examples_dir": Param(os.environ.get("VOLCANO_EXAMPLES_DIR", "/opt/volcano/example/integrations/argo")),
    },
) as dag:
    common = {
        "namespace": "{{ params.namespace }}",
        "log_task": "default-hello",  # the examples' single Volcano task and its container
        "log_container": "hello",
        "execution_timeout": datetime.timedelta(minutes=30),
    }
    steps = ArgoWorkflowTemplateOperator(
        task_id="steps", workflow_file="{{ params.examples_dir }}/10-job-step.yaml", **common
    )
    dag_of_jobs = ArgoWorkflowTemplateOperator(
        task_id="dag_of_jobs", workflow_file="{{ params.examples_dir }}/20-job-DAG.yaml", **common
    )
    steps >> dag_of_jobs
