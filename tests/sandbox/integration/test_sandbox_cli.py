"""``volcano-argo-sandbox run``: start, apply as admin, run a command as the least-privilege identity, stop."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration

CHECK = textwrap.dedent(
    """
    import json, os, sys
    from kubernetes import client, config
    config.load_kube_config()
    conn = json.loads(os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"])
    assert conn["conn_type"] == "kubernetes" and conn["extra"]["namespace"] == "argo"
    client.CoreV1Api().list_namespaced_pod("argo")  # the Role given may list pods
    for what, call in (
        ("secrets", lambda: client.CoreV1Api().list_namespaced_secret("argo")),
        ("get pod", lambda: client.CoreV1Api().read_namespaced_pod("nobody", "argo")),  # the defaults would allow it
    ):
        try:
            call()
            print(what, "allowed")
        except client.ApiException as exc:
            print(what, exc.status)
    sys.exit(7)
    """
)


def test_run_applies_files_binds_the_role_given_and_passes_the_commands_exit_code(tmp_path):
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied, namespace: argo}\ndata: {k: v}\n")
    role = tmp_path / "role.yaml"
    role.write_text(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\n"
        'rules: [{apiGroups: [""], resources: [pods], verbs: [list]}]\n'
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_provider_volcano_argo.sandbox.cli",
            "run",
            "--airflow-role",
            str(role),
            "--apply",
            str(manifest),
            "--",
            sys.executable,
            "-c",
            CHECK,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 7, result.stderr[-2000:]
    # exactly the Role given: listing pods works, reading Secrets or a pod by name does not (404 would mean allowed)
    assert "secrets 403" in result.stdout and "get pod 403" in result.stdout, result.stdout
    assert f"applied {manifest}" in result.stderr
