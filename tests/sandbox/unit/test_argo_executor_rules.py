"""The resource step's pure rules: which errors Argo treats as transient, and a failed pod's node message."""

from __future__ import annotations

import json

import pytest
import urllib3

from airflow_provider_volcano_argo.sandbox.argo.executor import transient
from airflow_provider_volcano_argo.sandbox.argo.resource_step import _failed_reason, _quota_refusal
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException


def _refusal(status: int, message: str, reason: str = "") -> ApiException:
    exc = ApiException(status=status, reason="Refused")
    exc.body = json.dumps({"kind": "Status", "message": message, "reason": reason})
    return exc


#: kube-apiserver's ServiceAccount admission, while the account's token secret is not created yet
NO_TOKEN = 'No API token found for service account "argo", retry after the token is automatically created'


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (_refusal(429, "too many requests"), True),
        (_refusal(503, "unavailable"), True),
        (_refusal(504, "timeout"), True),
        (_refusal(500, NO_TOKEN, "ServerTimeout"), True),
        (_refusal(500, "internal error", "InternalError"), False),
        (urllib3.exceptions.MaxRetryError(None, "/", "connection refused"), True),
        (ConnectionResetError(), True),
        (_refusal(403, "forbidden"), False),
        (_refusal(404, "not found"), False),
        (_refusal(409, "already exists"), False),
        (_refusal(422, "invalid"), False),
    ],
)
def test_transient_errors_are_util_errors_is_transient_err(error, expected):
    assert transient(error) is expected


def test_only_an_exceeded_quota_refusal_of_the_pod_is_transient():
    exceeded = _refusal(403, 'pods "x" is forbidden: exceeded quota: no-pods, requested: pods=1, used: pods=0')
    missing_sa = _refusal(403, 'pods "x" is forbidden: error looking up service account ns/argo: not found')
    assert _quota_refusal(exceeded) and not _quota_refusal(missing_sa)


def _pod(status: dict) -> dict:
    return {"metadata": {"name": "p", "namespace": "ns"}, "status": status}


def test_failed_pod_messages_follow_infer_failed_reason():
    evicted = _pod({"phase": "Failed", "message": "The node was low on resource: memory."})
    assert _failed_reason(evicted) == ("Failed", "The node was low on resource: memory.")
    ended = {"exitCode": 64, "reason": "Error", "message": "no more retries already exists"}
    step_error = _pod({"phase": "Failed", "containerStatuses": [{"name": "main", "state": {"terminated": ended}}]})
    assert _failed_reason(step_error) == ("Failed", "main: Error (exit code 64): no more retries already exists")
    oom = {"exitCode": 137, "reason": "OOMKilled"}
    killed = _pod({"phase": "Failed", "containerStatuses": [{"name": "main", "state": {"terminated": oom}}]})
    assert _failed_reason(killed) == ("Failed", "main: OOMKilled (exit code 137)")
    waiting = {"waiting": {"reason": "ImagePullBackOff", "message": "pull failed"}}
    never = _pod({"phase": "Failed", "containerStatuses": [{"name": "main", "state": waiting}]})
    assert _failed_reason(never) == (
        "Error",
        "Pod failed before main container starts due to ImagePullBackOff: pull failed",
    )
    assert _failed_reason(_pod({"phase": "Failed"}))[1] == "can't find failed message for pod p namespace ns"
