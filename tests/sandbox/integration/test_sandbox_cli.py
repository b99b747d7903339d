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
    client.CoreV1Api().list_namespaced_pod("argo")  # the Airflow Role may list pods
    try:
        client.CoreV1Api().list_namespaced_secret("argo")
        print("secrets readable")
    except client.ApiException as exc:
        print("secrets", exc.status)
    sys.exit(7)
    """
)


def test_run_applies_files_and_passes_the_commands_exit_code(tmp_path):
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied, namespace: argo}\ndata: {k: v}\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_provider_volcano_argo.sandbox.cli",
            "run",
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
    assert "secrets 403" in result.stdout  # least privilege: the Airflow identity cannot read Secrets
    assert f"applied {manifest}" in result.stderr
