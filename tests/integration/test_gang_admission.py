"""Gang admission as upstream reports it (issue 16 a, c): per attempt, with image pulls, and why a gang waits."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import run_dag, xcom_result
from tests.integration.reliability import leftovers

pytestmark = pytest.mark.integration

#: Longer than the DAG's schedule_timeout (2 s): every attempt is Pending, no pod running, for that long.
IMAGE_PULL_SECONDS = 4.0


@dataclasses.dataclass
class FailsFirstAttempt(ScriptedProgram):
    """Exit 1 in the Volcano Job's first attempt (``PodFailed`` -> ``RestartJob``), 0 after."""

    def run(self, ctx) -> int:
        retry = (ctx.pod["metadata"].get("annotations") or {}).get("volcano.sh/job-retry-count", "0")
        return ScriptedProgram.run(dataclasses.replace(self, exit_code=1 if retry == "0" else 0), ctx)


def test_restarted_gang_pulling_images_is_not_failed_by_schedule_timeout(sandbox, mpi_namespace, caplog, capfd):
    from tests.dags.admission_dags import mpi_slow_start_restarted

    seen: list[tuple[str, int, int]] = []  # (phase, retryCount, running + succeeded + failed) of the Job
    sandbox.cluster.informer("vcjobs").subscribe(
        lambda kind, obj, old: (
            obj["metadata"]["namespace"] == mpi_namespace
            and seen.append(
                (
                    ((obj.get("status") or {}).get("state") or {}).get("phase", ""),
                    int((obj.get("status") or {}).get("retryCount", 0)),
                    sum(int((obj.get("status") or {}).get(k, 0) or 0) for k in ("running", "succeeded", "failed")),
                )
            )
        )
    )
    sandbox.kubelet.programs.script(
        FailsFirstAttempt(lines=["attempt done"]), namespace=mpi_namespace, container="mpimaster"
    )
    sandbox.kubelet.container_creating_seconds = IMAGE_PULL_SECONDS
    try:
        states, log = run_dag(mpi_slow_start_restarted, caplog, capfd, namespace=mpi_namespace)
    finally:
        sandbox.kubelet.container_creating_seconds = 0.0
        sandbox.kubelet.programs.clear()
    assert "not admitted by the gang scheduler" not in log, log[-3000:]
    assert states == {"mpi": "success"}, log[-3000:]
    result = xcom_result("test_mpi_slow_start_restarted", "mpi")
    assert result["phase"] == "Completed" and result["retry_count"] == 1
    # the scenario happened: the restarted Job was Pending again with no pod started (its clock is the attempt's)
    assert ("Pending", 1, 0) in seen
    assert leftovers(sandbox, mpi_namespace)[0] == 0
