"""DAGs the integration tests run with ``dag.test(run_conf=...)``; ``params.namespace`` picks the test namespace."""

from __future__ import annotations

import datetime

from airflow.sdk import DAG, Param, task

from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator

START = datetime.datetime(2026, 1, 1)
PARAMS = {
    "namespace": Param("argo", type="string"),
    "mpi_command": Param("mpi_hello_world", type="string"),
}

with DAG("test_etl_mpi_etl", schedule=None, start_date=START, params=PARAMS) as etl_mpi_etl:

    @task
    def extract() -> int:
        return 3

    @task
    def load(result: dict) -> dict:
        return result

    mpi = VolcanoMPIJobOperator(
        task_id="mpi", namespace="{{ params.namespace }}", workers="{{ ti.xcom_pull(task_ids='extract') }}"
    )
    extract() >> mpi
    load(mpi.output)

with DAG("test_mpi_hostile", schedule=None, start_date=START, params=PARAMS) as mpi_hostile:
    VolcanoMPIJobOperator(task_id="mpi", namespace="{{ params.namespace }}", mpi_command="{{ params.mpi_command }}")

with DAG("test_mpi_failing", schedule=None, start_date=START, params=PARAMS) as mpi_failing:
    VolcanoMPIJobOperator(task_id="mpi", namespace="{{ params.namespace }}", max_retry=2)

with DAG("test_mpi_unschedulable", schedule=None, start_date=START, params=PARAMS) as mpi_unschedulable:
    VolcanoMPIJobOperator(
        task_id="mpi", namespace="{{ params.namespace }}", workers=3, cpu_per_worker="4", schedule_timeout=5
    )


class WorkerDiesAfterSubmit(VolcanoMPIJobOperator):
    """On its first try, the worker is lost right after the Workflow was submitted (before deferral)."""

    def execute(self, context):
        from airflow.providers.common.compat.sdk import TaskDeferred

        try:
            return super().execute(context)
        except TaskDeferred:
            if context["ti"].try_number == 1:
                raise RuntimeError("worker lost after submission (simulated)") from None
            raise


with DAG("test_mpi_reattach", schedule=None, start_date=START, params=PARAMS) as mpi_reattach:
    WorkerDiesAfterSubmit(
        task_id="mpi", namespace="{{ params.namespace }}", retries=1, retry_delay=datetime.timedelta(0)
    )


class WorkerDiesAfterSuccess(VolcanoMPIJobOperator):
    """On its first try, the worker is lost once the run succeeded, before Airflow recorded the success."""

    def execute_complete(self, context, event):
        result = super().execute_complete(context, event)
        if context["ti"].try_number == 1:
            raise RuntimeError("worker lost after the run succeeded (simulated)")
        return result


with DAG("test_mpi_success_unrecorded", schedule=None, start_date=START, params=PARAMS) as mpi_success_unrecorded:
    WorkerDiesAfterSuccess(
        task_id="mpi", namespace="{{ params.namespace }}", retries=1, retry_delay=datetime.timedelta(0)
    )

with DAG("test_mpi_timeout", schedule=None, start_date=START, params=PARAMS) as mpi_timeout:
    VolcanoMPIJobOperator(
        task_id="mpi", namespace="{{ params.namespace }}", execution_timeout=datetime.timedelta(seconds=8)
    )

with DAG("test_mpi_timeout_kept", schedule=None, start_date=START, params=PARAMS) as mpi_timeout_kept:
    VolcanoMPIJobOperator(
        task_id="mpi",
        namespace="{{ params.namespace }}",
        execution_timeout=datetime.timedelta(seconds=8),
        on_finish_action="keep_workflow",
    )

with DAG("test_mpi_blocking", schedule=None, start_date=START, params=PARAMS) as mpi_blocking:
    VolcanoMPIJobOperator(task_id="mpi", namespace="{{ params.namespace }}", deferrable=False, ensure_template=True)

with DAG("test_mpi_named", schedule=None, start_date=START, params=PARAMS) as mpi_named:
    VolcanoMPIJobOperator(task_id="mpi", namespace="{{ params.namespace }}", workflow_name="nightly-mpi")


class OverriddenMPI(VolcanoMPIJobOperator):
    """Takes any of its fields, with their native types, from ``params.overrides``: the hostile-input scenario."""

    def _override(self, context) -> None:
        for field, value in (context["params"].get("overrides") or {}).items():
            setattr(self, field, value)

    def execute(self, context):
        self._override(context)
        return super().execute(context)

    def execute_complete(self, context, event):
        self._override(context)  # the task resumes in a new operator after deferral
        return super().execute_complete(context, event)


with DAG(
    "test_mpi_overrides",
    schedule=None,
    start_date=START,
    params={**PARAMS, "overrides": Param({}, type="object")},
) as mpi_overrides:
    OverriddenMPI(task_id="mpi", namespace="{{ params.namespace }}")
