"""The Volcano Argo MPI hello world through ``VolcanoMPIJobOperator``.

One ``mpimaster`` and two ``mpiworker`` pods, gang-scheduled by Volcano; the master runs ``mpi_hello_world`` over
the workers and its log (``Hello world from processor ..., rank N out of 2 processors``) lands in this task's log.
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG, Param

from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator

with DAG(
    dag_id="volcano_mpi_hello",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1),
    catchup=False,
    tags=["volcano", "mpi", "example"],
    doc_md=__doc__,
    params={"namespace": Param("argo", type="string")},
) as dag:
    VolcanoMPIJobOperator(
        task_id="mpi_hello",
        namespace="{{ params.namespace }}",
        workers=2,
        mpi_command="mpi_hello_world",
        schedule_timeout=300,
        execution_timeout=datetime.timedelta(minutes=30),
    )
