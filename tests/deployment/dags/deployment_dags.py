"""DAGs the deployment tests start through Airflow's REST API; ``params.namespace`` picks the test's namespace.

The MPI master's output is scripted per namespace by the test (the sandbox's emulated kubelet), so each DAG here
only says how the task is configured, as a user would write it.
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG, Param, task

from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator
from airflow_provider_volcano_argo.sensors.volcano_job import VolcanoJobSensor

START = datetime.datetime(2026, 1, 1)
PARAMS = {"namespace": Param("argo", type="string"), "config_file": Param("", type="string")}

with DAG("deploy_etl_mpi_chain", schedule=None, start_date=START, params=PARAMS, catchup=False):

    @task
    def extract() -> int:
        """Decide the gang's size upstream, as an ETL step would."""
        return 3

    @task
    def load(result: dict) -> str:
        """Use the MPI run's result downstream."""
        return f"{result['job_name']} {result['phase']}"

    mpi = VolcanoMPIJobOperator(
        task_id="mpi",
        namespace="{{ params.namespace }}",
        workers="{{ ti.xcom_pull(task_ids='extract') }}",
        # a connection that names no cluster: only the operator's config_file does (the trigger must use it too)
        kubernetes_conn_id="kubernetes_no_cluster",
        config_file="{{ params.config_file }}",
    )
    extract() >> mpi
    load(mpi.output)

with DAG("deploy_mpi", schedule=None, start_date=START, params=PARAMS, catchup=False):
    VolcanoMPIJobOperator(task_id="mpi", namespace="{{ params.namespace }}")

with DAG("deploy_mpi_timeout", schedule=None, start_date=START, params=PARAMS, catchup=False):
    VolcanoMPIJobOperator(
        task_id="mpi", namespace="{{ params.namespace }}", execution_timeout=datetime.timedelta(seconds=20)
    )

with DAG("deploy_job_sensor", schedule=None, start_date=START, params=PARAMS, catchup=False):
    # a Volcano Job made elsewhere (the test creates "restarts"), its master's log followed from the triggerer
    VolcanoJobSensor(task_id="watch", name="restarts", namespace="{{ params.namespace }}", log_task="mpimaster")
