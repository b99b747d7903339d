"""The hooks turn every client error into a typed error with an actionable message; 404 means absent only where
the caller asked for it (get, delete, stop).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from kubernetes.client.rest import ApiException
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException

from airflow_provider_volcano_argo.exceptions import (
    ApiConflictError,
    ApiForbiddenError,
    ApiGoneError,
    ApiInvalidError,
    ApiNotFoundError,
    ApiRefusedError,
    ApiUnauthorizedError,
    ApiUnavailableError,
    VolcanoArgoApiError,
)
from airflow_provider_volcano_argo.hooks import volcano_argo
from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook, VolcanoArgoHook, to_api_error
from airflow_provider_volcano_argo.models.policies import CleanupSteps
from airflow_provider_volcano_argo.models.resources import WORKFLOWS

STATUS_BODY = json.dumps({"kind": "Status", "message": 'workflows "wf" is forbidden: User "sa" cannot patch'})


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, ApiInvalidError),
        (401, ApiUnauthorizedError),
        (403, ApiForbiddenError),
        (404, ApiNotFoundError),
        (409, ApiConflictError),
        (410, ApiGoneError),
        (422, ApiInvalidError),
        (429, ApiUnavailableError),
        (500, ApiUnavailableError),
        (503, ApiUnavailableError),
        (418, VolcanoArgoApiError),
    ],
)
@pytest.mark.parametrize("client_error", [ApiException, AsyncApiException])
def test_every_status_becomes_its_typed_error(status, error_class, client_error):
    exc = client_error(status=status, reason="Reason")
    exc.body = STATUS_BODY
    error = to_api_error(exc, "patch", "workflows.argoproj.io", "argo")
    assert type(error) is error_class and error.status == status


def test_a_refusal_names_the_missing_rbac_rule_and_the_server_message():
    exc = ApiException(status=403, reason="Forbidden")
    exc.body = STATUS_BODY
    error = to_api_error(exc, "patch", "workflows.argoproj.io", "argo")
    assert isinstance(error, ApiRefusedError)
    assert "may not patch workflows.argoproj.io in namespace 'argo'" in str(error)
    assert "a rule with verb 'patch' on 'workflows.argoproj.io'" in str(error)
    assert 'User "sa" cannot patch' in str(error)


def _job(name: str, phase: str, owner_uid: str) -> dict:
    return {
        "metadata": {"name": name, "uid": f"{name}-uid", "ownerReferences": [{"uid": owner_uid}]},
        "status": {"state": {"phase": phase}},
    }


#: What the fake API holds: the Workflow "wf" and three Volcano Jobs, one of them its running gang.
LISTED_JOBS = [_job("gang", "Running", "wf-uid"), _job("done", "Completed", "wf-uid"), _job("other", "Running", "x")]


class _FakeCustomObjects:
    """Answers the calls ``failing`` names (every call if None) with the ApiException of ``status`` (None: success)."""

    def __init__(self, status: int | None, failing: set[str] | None = None):
        self.status, self.failing = status, failing
        self.calls: list[str] = []
        self.created: list[dict] = []

    def __getattr__(self, method: str):
        def call(*args, **kwargs):
            self.calls.append(method)
            if self.status is not None and (self.failing is None or method in self.failing):
                raise ApiException(status=self.status, reason="x")
            if method.startswith("patch"):
                return {"metadata": {"name": "wf", "uid": "wf-uid"}}
            if method.startswith("list"):
                return {"items": LISTED_JOBS}
            if method.startswith("create"):
                self.created.append(args[-1])
            return {"kind": "Status"}

        return call


@pytest.fixture
def sync_hook(monkeypatch):
    def make(status: int | None, failing: set[str] | None = None) -> tuple[VolcanoArgoHook, _FakeCustomObjects]:
        fake = _FakeCustomObjects(status, failing)
        monkeypatch.setattr(VolcanoArgoHook, "custom_object_client", property(lambda self: fake))
        return VolcanoArgoHook(conn_id="kubernetes_default"), fake

    return make


def test_404_is_absent_for_get_delete_and_stop_and_an_error_elsewhere(sync_hook):
    hook, fake = sync_hook(404)
    assert hook.get_object(WORKFLOWS, "wf", "ns") is None
    assert hook.delete_object(WORKFLOWS, "wf", "ns") is False
    assert hook.stop_workflow("wf", "ns") is None
    assert hook.clean_up_workflow("wf", "ns", CleanupSteps(stop=True, delete=True)) is False
    with pytest.raises(ApiNotFoundError):
        hook.patch_object(WORKFLOWS, "wf", {}, "ns")
    with pytest.raises(ApiNotFoundError):
        hook.list_objects(WORKFLOWS, "ns")


def test_other_errors_are_raised_typed_even_where_404_is_absent(sync_hook):
    hook, _ = sync_hook(403)
    with pytest.raises(ApiForbiddenError):
        hook.get_object(WORKFLOWS, "wf", "ns")
    with pytest.raises(ApiForbiddenError):
        hook.delete_object(WORKFLOWS, "wf", "ns")
    hook, _ = sync_hook(409)
    with pytest.raises(ApiConflictError):
        hook.create_object(WORKFLOWS, {"metadata": {"name": "wf"}}, "ns")


def test_clean_up_does_only_the_steps_asked(sync_hook):
    hook, fake = sync_hook(None)
    assert hook.clean_up_workflow("wf", "ns", CleanupSteps(stop=False, delete=False)) is False
    assert fake.calls == []
    # a stop that keeps the Workflow terminates the gang it created, which Argo's shutdown does not reach
    assert hook.clean_up_workflow("wf", "ns", CleanupSteps(stop=True, delete=False)) is False
    assert fake.calls == [
        "patch_namespaced_custom_object",
        "list_namespaced_custom_object",
        "create_namespaced_custom_object",
    ]
    [command] = fake.created
    assert (command["kind"], command["action"], command["target"]["name"]) == ("Command", "TerminateJob", "gang")
    # a deletion takes the gang with it (owner references)
    del fake.calls[:]
    assert hook.clean_up_workflow("wf", "ns", CleanupSteps(stop=True, delete=True)) is True
    assert fake.calls == ["patch_namespaced_custom_object", "delete_namespaced_custom_object"]


def test_a_stop_refused_still_deletes_then_names_the_refusal(sync_hook):
    hook, fake = sync_hook(403, failing={"patch_namespaced_custom_object"})
    with pytest.raises(ApiForbiddenError, match="may not patch workflows.argoproj.io"):
        hook.clean_up_workflow("wf", "ns", CleanupSteps(stop=True, delete=True))
    assert fake.calls == ["patch_namespaced_custom_object", "delete_namespaced_custom_object"]


class _Response:
    def __init__(self, status: int, body: bytes):
        self.status, self.body, self.released = status, body, False

    async def read(self) -> bytes:
        return self.body

    def release(self) -> None:
        self.released = True


def test_an_error_status_of_a_raw_call_is_read_released_and_typed():
    hook = AsyncVolcanoArgoHook(conn_id="kubernetes_default")
    response = _Response(403, STATUS_BODY.encode())

    async def call():
        return response

    with pytest.raises(ApiForbiddenError, match="may not get pods/log"):
        asyncio.run(hook._raw("get", "pods/log", "ns", call))
    assert response.released


def test_the_async_hook_maps_errors_and_absence_the_same_way(monkeypatch):
    class FakeApi:
        def __init__(self, conn):
            pass

        def __getattr__(self, method):
            async def call(*args, **kwargs):
                raise AsyncApiException(status=404, reason="Not Found")

            return call

    class FakeConn:
        async def __aenter__(self):
            return object()

        async def __aexit__(self, *exc):
            return False

    monkeypatch.setattr(volcano_argo.async_client, "CustomObjectsApi", FakeApi)
    hook = AsyncVolcanoArgoHook(conn_id="kubernetes_default")
    monkeypatch.setattr(hook, "get_conn", FakeConn)

    async def scenario():
        assert await hook.get_object(WORKFLOWS, "wf", "ns") is None
        assert await hook.delete_object(WORKFLOWS, "wf", "ns") is False
        assert await hook.stop_workflow("wf", "ns") is None
        with pytest.raises(ApiNotFoundError):
            await hook.patch_object(WORKFLOWS, "wf", {}, "ns")

    asyncio.run(scenario())


class _Templates:
    """A WorkflowTemplate store: get answers 404 until one was created."""

    def __init__(self, current: dict | None):
        self.current, self.calls = current, []

    def get_namespaced_custom_object(self, *args):
        if self.current is None:
            raise ApiException(status=404, reason="Not Found")
        return self.current

    def create_namespaced_custom_object(self, group, version, namespace, plural, body):
        self.calls.append(("create", body))

    def replace_namespaced_custom_object(self, group, version, namespace, plural, name, body):
        self.calls.append(("replace", body))


@pytest.mark.parametrize(
    ("current", "said", "call"),
    [
        (None, "created WorkflowTemplate ns/t", "create"),
        ({"metadata": {"resourceVersion": "7"}, "spec": {"old": 1}}, "updated WorkflowTemplate ns/t", "replace"),
        ({"metadata": {"resourceVersion": "7"}, "spec": {"new": 1}}, "WorkflowTemplate ns/t is up to date", None),
    ],
)
def test_apply_workflow_template_creates_updates_or_leaves_it(monkeypatch, current, said, call):
    store = _Templates(current)
    monkeypatch.setattr(VolcanoArgoHook, "custom_object_client", property(lambda self: store))
    body = {"metadata": {"name": "t", "namespace": "ns"}, "spec": {"new": 1}}
    assert VolcanoArgoHook(conn_id="kubernetes_default").apply_workflow_template(body) == said
    assert [c for c, _ in store.calls] == ([call] if call else [])
    if call == "replace":
        assert store.calls[0][1]["metadata"]["resourceVersion"] == "7"  # an update of the version it read
        assert "resourceVersion" not in body["metadata"]


@pytest.fixture
def unreachable_kubeconfig(tmp_path):
    """A kubeconfig naming an API server on a loopback port nobody listens on."""
    import socket

    import yaml

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends: connections are refused
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_an_unreachable_api_server_is_a_typed_error_naming_the_action_sync(unreachable_kubeconfig, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps({"conn_type": "kubernetes", "extra": {}}))
    hook = VolcanoArgoHook(config_file=unreachable_kubeconfig)
    hook.custom_object_client.api_client.configuration.retries = 0  # urllib3 would retry 3 times first
    with pytest.raises(ApiUnavailableError, match="Could not get workflows.argoproj.io in namespace 'argo': the "
                       "Kubernetes API server could not be reached"):  # fmt: skip
        hook.get_object(WORKFLOWS, "wf", "argo")


def test_an_unreachable_api_server_is_a_typed_error_naming_the_action_async(unreachable_kubeconfig, monkeypatch):
    """A trigger crashed on this (a raw aiohttp ClientConnectorError while saving its cursors, tests/deployment)."""
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps({"conn_type": "kubernetes", "extra": {}}))
    hook = AsyncVolcanoArgoHook(config_file=unreachable_kubeconfig)
    for call in (
        lambda: hook.patch_object(WORKFLOWS, "wf", {"metadata": {}}, "argo"),
        lambda: hook.list_objects(WORKFLOWS, "argo"),
    ):
        with pytest.raises(ApiUnavailableError, match="the Kubernetes API server could not be reached"):
            asyncio.run(call())
