"""``volcano-argo install-templates`` (the provider's CLI) against the sandbox: creates, then finds up to date."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_install_templates_cli_creates_then_updates(sandbox, sandbox_namespace):
    import os

    env = {**os.environ, **sandbox.environment(admin=True)}
    cmd = [
        sys.executable,
        "-m",
        "airflow_provider_volcano_argo.cli",
        "install-templates",
        "-n",
        sandbox_namespace,
        "--with-rbac",
    ]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr[-2000:]
    assert f"created WorkflowTemplate {sandbox_namespace}/volcano-mpi" in first.stdout
    assert f"applied Role {sandbox_namespace}/volcano-mpi-workflow" in first.stdout
    again = subprocess.run(cmd[:-1], capture_output=True, text=True, env=env, timeout=120)
    assert f"WorkflowTemplate {sandbox_namespace}/volcano-mpi is up to date" in again.stdout
    assert sandbox.api.get("workflowtemplates", "volcano-mpi-master-after-workers", sandbox_namespace)
