"""The Job a run follows is the one its own Workflow created (its owner reference), never one that only has the name."""

from __future__ import annotations

import pytest

from tests.integration.helpers import run_dag

pytestmark = pytest.mark.integration


def test_a_fixed_job_name_whose_earlier_job_still_exists_is_not_taken_for_this_runs(
    sandbox, mpi_namespace, caplog, capfd
):
    """Argo's ``action: create`` fails with AlreadyExists (``workflow/executor/resource.go`` ``ExecResource``): the
    second run fails and says so, rather than reporting the earlier run's Completed Job as its own success.
    """
    from tests.dags.mpi_test_dags import mpi_overrides

    overrides = {"job_name": "fixed-mpi", "on_finish_action": "keep_workflow"}
    states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides=overrides)
    assert states == {"mpi": "success"}, log[-3000:]
    earlier = sandbox.api.get("vcjobs", "fixed-mpi", mpi_namespace)
    assert earlier["status"]["state"]["phase"] == "Completed"
    caplog.clear()

    states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides=overrides)
    assert states == {"mpi": "failed"}, log[-3000:]
    assert "ended Failed without creating Volcano Job fixed-mpi" in log, log[-3000:]
    assert 'jobs.batch.volcano.sh "fixed-mpi" already exists' in log
    assert "Volcano Job fixed-mpi Completed" not in log  # the earlier run's outcome is not reported as this one's
    assert "----- log of " not in log  # nor its master's log streamed as this run's
    assert sandbox.api.get("vcjobs", "fixed-mpi", mpi_namespace)["metadata"]["uid"] == earlier["metadata"]["uid"]
