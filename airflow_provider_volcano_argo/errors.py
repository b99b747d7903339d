"""Turn Kubernetes API errors into messages a DAG author can act on."""

from __future__ import annotations

import json
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException


class VolcanoArgoError(AirflowException):
    """Base class of the provider's errors."""


class KubernetesApiError(VolcanoArgoError):
    """An API call failed; the message says what was attempted, why it failed and what to do."""

    def __init__(self, message: str, status: int | None = None, reason: str | None = None):
        super().__init__(message)
        self.status = status
        self.reason = reason


class TemplateNotFoundError(VolcanoArgoError):
    """The WorkflowTemplate to submit from does not exist."""


def api_error_message(body: Any) -> str:
    """The ``message`` of a Kubernetes ``Status`` body, or the body itself (truncated) when it is not one."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return body.strip()[:500]
    if isinstance(body, dict):
        return str(body.get("message") or body.get("reason") or body)[:500]
    return ""


def explain_api_error(status: int | None, body: Any, verb: str, resource: str, namespace: str | None) -> str:
    """A sentence naming the failed action and the fix, e.g. for 403 the missing RBAC rule."""
    where = f" in namespace {namespace!r}" if namespace else ""
    server = api_error_message(body)
    if status == 403:
        return (
            f"Forbidden: the Airflow connection's identity may not {verb} {resource}{where} ({server}). "
            f"Grant it with the provider's Role (templates/airflow-role.yaml): a rule with verb {verb!r} on "
            f"{resource!r}."
        )
    if status == 401:
        return f"Unauthorized to {verb} {resource}{where}: the connection's credentials were refused ({server})."
    if status == 404:
        return f"Not found: {resource}{where} ({server})."
    if status == 409:
        return f"Conflict: {resource}{where} already exists or was changed concurrently ({server})."
    if status == 422:
        return f"Invalid {resource}{where}: the API server refused it ({server})."
    return f"Could not {verb} {resource}{where}: HTTP {status} ({server})."
