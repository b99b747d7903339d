"""Every DAG in ``dags/`` imports cleanly, as Airflow's DAG processor loads it."""

from __future__ import annotations

from pathlib import Path

try:
    from airflow.dag_processing.dagbag import DagBag
except ImportError:  # Airflow < 3.2
    from airflow.models.dagbag import DagBag

DAGS = Path(__file__).resolve().parents[2] / "dags"


def test_example_dags_parse_without_import_errors():
    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}
    assert set(bag.dag_ids) == {
        "volcano_mpi_hello",
        "volcano_mpi_nightly",
        "volcano_mpi_nightly_report",
        "volcano_mpi_sweep",
        "volcano_multi_job",
    }
    for dag in bag.dags.values():
        assert "example" in dag.tags, dag.dag_id
        if dag.dag_id != "volcano_mpi_nightly_report":  # every DAG that submits takes its namespace as a param
            assert dag.params["namespace"] == "argo", dag.dag_id


def test_nightly_publishes_the_asset_its_report_is_scheduled_on():
    bag = DagBag(dag_folder=str(DAGS))
    simulate = bag.dags["volcano_mpi_nightly"].get_task("simulate")
    (asset,) = simulate.outlets
    report = bag.dags["volcano_mpi_nightly_report"]
    assert report.timetable.asset_condition.objects == (asset,)
