"""A nightly pipeline: extract -> transform -> MPI run -> load, publishing an Asset for downstream DAGs.

``transform`` decides the MPI job's size from the extracted data; the MPI task takes its worker count and
command from that task's XCom (templated fields), reads its input from a PersistentVolumeClaim mounted at
``/input`` and its credentials from a Secret (resolved by the kubelet: the value never passes through Airflow or
Argo), runs as a gang on Volcano, and on success records an event on the ``volcano_mpi_nightly_result`` Asset.
``volcano_mpi_nightly_report`` is scheduled on that Asset, so it runs after every successful MPI result, not at a
guessed time.
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG, Asset, Param, task

from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator

MPI_RESULT = Asset("volcano_mpi_nightly_result", uri="volcano://argo/mpi-nightly")

with DAG(
    dag_id="volcano_mpi_nightly",
    schedule="@daily",
    start_date=datetime.datetime(2026, 1, 1),
    catchup=False,
    tags=["volcano", "mpi", "example"],
    doc_md=__doc__,
    params={
        "namespace": Param("argo", type="string"),
        "input_claim": Param("mpi-nightly-input", type="string"),  # a PVC holding the day's input
        "credentials_secret": Param("mpi-nightly-credentials", type="string"),  # a Secret with key "token"
    },
    default_args={"retries": 1, "retry_delay": datetime.timedelta(minutes=5)},
) as nightly:

    @task
    def extract() -> dict:
        """Stands for reading the day's input: here, how many partitions arrived."""
        return {"partitions": 4}

    @task
    def transform(batch: dict) -> dict:
        """Size the MPI run from the input: one worker per two partitions, at least one."""
        return {"workers": max(1, batch["partitions"] // 2), "program": "mpi_hello_world"}

    plan = transform(extract())
    simulate = VolcanoMPIJobOperator(
        task_id="simulate",
        namespace="{{ params.namespace }}",
        workers="{{ ti.xcom_pull(task_ids='transform')['workers'] }}",
        mpi_command="{{ ti.xcom_pull(task_ids='transform')['program'] }}",
        mpi_args=["--input", "/input/partitions"],
        volumes=[{"name": "input", "persistentVolumeClaim": {"claimName": "{{ params.input_claim }}"}}],
        volume_mounts=[{"name": "input", "mountPath": "/input", "readOnly": True}],
        env_vars=[
            {
                "name": "NIGHTLY_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": "{{ params.credentials_secret }}", "key": "token"}},
            }
        ],
        schedule_timeout=1800,
        execution_timeout=datetime.timedelta(hours=2),
        outlets=[MPI_RESULT],
    )

    @task
    def load(result: dict) -> dict:
        """Stands for writing the run's outcome somewhere durable; returns what it wrote."""
        return {"job": result["job_name"], "phase": result["phase"], "seconds": result["duration_seconds"]}

    plan >> simulate
    load(simulate.output)

with DAG(
    dag_id="volcano_mpi_nightly_report",
    schedule=[MPI_RESULT],
    start_date=datetime.datetime(2026, 1, 1),
    catchup=False,
    tags=["volcano", "mpi", "example"],
) as report:

    @task
    def announce(*, triggering_asset_events=None) -> list[str]:
        """Names the MPI results that triggered this run."""
        return [str(event.source_run_id) for events in (triggering_asset_events or {}).values() for event in events]

    announce()
