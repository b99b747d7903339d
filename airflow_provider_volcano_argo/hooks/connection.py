"""The connection settings of a task (conn id, context, config file, in-cluster): the one place hooks are made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook, VolcanoArgoHook

DEFAULT_CONN_ID = "kubernetes_default"


@dataclass(frozen=True)
class KubernetesConnection:
    """Which cncf-kubernetes connection to use and how: makes the sync and the async hook, travels to the trigger.

    :param conn_id: the Airflow connection (type ``kubernetes``).
    :param cluster_context: kubeconfig context, overriding the connection's.
    :param config_file: kubeconfig path, overriding the connection's.
    :param in_cluster: use the pod's service account, overriding the connection's.
    """

    conn_id: str = DEFAULT_CONN_ID
    cluster_context: str | None = None
    config_file: str | None = None
    in_cluster: bool | None = None

    def _settings(self) -> dict[str, Any]:
        return {
            "conn_id": self.conn_id,
            "cluster_context": self.cluster_context,
            "config_file": self.config_file,
            "in_cluster": self.in_cluster,
        }

    def hook(self) -> VolcanoArgoHook:
        """Make the synchronous hook (worker side)."""
        return VolcanoArgoHook(**self._settings())

    def async_hook(self) -> AsyncVolcanoArgoHook:
        """Make the asynchronous hook (triggerer side, and blocking mode)."""
        return AsyncVolcanoArgoHook(**self._settings())

    def to_dict(self) -> dict[str, Any]:
        """Serialize for trigger kwargs (the keys of 0.1, so rows it wrote still load)."""
        settings = self._settings()
        return {"kubernetes_conn_id": settings.pop("conn_id"), **settings}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> KubernetesConnection:
        """Read what ``to_dict`` wrote (missing keys take the defaults)."""
        data = data or {}
        return cls(
            conn_id=data.get("kubernetes_conn_id") or DEFAULT_CONN_ID,
            cluster_context=data.get("cluster_context"),
            config_file=data.get("config_file"),
            in_cluster=data.get("in_cluster"),
        )


class KubernetesConnectionFields:
    """Give an operator or sensor its connection arguments as a ``KubernetesConnection`` and its sync hook.

    The arguments are ``kubernetes_conn_id``, ``cluster_context``, ``config_file`` and ``in_cluster``.
    """

    kubernetes_conn_id: str
    cluster_context: str | None
    config_file: str | None
    in_cluster: bool | None

    @property
    def connection(self) -> KubernetesConnection:
        return KubernetesConnection(self.kubernetes_conn_id, self.cluster_context, self.config_file, self.in_cluster)

    @property
    def hook(self) -> VolcanoArgoHook:
        return self.connection.hook()
