"""One Kubernetes API client per event loop and connection settings, shared by every trigger of a triggerer.

Private to the hooks: ``AsyncVolcanoArgoHook.get_conn()`` leases from it.

``AsyncKubernetesHook.get_conn()`` builds a new ``ApiClient`` for every call: a new aiohttp session, a new TLS
context (the CA bundle parsed again) and new connections. A follower holds four streams at once, so a triggerer
with hundreds of deferred runs held four sessions and TLS contexts per run (benchmarks/triggerer_capacity.py).
Leasing one client per settings keeps one TLS context and one connection pool; the pool has no size limit
because watches and log follows hold their connection for minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass

from kubernetes_asyncio import client as async_client

try:  # sets a default request timeout where the generated API methods pass none (cncf-kubernetes >= 10.4)
    from airflow.providers.cncf.kubernetes.kube_client import _TimeoutAsyncK8sApiClient as _ApiClient
except ImportError:  # pragma: no cover - older cncf-kubernetes
    _ApiClient = async_client.ApiClient


def settings_key(configuration: async_client.Configuration) -> tuple:
    """Return what makes two configurations talk to the same server as the same identity."""
    return (
        configuration.host,
        tuple(sorted((configuration.api_key or {}).items())),
        tuple(sorted((configuration.api_key_prefix or {}).items())),
        configuration.username,
        configuration.password,
        configuration.cert_file,
        configuration.key_file,
        configuration.ssl_ca_cert,
        configuration.verify_ssl,
        getattr(configuration, "tls_server_name", None),
        configuration.proxy,
    )


@dataclass
class _Lease:
    client: async_client.ApiClient
    users: int = 0


class SharedApiClients:
    """Leases out one ``ApiClient`` per (event loop, settings); the last lease to end closes it."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple, _Lease]] = (
            weakref.WeakKeyDictionary()
        )

    def open_clients(self) -> int:
        """Count the clients open on the running loop (for tests and benchmarks)."""
        return len(self._by_loop.get(asyncio.get_running_loop(), {}))

    @contextlib.asynccontextmanager
    async def lease(self, configuration: async_client.Configuration) -> AsyncIterator[async_client.ApiClient]:
        """Lease the shared client for these settings, created on first use."""
        leases = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        key = settings_key(configuration)
        lease = leases.get(key)
        if lease is None:
            # a copy: the hook may reload its configuration (exec auth) while others use this client
            own = copy.deepcopy(configuration)
            own.connection_pool_maxsize = 0  # aiohttp: no limit
            lease = leases[key] = _Lease(_ApiClient(configuration=own))
        lease.users += 1
        try:
            yield lease.client
        finally:
            lease.users -= 1
            if lease.users == 0:
                if leases.get(key) is lease:
                    del leases[key]
                await lease.client.close()


#: The process-wide pool the async hook leases from.
SHARED_API_CLIENTS = SharedApiClients()
