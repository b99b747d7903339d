"""The seed's upstream manifests, unchanged, on the sandbox (issue 2's "Done when")."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import grant_upstream_rbac, phase_of, pod_log, submit_from_template, wait_for

pytestmark = pytest.mark.integration

MPI = Path("volcano/example/integrations/argo/mpi")
ARGO = Path("volcano/example/integrations/argo")


def _apply(sandbox, path: Path) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        if doc:
            sandbox.apply(doc)


@pytest.fixture(scope="module")
def hello_template(sandbox, upstream_dir):
    _apply(sandbox, upstream_dir / MPI / "hello-world.yaml")
    return "volcano-mpi-hello"


def test_hello_world_with_rbac_completes_and_logs_every_rank(sandbox, upstream_dir, hello_template):
    _apply(sandbox, upstream_dir / MPI / "rbac.yaml")
    wf = submit_from_template(sandbox.api, "argo", hello_template, {"job-name": "mpi-hello-job"})
    name = wf["metadata"]["name"]
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "mpi-hello-job", "argo") == "Completed", 90, what="job Completed")

    def state() -> str:
        nodes = (sandbox.api.get("workflows", name, "argo").get("status") or {}).get("nodes", {})
        pods = sandbox.api.list("pods", "argo", f"workflows.argoproj.io/workflow={name}")["items"]
        logs = {p["metadata"]["name"]: pod_log(sandbox.api, "argo", p["metadata"]["name"], "main") for p in pods}
        return f"nodes: {[(n['displayName'], n['phase'], n.get('message')) for n in nodes.values()]}\nlogs: {logs}"

    wait_for(
        lambda: phase_of(sandbox.api, "workflows", name, "argo") == "Succeeded",
        90,
        what="workflow Succeeded",
        describe=state,
    )
    job = sandbox.api.get("vcjobs", "mpi-hello-job", "argo")
    assert job["metadata"]["ownerReferences"][0]["uid"] == wf["metadata"]["uid"]  # setOwnerReference
    log = pod_log(sandbox.api, "argo", "mpi-hello-job-mpimaster-0", "mpimaster")
    for rank in (0, 1):
        line = f"Hello world from processor mpi-hello-job-mpiworker-{rank}, rank {rank} out of 2 processors"
        assert line in log
    # CompleteJob deletes the still-running workers; only the finished master keeps its log
    pods = {
        p["metadata"]["name"] for p in sandbox.api.list("pods", "argo", "volcano.sh/job-name=mpi-hello-job")["items"]
    }
    assert pods == {"mpi-hello-job-mpimaster-0"}
    follow = next(p for p in sandbox.api.list("pods", "argo", f"workflows.argoproj.io/workflow={name}")["items"])
    follow_log = pod_log(sandbox.api, "argo", follow["metadata"]["name"], "main")
    assert "Found pod mpi-hello-job-mpimaster-0" in follow_log and "Hello world from processor" in follow_log
    # deleting the Workflow cascades (garbage collector) to the Job and its pods
    sandbox.api.delete("workflows", name, "argo")
    wait_for(lambda: sandbox.api.get_or_none("vcjobs", "mpi-hello-job", "argo") is None, 60, what="job collected")
    wait_for(
        lambda: not sandbox.api.list("pods", "argo", "volcano.sh/job-name=mpi-hello-job")["items"],
        60,
        what="pods collected",
    )


def test_hello_world_without_rbac_fails_with_the_clusters_403(sandbox, hello_template):
    ns = sandbox.create_namespace("no-rbac", airflow_access=False)
    sandbox.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "argo", "namespace": ns}})
    template = sandbox.api.get("workflowtemplates", hello_template, "argo")
    template["metadata"] = {"name": hello_template, "namespace": ns}
    sandbox.apply(template)
    wf = submit_from_template(sandbox.api, ns, hello_template)
    name = wf["metadata"]["name"]

    def submit_node():
        nodes = (sandbox.api.get("workflows", name, ns).get("status") or {}).get("nodes") or {}
        return next((n for n in nodes.values() if n["displayName"] == "submit-job" and n["phase"] == "Failed"), None)

    node = wait_for(submit_node, 60, what="submit-job failed")
    if sandbox.upstream:  # argoexec retries the create, then ends on kubectl's error
        assert node["message"].startswith(
            "main: Error (exit code 64): no more retries Error from server (Forbidden): error when creating "
            '"/tmp/manifest.yaml": jobs.batch.volcano.sh is forbidden: User "system:serviceaccount:no-rbac:argo" '
            'cannot create resource "jobs" in API group "batch.volcano.sh" in the namespace "no-rbac"'
        )
    else:  # the emulated argoexec (deleted with it)
        assert node["message"].startswith(
            'main: Error (exit code 64): workflowtaskresults.argoproj.io is forbidden: User "system:serviceaccount:'
            'no-rbac:argo" cannot create resource'
        )
    assert sandbox.api.list("vcjobs", ns)["items"] == []
    # as on a cluster, the DAG waits for follow-logs (itself refused, retrying until its deadline); stop it
    sandbox.api.patch("workflows", name, {"spec": {"shutdown": "Terminate"}}, ns)
    wait_for(lambda: phase_of(sandbox.api, "workflows", name, ns) == "Failed", 30, what="workflow Failed")
    assert sandbox.api.get("workflows", name, ns)["status"]["message"] == "Stopped with strategy 'Terminate'"


def _creation_order(sandbox, namespace: str, prefix: str) -> list[tuple[str, str]]:
    jobs = [j for j in sandbox.api.list("vcjobs", namespace)["items"] if j["metadata"]["name"].startswith(prefix)]
    return sorted((j["metadata"]["creationTimestamp"], j["metadata"]["name"]) for j in jobs)


def test_step_and_dag_examples_run_unchanged_in_order(sandbox, upstream_dir, sandbox_namespace):
    ns = sandbox_namespace
    grant_upstream_rbac(sandbox, upstream_dir, ns)
    # hello-2a / hello-2b / B / C take a moment, so "after" is visible in second-precision timestamps
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["working"], duration=1.2), namespace=ns)
    names = {}
    for file in ("10-job-step.yaml", "20-job-DAG.yaml"):
        wf = yaml.safe_load((upstream_dir / ARGO / file).read_text())
        created = sandbox.api.create("workflows", wf, ns)
        names[file] = created["metadata"]["name"]
    for name in names.values():
        wait_for(lambda n=name: phase_of(sandbox.api, "workflows", n, ns) == "Succeeded", 120, what=f"{name} Succeeded")
    step = _creation_order(sandbox, ns, "step-job-")
    assert [n.rsplit("-", 1)[0] for _, n in step][0] == "step-job-hello1"
    first = step[0][0]
    assert all(ts > first for ts, _ in step[1:]) and len(step) == 3
    dag = {n.rsplit("-", 1)[0]: ts for ts, n in _creation_order(sandbox, ns, "dag-job-")}
    assert dag["dag-job-aaa"] < dag["dag-job-bbb"] and dag["dag-job-aaa"] < dag["dag-job-ccc"]
    assert dag["dag-job-ddd"] > max(dag["dag-job-bbb"], dag["dag-job-ccc"])
    for job in sandbox.api.list("vcjobs", ns)["items"]:
        assert job["status"]["state"]["phase"] == "Completed"
