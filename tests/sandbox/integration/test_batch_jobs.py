"""batch/v1 Jobs on the sandbox: kube-controller-manager's real ``job`` controller makes the pods, the emulated
kubelet binds and runs them, and the Job gets the condition a cluster gives it.
"""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import pod_log, wait_for

pytestmark = pytest.mark.integration


def _job(name: str, backoff_limit: int = 0) -> dict:
    """Return a one-pod Job as cncf-kubernetes' ``KubernetesJobOperator`` builds one (container ``base``)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": backoff_limit,
            "parallelism": 1,
            "template": {
                "metadata": {"labels": {"bench": name}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "base", "image": "example/app:1"}]},
            },
        },
    }


def _condition(api, name: str, ns: str) -> dict | None:
    """Return the Job's first true ``Complete`` or ``Failed`` condition, if any."""
    status = (api.get_or_none("jobs", name, ns) or {}).get("status") or {}
    conditions = status.get("conditions") or []
    return next((c for c in conditions if c["type"] in ("Complete", "Failed") and c["status"] == "True"), None)


def _pods(api, name: str, ns: str) -> list[dict]:
    return api.list("pods", ns, label_selector=f"job-name={name}").get("items", [])


def test_a_job_runs_its_pod_to_completion_and_is_complete(sandbox, sandbox_namespace):
    ns, api = sandbox_namespace, sandbox.api
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["one", "two"], duration=1.0), namespace=ns, pod="ok-*")
    api.create("jobs", _job("ok"), ns)
    condition = wait_for(lambda: _condition(api, "ok", ns), 60, what="the Job's Complete condition")
    assert condition["type"] == "Complete"
    status = api.get("jobs", "ok", ns)["status"]
    assert status["succeeded"] == 1 and status.get("failed", 0) == 0 and status["completionTime"]
    (pod,) = _pods(api, "ok", ns)
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert pod["spec"]["nodeName"] and pod["status"]["phase"] == "Succeeded"
    assert pod_log(api, ns, pod["metadata"]["name"], "base").splitlines() == ["one", "two"]


def test_a_failing_pod_fails_the_job_past_its_backoff_limit(sandbox, sandbox_namespace):
    ns, api = sandbox_namespace, sandbox.api
    sandbox.kubelet.programs.script(ScriptedProgram(lines=["boom"], exit_code=3), namespace=ns, pod="bad-*")
    api.create("jobs", _job("bad"), ns)
    condition = wait_for(lambda: _condition(api, "bad", ns), 60, what="the Job's Failed condition")
    assert (condition["type"], condition["reason"]) == ("Failed", "BackoffLimitExceeded")
    (pod,) = _pods(api, "bad", ns)
    assert pod["status"]["phase"] == "Failed"


def test_deleting_a_job_in_the_foreground_removes_its_pods(sandbox, sandbox_namespace):
    ns, api = sandbox_namespace, sandbox.api
    sandbox.kubelet.programs.script(ScriptedProgram(duration=600.0), namespace=ns, pod="long-*")
    api.create("jobs", _job("long"), ns)
    wait_for(lambda: any(p["status"].get("phase") == "Running" for p in _pods(api, "long", ns)), 60, what="pod up")
    api.delete("jobs", "long", ns, "Foreground")
    wait_for(lambda: api.get_or_none("jobs", "long", ns) is None and not _pods(api, "long", ns), 60, what="all gone")
