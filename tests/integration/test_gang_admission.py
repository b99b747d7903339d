"""Gang admission as upstream reports it (issue 16 a, c): per attempt, with image pulls, and why a gang waits."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import phase_of, run_dag, volcano_job, wait_for, xcom_result
from tests.integration.reliability import leftovers

pytestmark = pytest.mark.integration

#: Longer than the DAG's schedule_timeout (5 s): every attempt is Pending, no pod running, for that long. Its
#: failures as "not admitted" (at 2 s, then at 5 s) were the emulated controller's: a Job restarted before it ran
#: kept its creation's Pending time (fixed at a5d05c6); 5 s leaves the restarted gang's pods time to be
#: created and bound after the Pending transition, whose time is stamped to the second.
IMAGE_PULL_SECONDS = 8.0


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


def test_an_admitted_gang_pulling_images_has_its_podgroup_running_and_its_pods_pending(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    sandbox.kubelet.container_creating_seconds = IMAGE_PULL_SECONDS
    try:
        job = sandbox.api.create("vcjobs", volcano_job("pulling", workers=1), ns)
        group = f"pulling-{job['metadata']['uid']}"

        def scheduled_not_started():
            pg = sandbox.api.get_or_none("podgroups", group, ns) or {}
            pods = sandbox.api.list("pods", ns, "volcano.sh/job-name=pulling")["items"]
            if (pg.get("status") or {}).get("phase") != "Running" or len(pods) != 2:
                return None
            return pods if all(p["spec"].get("nodeName") and p["status"]["phase"] == "Pending" for p in pods) else None

        pods = wait_for(scheduled_not_started, 30, what="PodGroup Running while its bound pods pull images")
        waiting = [c["state"]["waiting"]["reason"] for p in pods for c in p["status"].get("containerStatuses", [])]
        assert waiting and set(waiting) == {"ContainerCreating"}
        job = sandbox.api.get("vcjobs", "pulling", ns)["status"]
        assert job["state"]["phase"] == "Pending" and job.get("running", 0) == 0
    finally:
        sandbox.kubelet.container_creating_seconds = 0.0
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "pulling", ns) == "Completed", 60, what="job Completed")
