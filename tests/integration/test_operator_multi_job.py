"""ArgoWorkflowTemplateOperator with the upstream Steps and DAG examples: every Volcano Job followed."""

from __future__ import annotations

import re

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import example_dag, grant_upstream_rbac, run_dag, wait_for, xcom_result

pytestmark = pytest.mark.integration


ORDER = {  # the upstream examples' dependencies, by their Volcano task parameter
    "steps": [["hello1"], ["hello2a", "hello2b"]],
    "dag_of_jobs": [["aaa"], ["bbb", "ccc"], ["ddd"]],
}


def test_upstream_examples_follow_every_job(
    sandbox, sandbox_namespace, upstream_dir, airflow_db, monkeypatch, caplog, capfd
):
    """The example DAG ``volcano_multi_job`` runs upstream's 10-job-step.yaml and 20-job-DAG.yaml unchanged."""
    dag = example_dag("volcano_multi_job")
    ns = sandbox_namespace
    grant_upstream_rbac(sandbox, upstream_dir, ns)
    # each job runs a little over a second, so "after" shows in second-precision creation timestamps
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["< working >"], duration=1.2), namespace=ns)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())
    stopped, deleted = set(), set()  # a Workflow that ended is deleted without a stop (spec.shutdown) first

    def record(kind: str, obj: dict, old: dict | None) -> None:
        if obj["metadata"]["namespace"] == ns and kind == "DELETED":
            deleted.add(obj["metadata"]["name"])
        elif obj["metadata"]["namespace"] == ns and (obj.get("spec") or {}).get("shutdown"):
            stopped.add(obj["metadata"]["name"])

    sandbox.cluster.informer("workflows").subscribe(record)
    examples = (upstream_dir / "volcano/example/integrations/argo").resolve()  # relative paths are the DAG folder's
    try:
        states, log = run_dag(dag, caplog, capfd, namespace=ns, examples_dir=str(examples))
    finally:
        sandbox.kubelet.programs.clear()
    assert states == {"steps": "success", "dag_of_jobs": "success"}, log[-3000:]
    wait_for(lambda: len(deleted) == 2, 30, what="both Workflows deleted")
    assert stopped == set()
    for task_id, order in ORDER.items():
        result = xcom_result(dag.dag_id, task_id)
        jobs = {j["name"].rsplit("-", 1)[0].rsplit("-", 1)[-1]: j for j in result["jobs"]}
        assert sorted(jobs) == sorted(t for group in order for t in group)
        assert all(j["phase"] == "Completed" for j in jobs.values())
        for job in jobs.values():
            assert f"[{job['name']}] < " in log  # each job's cowsay output, prefixed with its job
        for earlier, later in zip(order, order[1:], strict=False):  # start order follows the dependencies
            assert max(jobs[t]["created_at"] for t in earlier) < min(jobs[t]["created_at"] for t in later)


def test_a_failing_job_in_the_middle_fails_the_task_naming_it(
    sandbox, sandbox_namespace, upstream_dir, airflow_db, monkeypatch, caplog, capfd
):
    import tests.dags.multi_job_dags as dags

    ns = sandbox_namespace
    grant_upstream_rbac(sandbox, upstream_dir, ns)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["B breaks"], exit_code=4), namespace=ns, pod="middle-b-*")
    try:
        states, log = run_dag(dags.middle_job_fails, caplog, capfd, namespace=ns)
    finally:
        sandbox.kubelet.programs.clear()
    assert states == {"jobs": "failed"}
    match = re.search(r"Volcano Job (middle-b-\w+) ended Failed", log)
    assert match, log[-3000:]
    assert f"[{match.group(1)}] B breaks" in log
    assert "middle-a-" in log and "middle-c-" not in log  # A ran, C never started
