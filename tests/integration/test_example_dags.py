"""Every DAG in ``dags/`` runs green on the sandbox through ``dag.test()`` (``volcano_multi_job``: see
``test_operator_multi_job.py``).
"""

from __future__ import annotations

import pytest

from tests.integration.helpers import (
    NEEDS_SDK_RUNNER,
    bound_claim,
    create_secret,
    dag_test_runs_in_core,
    example_dag,
    run_dag,
    run_task_of,
    scheduler_creates_asset_triggered_run,
    unpause,
    wait_for,
    xcom_result,
)

pytestmark = pytest.mark.integration


def test_hello_world_puts_every_rank_in_the_task_log(sandbox, mpi_namespace, caplog, capfd):
    dag = example_dag("volcano_mpi_hello")
    states, log = run_dag(dag, caplog, capfd, namespace=mpi_namespace)
    assert states == {"mpi_hello": "success"}, log[-3000:]
    for rank in range(2):
        assert f"rank {rank} out of 2 processors" in log


def test_nightly_pipeline_sizes_the_run_from_xcom_and_its_asset_event_triggers_the_report(
    sandbox, mpi_namespace, caplog, capfd
):
    pytest.importorskip("airflow.dag_processing.dagbag", reason="unpause() syncs the DAG bundle as Airflow >= 3.2 does")
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    unpause("volcano_mpi_nightly_report")
    dag = example_dag("volcano_mpi_nightly")
    # the input the MPI task reads (a claim kube-controller-manager binds) and its credentials (a Secret): without
    # either, the kubelet would not start the pods
    volume = bound_claim(sandbox, mpi_namespace, "mpi-nightly-input", {"partitions": "4\n"})
    create_secret(sandbox, mpi_namespace, "mpi-nightly-credentials", {"token": "nightly"})
    try:
        states, log = run_dag(dag, caplog, capfd, namespace=mpi_namespace)
    finally:
        sandbox.api.delete("persistentvolumes", volume, None)
    assert states == {"extract": "success", "transform": "success", "simulate": "success", "load": "success"}, log[
        -3000:
    ]
    assert "rank 1 out of 2 processors" in log  # transform: 4 partitions -> 2 workers
    loaded = xcom_result(dag.dag_id, "load")
    assert loaded["phase"] == "Completed" and "-simulate-" in loaded["job"]
    with create_session() as session:
        events = (
            session.query(AssetEvent)
            .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
            .filter(AssetModel.uri == "volcano://argo/mpi-nightly", AssetEvent.source_dag_id == dag.dag_id)
            .all()
        )
        assert [e.source_task_id for e in events][-1:] == ["simulate"]
    nightly_run = events[-1].source_run_id

    # volcano_mpi_nightly_report is scheduled on that asset: one scheduler step creates its run from the queued
    # event, as a deployed scheduler would, and its task names the nightly run that triggered it
    report_run = scheduler_creates_asset_triggered_run("volcano_mpi_nightly_report")
    assert [e.source_run_id for e in report_run.consumed_asset_events] == [nightly_run]
    report = example_dag("volcano_mpi_nightly_report")
    assert run_task_of(report_run, report.get_task("announce")) == "success"
    assert xcom_result(report.dag_id, "announce") == [nightly_run]


@pytest.mark.skipif(
    dag_test_runs_in_core(), reason=f"{NEEDS_SDK_RUNNER}: compare's lazy XCom list needs its supervisor"
)
def test_sweep_runs_one_job_per_worker_count_each_with_its_own_name(sandbox, mpi_namespace, caplog, capfd):
    dag = example_dag("volcano_mpi_sweep")
    states, log = run_dag(dag, caplog, capfd, namespace=mpi_namespace)
    assert set(states.values()) == {"success"}, log[-3000:]
    for size in (1, 2, 3):
        assert f"rank {size - 1} out of {size} processors" in log
    durations = xcom_result(dag.dag_id, "compare")
    assert len(durations) == 3  # three distinct job names
    # Argo's startedAt / finishedAt have second precision: a run inside one second lasts 0.0 s
    assert all(isinstance(seconds, float) and 0 <= seconds < 120 for seconds in durations.values()), durations
    wait_for(lambda: not sandbox.api.list("vcjobs", mpi_namespace)["items"], 60, what="every sweep job collected")
