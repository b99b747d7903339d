"""Per-task results of a finished Volcano Job (issue 16 b): from its pods, whatever its Volcano version reports."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.sandbox.volcano.controller import VolcanoJobController
from tests.integration.helpers import run_dag, xcom_result

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("counts_retained_pods", [False, True], ids=["volcano-1.11", "volcano-1.10"])
def test_a_completed_jobs_results_are_the_same_whatever_volcano_counts(
    sandbox, mpi_namespace, caplog, capfd, counts_retained_pods
):
    from tests.dags.mpi_test_dags import mpi_failing  # max_retry=2; the master succeeds at once here

    controller = next(c for c in sandbox.components if isinstance(c, VolcanoJobController))
    finished: list[dict] = []  # the Job's status once Completed, as the controller wrote it
    sandbox.cluster.informer("vcjobs").subscribe(
        lambda kind, obj, old: (
            obj["metadata"]["namespace"] == mpi_namespace
            and ((obj.get("status") or {}).get("state") or {}).get("phase") == "Completed"
            and finished.append(obj["status"])
        )
    )
    controller.counts_retained_pods = counts_retained_pods
    try:
        states, log = run_dag(mpi_failing, caplog, capfd, namespace=mpi_namespace)
    finally:
        controller.counts_retained_pods = False
    assert states == {"mpi": "success"}, log[-3000:]
    # what each Volcano version reports: v1.11+ counts none of the retained pods (volcano#4616), v1.10 counted them
    if counts_retained_pods:
        assert finished[-1]["succeeded"] == 1 and finished[-1]["taskStatusCount"]["mpimaster"]
    else:
        assert finished[-1]["succeeded"] == 0 and "taskStatusCount" not in finished[-1]
    result = xcom_result("test_mpi_failing", "mpi")
    assert result["phase"] == "Completed"
    assert result["task_status_count"] == {"mpimaster": {"phase": {"Succeeded": 1}}}
    assert (result["jobs"][0]["succeeded"], result["jobs"][0]["failed"]) == (1, 0)
