"""The resource step runs in an ``argoexec`` pod (argo-workflows v3.7 ``operator.go`` ``executeResource``): a pod
that can be evicted or refused by a quota, and whose death fails the Workflow while the Volcano Job runs on.
"""

from __future__ import annotations

import threading
import time

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import run_dag, submit_from_template, wait_for, xcom_result

pytestmark = pytest.mark.integration


def _executor_pods(sandbox, namespace: str) -> list[dict]:
    pods = sandbox.api.list("pods", namespace)["items"]
    return [p for p in pods if any("argoexec" in c.get("image", "") for c in p["spec"]["containers"])]


@pytest.mark.parametrize(("fault", "node_message"), [("evicted", "pod deleted"), ("oom-killed", "OOMKilled")])
def test_the_resource_steps_pod_evicted_while_the_job_runs_fails_the_workflow_but_not_the_job(
    sandbox, mpi_namespace, caplog, capfd, fault, node_message
):
    """Argo fails the step's node and the Workflow: ``pod deleted`` for an evicted pod (``podReconciliation``),
    ``OOMKilled (exit code 137)`` for one whose ``main`` the OOM killer ended (``inferFailedReason``); the Job is
    healthy. The task follows the Job to its end instead of deleting it with the Workflow, and says what happened.
    """
    from tests.dags.mpi_test_dags import mpi_hostile as plain  # a plain MPI run (mpi_command from params)

    ns = mpi_namespace
    # the master computes until the helper ends it (exit 0), a few seconds after the Workflow failed: a fixed
    # duration short enough for the suite left too small a window to catch the step's pod running on a loaded machine
    sandbox.kubelet.programs.script(
        ScriptedProgram(lines=["still computing"], duration=60), namespace=ns, container="mpimaster"
    )
    evicted: list = []

    def evict_the_executor() -> None:
        def running():
            jobs = sandbox.api.list("vcjobs", ns)["items"]
            pods = [p for p in _executor_pods(sandbox, ns) if (p.get("status") or {}).get("phase") == "Running"]
            phase = ((jobs[0].get("status") or {}).get("state") or {}).get("phase") if jobs else None  # no status yet
            if not (pods and phase == "Running"):
                return None
            # once Argo has recorded the node Running: a pod gone before that is created again (podReconciliation)
            workflow = sandbox.api.get("workflows", pods[0]["metadata"]["labels"]["workflows.argoproj.io/workflow"], ns)
            nodes = (workflow.get("status") or {}).get("nodes") or {}
            node = nodes.get(pods[0]["metadata"]["annotations"]["workflows.argoproj.io/node-id"]) or {}
            return pods[0] if node.get("phase") == "Running" else None

        try:
            pod = wait_for(running, 90, what="the Job running under its running argoexec pod")
            if fault == "evicted":
                sandbox.kubelet.evict_pod(ns, pod["metadata"]["name"])
            else:
                sandbox.kubelet.oom_kill_container(ns, pod["metadata"]["name"], "main")
            evicted.append(pod)
            name = pod["metadata"]["labels"]["workflows.argoproj.io/workflow"]
            wait_for(lambda: sandbox.api.get("workflows", name, ns)["status"]["phase"] == "Failed", 60, what="failed")
            time.sleep(3)  # the trigger sees the Workflow fail while the Job runs, and says it follows the Job on
            [master] = sandbox.api.list("pods", ns, "volcano.sh/task-spec=mpimaster")["items"]
            sandbox.kubelet.fail_container(ns, master["metadata"]["name"], "mpimaster", exit_code=0)
        except Exception as exc:  # reported by the assertion below
            evicted.append(exc)

    helper = threading.Thread(target=evict_the_executor)
    helper.start()
    try:
        states, log = run_dag(plain, caplog, capfd, namespace=ns, mpi_command="mpi_hello_world")
    finally:
        helper.join(120)
        sandbox.kubelet.programs.clear()
    if not (len(evicted) == 1 and isinstance(evicted[0], dict)):
        print(log[-6000:])  # pytest shortens a long assertion message: the task log goes to the captured stdout
    assert len(evicted) == 1 and isinstance(evicted[0], dict), (evicted, states)
    assert states == {"mpi": "success"}, log[-3000:]
    assert node_message in log and "following it to its end" in log, log[-3000:]
    assert "Completed. (Argo Workflow" in log and node_message in log, [
        line for line in log.splitlines() if "Workflow" in line
    ]
    assert xcom_result("test_mpi_hostile", "mpi")["phase"] == "Completed"


def test_a_quota_refusing_the_argoexec_pod_keeps_the_step_pending_until_it_admits_it(sandbox, mpi_namespace):
    """``exceeded quota`` is transient for Argo (``util/errors`` ``isExceededQuotaErr``): the node stays Pending with
    the refusal as its message (``requeueIfTransientErr``), and the pod is created once the quota allows it.
    """
    ns = mpi_namespace
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "no-pods"},
        "spec": {"hard": {"pods": "0"}},
    }
    quotas = f"/api/v1/namespaces/{ns}/resourcequotas"
    sandbox.api.request("POST", quotas, body=quota)
    wait_for(
        lambda: (sandbox.api.request("GET", f"{quotas}/no-pods").get("status") or {}).get("hard"),
        30,
        what="the quota counted by kube-controller-manager",
    )
    workflow = submit_from_template(sandbox.api, ns, "volcano-mpi", {"job-name": "quota-mpi"})
    name = workflow["metadata"]["name"]

    def refused_node():
        nodes = (sandbox.api.get("workflows", name, ns).get("status") or {}).get("nodes") or {}
        return next((n for n in nodes.values() if "exceeded quota" in n.get("message", "")), None)

    node = wait_for(refused_node, 60, what="the submit node refused by the quota")
    assert node["phase"] == "Pending" and node["displayName"] == "submit-job"
    assert sandbox.api.get("workflows", name, ns)["status"]["phase"] == "Running"
    assert _executor_pods(sandbox, ns) == [] and sandbox.api.list("vcjobs", ns)["items"] == []

    sandbox.api.request("DELETE", f"{quotas}/no-pods")
    wait_for(lambda: sandbox.api.list("vcjobs", ns)["items"], 60, what="the Job created once the pod is admitted")
    wait_for(lambda: sandbox.api.get("workflows", name, ns)["status"]["phase"] == "Succeeded", 90, what="the Workflow")
    sandbox.api.delete("workflows", name, ns)
