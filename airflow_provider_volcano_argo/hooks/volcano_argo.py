"""Hooks for Argo Workflows and Volcano Jobs, over cncf-kubernetes' ``KubernetesHook`` and ``AsyncKubernetesHook``.

Connection, namespace, in-cluster config, kubeconfig and contexts all come from those.

Every API call of the provider goes through these hooks, and every failure leaves them as a typed error of
``exceptions`` (``ApiNotFoundError``, ``ApiRefusedError``, ...). "404 means absent" is written once
(``_api_calls.absent_or_raise``): ``get_object`` returns None, ``delete_object`` False, ``stop_workflow`` nothing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Collection
from typing import Any

from airflow.providers.cncf.kubernetes.hooks.kubernetes import AsyncKubernetesHook, KubernetesHook
from kubernetes.client.rest import ApiException
from kubernetes_asyncio import client as async_client
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException

from airflow_provider_volcano_argo.exceptions import VolcanoArgoApiError, api_error, unreachable_error
from airflow_provider_volcano_argo.hooks._api_calls import (
    ASYNC_TRANSPORT_ERRORS,
    MERGE_PATCH,
    RAISE,
    SYNC_TRANSPORT_ERRORS,
    absent_or_raise,
    log_query,
    raw_get,
    to_api_error,
)
from airflow_provider_volcano_argo.hooks._client_pool import SHARED_API_CLIENTS
from airflow_provider_volcano_argo.models.policies import STOP_STRATEGY, CleanupSteps
from airflow_provider_volcano_argo.models.resources import (
    COMMANDS,
    VOLCANO_JOBS,
    WORKFLOW_TEMPLATES,
    WORKFLOWS,
    ApiResource,
)
from airflow_provider_volcano_argo.models.selectors import OWNED_SELECTOR
from airflow_provider_volcano_argo.models.volcano_commands import (
    jobs_to_terminate,
    needs_unnarrowed_list,
    terminate_command,
)

LOG_CHUNK_BYTES = 64 * 1024
FOLLOW_TIMEOUT = (30, 300)


class VolcanoArgoHook(KubernetesHook):
    """Synchronous access to Workflows, WorkflowTemplates, Volcano Jobs and PodGroups."""

    hook_name = "Volcano via Argo Workflows (Kubernetes)"

    def resolve_namespace(self, namespace: str | None) -> str:
        """Return the given namespace, else the connection's, else ``default``."""
        return namespace or self.get_namespace() or "default"

    def _custom(self, verb: str, res: ApiResource, namespace: str, method: str, *args, absent=RAISE, **kwargs):
        api = self.custom_object_client
        try:
            return getattr(api, method)(res.group, res.version, namespace, res.plural, *args, **kwargs)
        except ApiException as exc:
            return absent_or_raise(exc, verb, res.label, namespace, absent)
        except SYNC_TRANSPORT_ERRORS as exc:
            raise unreachable_error(exc, verb, res.label, namespace) from exc

    def create_object(self, res: ApiResource, body: dict, namespace: str) -> dict:
        return self._custom("create", res, namespace, "create_namespaced_custom_object", body)

    def get_object(self, res: ApiResource, name: str, namespace: str) -> dict | None:
        """Return the object, or None when it does not exist."""
        return self._custom("get", res, namespace, "get_namespaced_custom_object", name, absent=None)

    def list_objects(self, res: ApiResource, namespace: str, label_selector: str | None = None) -> list[dict]:
        method = "list_namespaced_custom_object"
        return self._custom("list", res, namespace, method, label_selector=label_selector or "").get("items", [])

    def patch_object(self, res: ApiResource, name: str, patch: dict, namespace: str) -> dict:
        method = "patch_namespaced_custom_object"
        return self._custom("patch", res, namespace, method, name, patch, _content_type=MERGE_PATCH)

    def replace_object(self, res: ApiResource, body: dict, namespace: str) -> dict:
        method = "replace_namespaced_custom_object"
        return self._custom("update", res, namespace, method, body["metadata"]["name"], body)

    def delete_object(self, res: ApiResource, name: str, namespace: str, propagation: str = "Foreground") -> bool:
        """Delete; return False when it was already gone."""
        method = "delete_namespaced_custom_object"
        done = self._custom("delete", res, namespace, method, name, propagation_policy=propagation, absent=False)
        return done is not False

    def stop_workflow(self, name: str, namespace: str, strategy: str = STOP_STRATEGY) -> dict | None:
        """Do what ``argo stop`` / ``argo terminate`` do: set ``spec.shutdown``; return the Workflow, if any."""
        patch = {"spec": {"shutdown": strategy}}
        return self._custom("patch", WORKFLOWS, namespace, "patch_namespaced_custom_object", name, patch,
                            _content_type=MERGE_PATCH, absent=None)  # fmt: skip

    def list_workflows_jobs(self, namespace: str, workflow_uids: Collection[str | None]) -> list[dict]:
        """List the Volcano Jobs the provider labels, or all the namespace's when one of the Workflows owns none."""
        listed = self.list_objects(VOLCANO_JOBS, namespace, OWNED_SELECTOR)
        if any(needs_unnarrowed_list(listed, uid) for uid in workflow_uids):
            listed = self.list_objects(VOLCANO_JOBS, namespace)
        return listed

    def terminate_jobs(self, workflow: dict, namespace: str) -> list[str]:
        """Terminate the Volcano Jobs the Workflow created that still run (kept, pods gone); return their names."""
        uid = workflow["metadata"].get("uid")
        jobs = jobs_to_terminate(self.list_workflows_jobs(namespace, [uid]), uid)
        for job in jobs:
            self.create_object(COMMANDS, terminate_command(job), namespace)
        return [job["metadata"]["name"] for job in jobs]

    def clean_up_workflow(self, name: str, namespace: str, steps: CleanupSteps) -> bool:
        """Stop and/or delete a Workflow as ``steps`` say; return whether it was deleted here.

        A stop without deletion also terminates the Volcano Jobs the Workflow created (Argo's shutdown does not
        reach them); a deletion takes them with it. Deletion is done even when the stop failed, then the failure
        is raised.
        """
        failure: VolcanoArgoApiError | None = None
        if steps.stop:
            try:
                workflow = self.stop_workflow(name, namespace)
                if workflow is not None and not steps.delete:
                    self.terminate_jobs(workflow, namespace)
            except VolcanoArgoApiError as exc:
                failure = exc
        deleted = steps.delete and self.delete_object(WORKFLOWS, name, namespace, propagation="Foreground")
        if failure is not None:
            raise failure
        return deleted

    def apply_workflow_template(self, body: dict) -> str:
        """Create or update a WorkflowTemplate (``metadata.namespace`` set); say which was done."""
        name, namespace = body["metadata"]["name"], body["metadata"]["namespace"]
        current = self.get_object(WORKFLOW_TEMPLATES, name, namespace)
        if current is None:
            self.create_object(WORKFLOW_TEMPLATES, body, namespace)
            return f"created WorkflowTemplate {namespace}/{name}"
        if current.get("spec") == body["spec"]:
            return f"WorkflowTemplate {namespace}/{name} is up to date"
        version = current["metadata"]["resourceVersion"]
        self.replace_object(
            WORKFLOW_TEMPLATES, {**body, "metadata": {**body["metadata"], "resourceVersion": version}}, namespace
        )
        return f"updated WorkflowTemplate {namespace}/{name}"


class AsyncVolcanoArgoHook(AsyncKubernetesHook):
    """The asynchronous side, used by triggers: get, list, watch (from a resourceVersion), stream logs, patch, delete.

    Every call leases the process's shared API client for the connection's settings (``hooks/_client_pool.py``)
    instead of building a client per call as ``AsyncKubernetesHook.get_conn()`` does.
    """

    async def _get_field(self, field_name: str) -> Any:
        """Read a connection extra; ``config_file`` overrides ``kube_config_path`` as in the sync hook.

        cncf-kubernetes' ``AsyncKubernetesHook._load_config`` reads only the connection's ``kube_config_path`` and
        ignores ``config_file``, so a trigger would watch another cluster than the one the worker submitted to.
        """
        if field_name == "kube_config_path" and self.config_file:
            return self.config_file
        return await super()._get_field(field_name)

    @contextlib.asynccontextmanager
    async def get_conn(self) -> AsyncIterator[async_client.ApiClient]:
        await self._load_config()
        async with SHARED_API_CLIENTS.lease(self.client_configuration) as client:
            yield client

    async def _custom(self, verb: str, res: ApiResource, namespace: str, method: str, *args, absent=RAISE, **kw):
        async with self.get_conn() as conn:
            api = async_client.CustomObjectsApi(conn)
            try:
                return await getattr(api, method)(res.group, res.version, namespace, res.plural, *args, **kw)
            except AsyncApiException as exc:
                return absent_or_raise(exc, verb, res.label, namespace, absent)
            except ASYNC_TRANSPORT_ERRORS as exc:
                raise unreachable_error(exc, verb, res.label, namespace) from exc

    async def _raw(self, verb: str, resource: str, namespace: str | None, call: Callable[[], Any]):
        """Make a ``_preload_content=False`` call, raising the typed error of an error status.

        kubernetes_asyncio returns those responses whatever their status, so an error (a Status body) is read here.
        """
        try:
            response = await call()
        except AsyncApiException as exc:
            raise to_api_error(exc, verb, resource, namespace) from exc
        except ASYNC_TRANSPORT_ERRORS as exc:
            raise unreachable_error(exc, verb, resource, namespace) from exc
        if response.status >= 400:
            try:
                body = await response.read()
            finally:
                response.release()
            raise api_error(response.status, body, verb, resource, namespace)
        return response

    async def get_object(self, res: ApiResource, name: str, namespace: str) -> dict | None:
        """Return the object, or None when it does not exist."""
        return await self._custom("get", res, namespace, "get_namespaced_custom_object", name, absent=None)

    async def list_objects(
        self,
        res: ApiResource,
        namespace: str,
        field_selector: str | None = None,
        label_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> dict:
        """Return the raw list of custom or core objects.

        It has ``items``, ``metadata.resourceVersion``, and ``metadata.continue`` for the next page when ``limit``
        cut it.
        """
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
        path = res.collection_path(namespace)
        async with self.get_conn() as conn:
            response = await self._raw("list", res.label, namespace, lambda: raw_get(conn, path, query, None))
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
        """Yield raw watch events (``{"type", "object"}``) from ``resource_version`` until the server ends the watch.

        Raises ``ApiGoneError`` (410) when that version is too old (the caller relists).
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
                status = event.get("object", event)
                raise api_error(status.get("code"), status, "watch", res.label, namespace)
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
            response = await self._raw(verb, resource, namespace, lambda: raw_get(conn, path, query, timeout))
            try:
                async for chunk in response.content.iter_chunked(LOG_CHUNK_BYTES):
                    yield chunk
            finally:
                response.release()

    async def stream_log(
        self, pod: str, container: str, namespace: str, since_time: str | None, follow: bool, previous: bool = False
    ) -> AsyncIterator[bytes]:
        """Yield the container's log with timestamps, chunk by chunk (bounded), from ``since_time``.

        With ``previous``, the log of the container's ``lastState`` (the instance that exited last).
        """
        path = f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
        query = log_query(container, since_time, follow, None, previous)
        # (connect, read-idle) for a follow: no total limit (cncf-kubernetes turns None into a 60 s total, which
        # cut every follow read once a minute), but a silent or half-open stream is re-opened after 5 minutes
        timeout = FOLLOW_TIMEOUT if follow else 120
        async for chunk in self.stream_chunks(path, query, "get", "pods/log", namespace, timeout):
            yield chunk

    async def patch_object(self, res: ApiResource, name: str, patch: dict, namespace: str) -> dict:
        method = "patch_namespaced_custom_object"
        return await self._custom("patch", res, namespace, method, name, patch, _content_type=MERGE_PATCH)

    async def delete_object(self, res: ApiResource, name: str, namespace: str, propagation: str = "Foreground") -> bool:
        """Delete; return False when it was already gone."""
        method = "delete_namespaced_custom_object"
        done = await self._custom("delete", res, namespace, method, name, propagation_policy=propagation, absent=False)
        return done is not False

    async def stop_workflow(self, name: str, namespace: str, strategy: str = STOP_STRATEGY) -> dict | None:
        """Set the Workflow's ``spec.shutdown`` (``argo terminate``); return the Workflow, if any."""
        patch = {"spec": {"shutdown": strategy}}
        return await self._custom("patch", WORKFLOWS, namespace, "patch_namespaced_custom_object", name, patch,
                                  _content_type=MERGE_PATCH, absent=None)  # fmt: skip

    async def list_workflows_jobs(self, namespace: str, workflow_uids: Collection[str | None]) -> list[dict]:
        """List the Volcano Jobs the provider labels, or all the namespace's when one of the Workflows owns none."""
        listed = (await self.list_objects(VOLCANO_JOBS, namespace, label_selector=OWNED_SELECTOR)).get("items") or []
        if any(needs_unnarrowed_list(listed, uid) for uid in workflow_uids):
            listed = (await self.list_objects(VOLCANO_JOBS, namespace)).get("items") or []
        return listed

    async def terminate_jobs(self, workflow: dict, namespace: str) -> list[str]:
        """Terminate the Volcano Jobs the Workflow created that still run (kept, pods gone); return their names."""
        uid = workflow["metadata"].get("uid")
        jobs = jobs_to_terminate(await self.list_workflows_jobs(namespace, [uid]), uid)
        for job in jobs:
            await self._custom("create", COMMANDS, namespace, "create_namespaced_custom_object", terminate_command(job))
        return [job["metadata"]["name"] for job in jobs]

    async def clean_up_workflow(self, name: str, namespace: str, steps: CleanupSteps) -> bool:
        """Stop and/or delete a Workflow as ``steps`` say; return whether it was deleted here (see the sync hook)."""
        failure: VolcanoArgoApiError | None = None
        if steps.stop:
            try:
                workflow = await self.stop_workflow(name, namespace)
                if workflow is not None and not steps.delete:
                    await self.terminate_jobs(workflow, namespace)
            except VolcanoArgoApiError as exc:
                failure = exc
        deleted = steps.delete and await self.delete_object(WORKFLOWS, name, namespace, propagation="Foreground")
        if failure is not None:
            raise failure
        return deleted
