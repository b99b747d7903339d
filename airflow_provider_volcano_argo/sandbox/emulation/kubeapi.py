"""Dict-based access to the API server for the emulators, over the official ``kubernetes`` client's transport.

The emulated controllers work on unstructured objects (plain dicts), as upstream controllers built on
``unstructured.Unstructured`` do, so one small surface serves pods, services and custom resources alike.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes import client, config
from kubernetes.client.rest import ApiException

__all__ = ["ApiException", "KubeApi", "Resource", "RESOURCES"]


@dataclass(frozen=True)
class Resource:
    """One API resource: where it lives and whether it is namespaced."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if subresource:
            base += f"/{subresource}"
        return base


RESOURCES = {
    "pods": Resource("", "v1", "pods"),
    "services": Resource("", "v1", "services"),
    "configmaps": Resource("", "v1", "configmaps"),
    "secrets": Resource("", "v1", "secrets"),
    "events": Resource("", "v1", "events"),
    "persistentvolumeclaims": Resource("", "v1", "persistentvolumeclaims"),
    "persistentvolumes": Resource("", "v1", "persistentvolumes", namespaced=False),
    "nodes": Resource("", "v1", "nodes", namespaced=False),
    "namespaces": Resource("", "v1", "namespaces", namespaced=False),
    "serviceaccounts": Resource("", "v1", "serviceaccounts"),
    "networkpolicies": Resource("networking.k8s.io", "v1", "networkpolicies"),
    "jobs": Resource("batch", "v1", "jobs"),
    "vcjobs": Resource("batch.volcano.sh", "v1alpha1", "jobs"),
    "podgroups": Resource("scheduling.volcano.sh", "v1beta1", "podgroups"),
    "queues": Resource("scheduling.volcano.sh", "v1beta1", "queues", namespaced=False),
    "commands": Resource("bus.volcano.sh", "v1alpha1", "commands"),
    "workflows": Resource("argoproj.io", "v1alpha1", "workflows"),
    "workflowtemplates": Resource("argoproj.io", "v1alpha1", "workflowtemplates"),
    "clusterworkflowtemplates": Resource("argoproj.io", "v1alpha1", "clusterworkflowtemplates", namespaced=False),
    "workflowtaskresults": Resource("argoproj.io", "v1alpha1", "workflowtaskresults"),
}

#: client-go's rest client retries a 429 or 5xx that carries Retry-After up to 10 times (``maxRetries`` in
#: ``k8s.io/client-go/rest/request.go``); e.g. a pod created in a namespace whose ``default`` service account
#: has no token yet gets 500 ServerTimeout with ``Retry-After: 1``.
MAX_RETRY_AFTER_RETRIES = 10


def retry_after_seconds(exc: ApiException) -> float | None:
    """Seconds to wait before retrying, as client-go's ``checkWait``: only for 429/5xx with ``Retry-After``."""
    if not (exc.status == 429 or (exc.status or 0) >= 500):
        return None
    value = (exc.headers or {}).get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _status(exc: ApiException) -> dict:
    """Return the ``Status`` object an API error carries, else {}."""
    try:
        body = json.loads(exc.body)
    except (ValueError, TypeError):
        return {}
    return body if isinstance(body, dict) else {}


def status_message(exc: ApiException) -> str:
    """Return the message of the ``Status`` an API error carries, else the error's reason."""
    status = _status(exc)
    return status["message"] if "message" in status else str(exc.reason)


def status_reason(exc: ApiException) -> str:
    """Return the reason of the ``Status`` an API error carries (``ServerTimeout``, ``NotFound``, ...), else ""."""
    return str(_status(exc).get("reason") or "")


_PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}


class KubeApi:
    """A thin dict-in, dict-out client for one identity (admin, or a service account through impersonation).

    ``impersonating()`` returns a view on the same ``ApiClient``: closing any of them closes it for all.
    """

    def __init__(self, api_client: client.ApiClient, headers: dict[str, str] | None = None):
        self.api_client = api_client
        self.headers = headers or {}  # sent with every request (impersonation)

    @classmethod
    def from_kubeconfig(cls, path: str) -> KubeApi:
        configuration = client.Configuration()
        config.load_kube_config(config_file=path, client_configuration=configuration)
        configuration.retries = 0
        configuration.connection_pool_maxsize = 64  # informers, controllers and programs share one pool
        return cls(client.ApiClient(configuration))

    def impersonating(self, user: str, groups: list[str]) -> KubeApi:
        """Return a view on the same server acting as ``user`` (as Argo's executor acts as the workflow's SA).

        Shares this client's connection pool: a client per identity made every emulated ``kubectl`` call a new
        TLS handshake, which at hundreds of pods was most of the sandbox's CPU.
        """
        headers = {**self.headers, "Impersonate-User": user}
        # ApiClient sends one value per header name; the server splits Impersonate-Group only across headers,
        # so impersonate the service account's first group and rely on user-level bindings (what RBAC binds).
        if groups:
            headers["Impersonate-Group"] = groups[0]
        return KubeApi(self.api_client, headers)

    def close(self) -> None:
        self.api_client.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        content_type: str = "application/json",
        timeout: float | tuple[float, float] | None = 30,
        stream: bool = False,
    ) -> Any:
        """Send one request; returns parsed JSON, or the raw response when ``stream``."""
        params = [(k, str(v).lower() if isinstance(v, bool) else v) for k, v in (query or {}).items() if v is not None]
        for attempt in range(MAX_RETRY_AFTER_RETRIES + 1):
            try:
                response = self.api_client.call_api(
                    path,
                    method,
                    query_params=params,
                    header_params={"Content-Type": content_type, "Accept": "application/json", **self.headers},
                    body=body,
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _return_http_data_only=True,
                    _request_timeout=timeout,
                )
                break
            except ApiException as exc:
                wait = retry_after_seconds(exc)
                if wait is None or attempt == MAX_RETRY_AFTER_RETRIES:
                    raise
                time.sleep(wait)
        if stream:
            return response
        data = response.data
        return json.loads(data) if data else None

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict:
        return self.request("GET", RESOURCES[kind].path(namespace, name))

    def get_or_none(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        try:
            return self.get(kind, name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, kind: str, namespace: str | None = None, label_selector: str | None = None) -> dict:
        return self.request("GET", RESOURCES[kind].path(namespace), query={"labelSelector": label_selector})

    def create(self, kind: str, body: dict, namespace: str | None = None) -> dict:
        namespace = namespace or body.get("metadata", {}).get("namespace")
        return self.request("POST", RESOURCES[kind].path(namespace), body=body)

    def replace(self, kind: str, body: dict, subresource: str | None = None) -> dict:
        meta = body["metadata"]
        return self.request("PUT", RESOURCES[kind].path(meta.get("namespace"), meta["name"], subresource), body=body)

    def patch(
        self,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        subresource: str | None = None,
        patch_type: str = "merge",
    ) -> dict:
        path = RESOURCES[kind].path(namespace, name, subresource)
        return self.request("PATCH", path, body=patch, content_type=_PATCH_TYPES[patch_type])

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        propagation: str | None = None,
        grace_period_seconds: int | None = None,
        missing_ok: bool = True,
        uid: str | None = None,
    ) -> dict | None:
        """Delete an object; ``uid``: only if it is still that object (a precondition: 409 Conflict otherwise)."""
        body: dict = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation:
            body["propagationPolicy"] = propagation
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if uid is not None:
            body["preconditions"] = {"uid": uid}
        try:
            return self.request("DELETE", RESOURCES[kind].path(namespace, name), body=body)
        except ApiException as exc:
            if missing_ok and exc.status == 404:
                return None
            raise

    def watch(self, kind: str, resource_version: str, timeout_seconds: int = 60) -> Iterator[dict]:
        """Yield watch events (``{"type", "object"}``) for every namespace, from ``resource_version``."""
        response = self.request(
            "GET",
            RESOURCES[kind].path(),
            query={
                "watch": True,
                "resourceVersion": resource_version,
                "allowWatchBookmarks": True,
                "timeoutSeconds": timeout_seconds,
            },
            timeout=(10, timeout_seconds + 10),
            stream=True,
        )
        try:
            buffer = b""
            for chunk in response.stream(amt=65536, decode_content=False):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            response.release_conn()
