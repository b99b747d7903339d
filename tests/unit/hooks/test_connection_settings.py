"""The operator's connection settings reach the trigger whole: the worker's hook and the trigger's hook, built from
the same ``KubernetesConnection``, talk to the same cluster (kubeconfigs loaded for real, no server needed).
"""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml

from airflow_provider_volcano_argo.hooks.connection import KubernetesConnection


def _kubeconfig(path, server: str, context: str = "main") -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": context, "cluster": {"server": server}}],
                "users": [{"name": context, "user": {"token": "t"}}],
                "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
                "current-context": context,
            }
        )
    )
    return str(path)


@pytest.fixture
def connection_to_a(tmp_path, monkeypatch) -> str:
    """``kubernetes_default`` points at cluster A; returns the path of a kubeconfig for cluster B."""
    conn = {"conn_type": "kubernetes", "extra": {"kube_config_path": _kubeconfig(tmp_path / "a", "https://a:6443")}}
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(conn))
    return _kubeconfig(tmp_path / "b", "https://b:6443")


def _async_host(connection: KubernetesConnection) -> str:
    hook = KubernetesConnection.from_dict(connection.to_dict()).async_hook()  # as the trigger rebuilds it
    asyncio.run(hook._load_config())
    return hook.client_configuration.host


def test_config_file_overrides_the_connection_in_the_worker_and_in_the_trigger(connection_to_a):
    connection = KubernetesConnection(config_file=connection_to_a)
    assert connection.hook().get_conn().configuration.host == "https://b:6443"
    assert _async_host(connection) == "https://b:6443"  # was https://a:6443: watched another cluster


def test_without_config_file_both_use_the_connection(connection_to_a):
    connection = KubernetesConnection()
    assert connection.hook().get_conn().configuration.host == "https://a:6443"
    assert _async_host(connection) == "https://a:6443"
