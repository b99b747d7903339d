"""Hooks for Argo Workflows and Volcano Jobs, built over the cncf-kubernetes ``KubernetesHook`` and
``AsyncKubernetesHook``: connection, namespace, in-cluster config, kubeconfig and contexts all come from there.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from airflow.providers.cncf.kubernetes.hooks.kubernetes import AsyncKubernetesHook, KubernetesHook
from kubernetes.client.rest import ApiException
from kubernetes_asyncio import client as async_client
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException

from airflow_provider_volcano_argo.errors import KubernetesApiError, explain_api_error
from airflow_provider_volcano_argo.hooks.shared_client import SHARED_API_CLIENTS


@dataclass(frozen=True)
class ApiResource:
    """A custom resource's coordinates."""

    group: str
    version: str
    plural: str

    @property
    def label(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def collection_path(self, namespace: str) -> str:
        """REST path of the namespaced collection (core resources live under /api, others under /apis)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/namespaces/{namespace}/{self.plural}"


WORKFLOWS = ApiResource("argoproj.io", "v1alpha1", "workflows")
WORKFLOW_TEMPLATES = ApiResource("argoproj.io", "v1alpha1", "workflowtemplates")
VOLCANO_JOBS = ApiResource("batch.volcano.sh", "v1alpha1", "jobs")
PODGROUPS = ApiResource("scheduling.volcano.sh", "v1beta1", "podgroups")
PODS = ApiResource("", "v1", "pods")

LOG_CHUNK_BYTES = 64 * 1024
FOLLOW_TIMEOUT = (30, 300)


def log_query(container: str, since_time: str | None, follow: bool, tail_lines: int | None) -> list[tuple[str, Any]]:
    """Query parameters of ``pods/log``; ``sinceTime`` is sent directly as the API allows (the Python client
    exposes only ``sinceSeconds``)."""
    query: list[tuple[str, Any]] = [("container", container), ("timestamps", "true")]
    if follow:
        query.append(("follow", "true"))
    if since_time:
        query.append(("sinceTime", since_time))
    if tail_lines is not None:
        query.append(("tailLines", str(tail_lines)))
    return query


def _raise_api_error(exc: Exception, verb: str, resource: str, namespace: str | None) -> None:
    status = getattr(exc, "status", None)
    body = getattr(exc, "body", None) or getattr(exc, "reason", None)
    raise KubernetesApiError(explain_api_error(status, body, verb, resource, namespace), status=status) from exc


class VolcanoArgoHook(KubernetesHook):
    """Synchronous access to Workflows, WorkflowTemplates, Volcano Jobs, PodGroups, pods and their logs."""

    hook_name = "Volcano via Argo Workflows (Kubernetes)"

    def _call(self, verb: str, resource: str, namespace: str | None, func, *args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ApiException as exc:
            _raise_api_error(exc, verb, resource, namespace)

    def resolve_namespace(self, namespace: str | None) -> str:
        """The given namespace, else the connection's, else ``default``."""
        return namespace or self.get_namespace() or "default"

    # -- custom objects -------------------------------------------------------------------------------
    def create_object(self, res: ApiResource, body: dict, namespace: str) -> dict:
        api = self.custom_object_client
        return self._call(
            "create",
            res.label,
            namespace,
            api.create_namespaced_custom_object,
            res.group,
            res.version,
            namespace,
            res.plural,
            body,
        )

    def get_object(self, res: ApiResource, name: str, namespace: str) -> dict | None:
        """The object, or None when it does not exist."""
        try:
            return self.custom_object_client.get_namespaced_custom_object(
                res.group, res.version, namespace, res.plural, name
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            _raise_api_error(exc, "get", res.label, namespace)
        return None

    def list_objects(self, res: ApiResource, namespace: str, label_selector: str | None = None) -> list[dict]:
        api = self.custom_object_client
        listing = self._call(
            "list",
            res.label,
            namespace,
            api.list_namespaced_custom_object,
            res.group,
            res.version,
            namespace,
            res.plural,
            label_selector=label_selector or "",
        )
        return listing.get("items", [])

    def patch_object(self, res: ApiResource, name: str, patch: dict, namespace: str) -> dict:
        api = self.custom_object_client
        return self._call(
            "patch",
            res.label,
            namespace,
            api.patch_namespaced_custom_object,
            res.group,
            res.version,
            namespace,
            res.plural,
            name,
            patch,
            _content_type="application/merge-patch+json",
        )

    def replace_object(self, res: ApiResource, body: dict, namespace: str) -> dict:
        api = self.custom_object_client
        return self._call(
            "update",
            res.label,
            namespace,
            api.replace_namespaced_custom_object,
            res.group,
            res.version,
            namespace,
            res.plural,
            body["metadata"]["name"],
            body,
        )

    def delete_object(self, res: ApiResource, name: str, namespace: str, propagation: str = "Foreground") -> bool:
        """Delete; returns False when it was already gone."""
        try:
            self.custom_object_client.delete_namespaced_custom_object(
                res.group, res.version, namespace, res.plural, name, propagation_policy=propagation
            )
            return True
        except ApiException as exc:
            if exc.status == 404:
                return False
            _raise_api_error(exc, "delete", res.label, namespace)
        return False

    def stop_workflow(self, name: str, namespace: str, strategy: str = "Stop") -> None:
        """What ``argo stop`` / ``argo terminate`` do: set ``spec.shutdown``. A missing Workflow is fine."""
        try:
            self.patch_object(WORKFLOWS, name, {"spec": {"shutdown": strategy}}, namespace)
        except KubernetesApiError as exc:
            if exc.status != 404:
                raise


class AsyncVolcanoArgoHook(AsyncKubernetesHook):
    """The asynchronous side, used by triggers: get, watch (resuming from resourceVersion), stream logs.

    Every call leases the process's shared API client for the connection's settings (``hooks/shared_client.py``)
    instead of building a client per call as ``AsyncKubernetesHook.get_conn()`` does.
    """

    @contextlib.asynccontextmanager
    async def get_conn(self) -> AsyncIterator[async_client.ApiClient]:
        await self._load_config()
        async with SHARED_API_CLIENTS.lease(self.client_configuration) as client:
            yield client

    async def _call(self, verb: str, resource: str, namespace: str | None, coro):
        try:
            return await coro
        except AsyncApiException as exc:
            _raise_api_error(exc, verb, resource, namespace)

    async def _raw(self, verb: str, resource: str, namespace: str | None, coro):
        """A ``_preload_content=False`` call: kubernetes_asyncio returns those responses whatever their status,
        so an error status (a Status body) is turned into ``KubernetesApiError`` here."""
        response = await self._call(verb, resource, namespace, coro)
        if response.status >= 400:
            try:
                body = await response.read()
            finally:
                response.release()
            raise KubernetesApiError(
                explain_api_error(response.status, body, verb, resource, namespace), status=response.status
            )
        return response

    async def get_object(self, res: ApiResource, name: str, namespace: str) -> dict | None:
        async with self.get_conn() as conn:
            api = async_client.CustomObjectsApi(conn)
            try:
                return await api.get_namespaced_custom_object(res.group, res.version, namespace, res.plural, name)
            except AsyncApiException as exc:
                if exc.status == 404:
                    return None
                _raise_api_error(exc, "get", res.label, namespace)
        return None

    async def list_objects(
        self,
        res: ApiResource,
        namespace: str,
        field_selector: str | None = None,
        label_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> dict:
        """The raw list (``items`` and ``metadata.resourceVersion``, ``metadata.continue`` for the next page
        when ``limit`` cut it) of custom or core objects."""
        query = [
            (k, v)
            for k, v in (
                ("fieldSelector", field_selector),
                ("labelSelector", label_selector),
                ("limit", str(limit) if limit else None),
                ("continue", continue_token),
            )
            if v
        ]
        async with self.get_conn() as conn:
            response = await self._raw(
                "list",
                res.label,
                namespace,
                conn.call_api(
                    res.collection_path(namespace),
                    "GET",
                    query_params=query,
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _return_http_data_only=True,
                ),
            )
            try:
                return json.loads(await response.read())
            finally:
                response.release()

    async def watch_objects(
        self,
        res: ApiResource,
        namespace: str,
        resource_version: str,
        field_selector: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncIterator[dict]:
        """Raw watch events (``{"type", "object"}``) from ``resource_version`` until the server ends the watch.

        Raises ``KubernetesApiError`` with status 410 when that version is too old (the caller relists).
        """
        query: list[tuple[str, Any]] = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if field_selector:
            query.append(("fieldSelector", field_selector))
        if label_selector:
            query.append(("labelSelector", label_selector))
        path = res.collection_path(namespace)
        async for event in self._stream_json_lines(path, query, "watch", res.label, namespace, timeout_seconds + 30):
            if event.get("type") == "ERROR" or "object" not in event:
                # an ERROR event, or a bare Status (seen while the API server shuts down)
                status = event.get("object", event).get("code")
                raise KubernetesApiError(
                    explain_api_error(status, event.get("object", event), "watch", res.label, namespace),
                    status=status,
                )
            yield event

    async def _stream_json_lines(self, path, query, verb, resource, namespace, timeout) -> AsyncIterator[dict]:
        pending = b""
        async for chunk in self.stream_chunks(path, query, verb, resource, namespace, timeout):
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip():
                    yield json.loads(line)

    async def stream_chunks(
        self,
        path: str,
        query: list,
        verb: str,
        resource: str,
        namespace: str | None,
        timeout: float | tuple[float, float] | None,
    ) -> AsyncIterator[bytes]:
        """GET ``path`` and yield the body in chunks of at most 64 KiB as it arrives."""
        async with self.get_conn() as conn:
            response = await self._raw(
                verb,
                resource,
                namespace,
                conn.call_api(
                    path,
                    "GET",
                    query_params=query,
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _return_http_data_only=True,
                    _request_timeout=timeout,
                ),
            )
            try:
                async for chunk in response.content.iter_chunked(LOG_CHUNK_BYTES):
                    yield chunk
            finally:
                response.release()

    async def stream_log(
        self, pod: str, container: str, namespace: str, since_time: str | None, follow: bool
    ) -> AsyncIterator[bytes]:
        """The container's log with timestamps, chunk by chunk (bounded), from ``since_time``."""
        path = f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
        query = log_query(container, since_time, follow, None)
        # (connect, read-idle) for a follow: no total limit (cncf-kubernetes turns None into a 60 s total, which
        # cut every follow read once a minute), but a silent or half-open stream is re-opened after 5 minutes
        timeout = FOLLOW_TIMEOUT if follow else 120
        async for chunk in self.stream_chunks(path, query, "get", "pods/log", namespace, timeout):
            yield chunk

    async def patch_object(self, res: ApiResource, name: str, patch: dict, namespace: str) -> dict:
        async with self.get_conn() as conn:
            api = async_client.CustomObjectsApi(conn)
            return await self._call(
                "patch",
                res.label,
                namespace,
                api.patch_namespaced_custom_object(
                    res.group,
                    res.version,
                    namespace,
                    res.plural,
                    name,
                    patch,
                    _content_type="application/merge-patch+json",
                ),
            )

    async def delete_object(self, res: ApiResource, name: str, namespace: str, propagation: str = "Foreground") -> bool:
        async with self.get_conn() as conn:
            api = async_client.CustomObjectsApi(conn)
            try:
                await api.delete_namespaced_custom_object(
                    res.group, res.version, namespace, res.plural, name, propagation_policy=propagation
                )
                return True
            except AsyncApiException as exc:
                if exc.status == 404:
                    return False
                _raise_api_error(exc, "delete", res.label, namespace)
        return False
