"""A patch (``argo stop``'s ``spec.shutdown``, cursor annotations) goes out as a JSON merge patch through the
installed kubernetes clients' own generated methods; only the HTTP round trip is faked.

kubernetes 35 (the only one cncf-kubernetes 10.17 allows) takes no ``_content_type`` there: every stop failed with
``ApiTypeError: Got an unexpected keyword argument '_content_type'``, hence kubernetes >= 36.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib

from kubernetes import client as sync_client
from kubernetes_asyncio import client as async_client

from airflow_provider_volcano_argo.hooks.volcano_argo import MERGE_PATCH, AsyncVolcanoArgoHook, VolcanoArgoHook
from airflow_provider_volcano_argo.models.resources import WORKFLOWS

WORKFLOW = {"metadata": {"name": "wf", "uid": "wf-uid"}}


def _content_types(sent: list) -> list[tuple[str, str]]:
    return [(method, headers["Content-Type"]) for method, _, headers, _ in sent]


class _SyncRecorder(sync_client.ApiClient):
    """Records each request instead of sending it."""

    sent: list[tuple[str, str, dict, object]]

    def call_api(self, resource_path, method, path_params=None, query_params=None, header_params=None, body=None,
                 **kwargs):  # fmt: skip
        self.sent.append((method, resource_path, dict(header_params or {}), body))
        return WORKFLOW


class _AsyncRecorder(async_client.ApiClient):
    """Records each request instead of sending it."""

    sent: list[tuple[str, str, dict, object]]

    def call_api(self, resource_path, method, path_params=None, query_params=None, header_params=None, body=None,
                 **kwargs):  # fmt: skip
        self.sent.append((method, resource_path, dict(header_params or {}), body))

        async def answer() -> dict:
            return WORKFLOW

        return answer()


def test_the_worker_hook_stops_a_workflow_with_a_merge_patch(monkeypatch):
    recorder = _SyncRecorder()
    recorder.sent = []
    monkeypatch.setattr(
        VolcanoArgoHook, "custom_object_client", property(lambda self: sync_client.CustomObjectsApi(recorder))
    )
    hook = VolcanoArgoHook(conn_id="kubernetes_default")
    assert hook.stop_workflow("wf", "ns") == WORKFLOW
    assert hook.patch_object(WORKFLOWS, "wf", {"metadata": {"annotations": {"a": "b"}}}, "ns") == WORKFLOW
    assert _content_types(recorder.sent) == [("PATCH", MERGE_PATCH)] * 2
    assert recorder.sent[0][3] == {"spec": {"shutdown": "Terminate"}}


def test_the_trigger_hook_stops_a_workflow_with_a_merge_patch(monkeypatch):
    sent: list = []

    @contextlib.asynccontextmanager
    async def recording_conn():
        recorder = _AsyncRecorder()
        recorder.sent = sent
        try:
            yield recorder
        finally:
            await recorder.close()

    hook = AsyncVolcanoArgoHook(conn_id="kubernetes_default")
    monkeypatch.setattr(hook, "get_conn", recording_conn)

    async def scenario() -> None:
        assert await hook.stop_workflow("wf", "ns") == WORKFLOW
        assert await hook.patch_object(WORKFLOWS, "wf", {"metadata": {"annotations": {"a": "b"}}}, "ns") == WORKFLOW

    asyncio.run(scenario())
    assert _content_types(sent) == [("PATCH", MERGE_PATCH)] * 2
    assert sent[0][3] == {"spec": {"shutdown": "Terminate"}}
