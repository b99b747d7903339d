"""The Argo-side RBAC that ``volcano-argo install-templates --with-rbac`` applies, in a namespace of its own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.integration.helpers import submit_from_template, wait_for

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "airflow_provider_volcano_argo.cli"]


def _may(sandbox, namespace: str, verb: str, resource: str, subresource: str = "") -> bool:
    """Ask the API server's authorizer whether the service account ``argo`` may (a SubjectAccessReview)."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{namespace}:argo",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"],
            "resourceAttributes": {
                "namespace": namespace,
                "verb": verb,
                "group": "argoproj.io",
                "resource": resource,
                "subresource": subresource,
            },
        },
    }
    answer = sandbox.api.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=review)
    return bool(answer["status"].get("allowed"))


def _phase_and_message(sandbox, name: str, namespace: str) -> tuple[str, str] | None:
    status = sandbox.api.get("workflows", name, namespace).get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed", "Error"):
        nodes = status.get("nodes") or {}
        return status["phase"], " ".join(n.get("message", "") for n in nodes.values())
    return None


def test_install_templates_with_rbac_creates_the_argo_service_account_and_grants_workflow_finalizers(sandbox):
    """Argo's quick start creates the service account ``argo`` in namespace ``argo`` only: elsewhere the resource
    step's pod is refused by the API server's ServiceAccount admission (a non-transient error: the node's Error,
    operator.go ``executeResource``) until ``--with-rbac`` creates it. The Role grants ``update`` on
    ``workflows/finalizers``: the Job's owner reference blocks owner deletion, which clusters enforcing
    OwnerReferencesPermissionEnforcement (OpenShift) check.
    """
    ns = sandbox.create_namespace("fresh-rbac", airflow_access=False)
    env = {**os.environ, **sandbox.environment(admin=True)}
    try:
        templates_only = subprocess.run(
            [*CLI, "install-templates", "-n", ns], capture_output=True, text=True, env=env, timeout=120
        )
        assert templates_only.returncode == 0, templates_only.stderr[-2000:]
        name = submit_from_template(sandbox.api, ns, "volcano-mpi", {"job-name": "no-sa"})["metadata"]["name"]
        phase, message = wait_for(lambda: _phase_and_message(sandbox, name, ns), 60, what="the Workflow ended")
        assert phase == "Failed" and 'serviceaccount "argo" not found' in message, message
        assert sandbox.api.list("vcjobs", ns)["items"] == []

        with_rbac = subprocess.run(
            [*CLI, "install-templates", "-n", ns, "--with-rbac"], capture_output=True, text=True, env=env, timeout=120
        )
        assert with_rbac.returncode == 0, with_rbac.stderr[-2000:]
        assert f"applied ServiceAccount {ns}/argo" in with_rbac.stdout
        assert _may(sandbox, ns, "update", "workflows", "finalizers")
        assert _may(sandbox, ns, "create", "workflowtaskresults")
        name = submit_from_template(sandbox.api, ns, "volcano-mpi", {"job-name": "with-sa"})["metadata"]["name"]
        assert wait_for(lambda: _phase_and_message(sandbox, name, ns), 90, what="the Workflow ended")[0] == "Succeeded"
    finally:
        sandbox.delete_namespace(ns)
