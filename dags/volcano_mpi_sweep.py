"""A parameter sweep: the same MPI program at several worker counts, one mapped task instance each.

Dynamic task mapping (``.expand()``) makes one ``VolcanoMPIJobOperator`` instance per worker count; each gets
its own Workflow and Volcano Job name (the map index is part of the derived name), and ``compare`` collects the
results from XCom.
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG, Param, task

from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator

with DAG(
    dag_id="volcano_mpi_sweep",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1),
    catchup=False,
    tags=["volcano", "mpi", "example"],
    doc_md=__doc__,
    params={"namespace": Param("argo", type="string")},
) as dag:
    runs = VolcanoMPIJobOperator.partial(
        task_id="mpi_run",
        namespace="{{ params.namespace }}",
        mpi_command="mpi_hello_world",
        schedule_timeout=600,
        execution_timeout=datetime.timedelta(minutes=30),
    ).expand(workers=[1, 2, 3])

    @task
    def compare(results: list[dict]) -> dict[str, float | None]:
        """Wall time per job, keyed by job name; the input to picking a size for the nightly run."""
        return {r["job_name"]: r["duration_seconds"] for r in results}

    compare(runs.output)
