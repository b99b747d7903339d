"""The provider's errors: Kubernetes API errors typed by status family, with messages a DAG author can act on.

Callers tell failures apart by class (``except ApiNotFoundError``), never by comparing status codes; the hooks
turn every client exception into one of these (``api_error``).
"""

from __future__ import annotations

import json
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException


class VolcanoArgoError(AirflowException):
    """Base class of the provider's errors."""


class TemplateNotFoundError(VolcanoArgoError):
    """The WorkflowTemplate to submit from does not exist."""


class TemplateOutdatedError(VolcanoArgoError):
    """The installed WorkflowTemplate lacks parameters the operator sends (installed by an older provider)."""


class VolcanoArgoApiError(VolcanoArgoError):
    """A Kubernetes API call failed; the message says what was attempted, why it failed and what to do."""

    def __init__(self, message: str, status: int | None = None, reason: str | None = None):
        super().__init__(message)
        self.status = status
        self.reason = reason


class ApiRefusedError(VolcanoArgoApiError):
    """401 or 403: the connection's identity was not accepted or may not do this."""


class ApiUnauthorizedError(ApiRefusedError):
    """401: the credentials were refused."""


class ApiForbiddenError(ApiRefusedError):
    """403: RBAC does not allow the call."""


class ApiNotFoundError(VolcanoArgoApiError):
    """404: the object (or its resource type) does not exist."""


class ApiConflictError(VolcanoArgoApiError):
    """409: the object exists already, or changed meanwhile."""


class ApiGoneError(VolcanoArgoApiError):
    """410: the resourceVersion a watch resumes from is too old (relist)."""


class ApiInvalidError(VolcanoArgoApiError):
    """400 or 422: the request was refused as malformed or invalid (also: a log of a container not started)."""


class ApiUnavailableError(VolcanoArgoApiError):
    """429 or 5xx: the API server is busy, restarting or failing; worth a retry."""


_BY_STATUS: dict[int, type[VolcanoArgoApiError]] = {
    400: ApiInvalidError,
    401: ApiUnauthorizedError,
    403: ApiForbiddenError,
    404: ApiNotFoundError,
    409: ApiConflictError,
    410: ApiGoneError,
    422: ApiInvalidError,
    429: ApiUnavailableError,
}


def api_error_class(status: int | None) -> type[VolcanoArgoApiError]:
    """Return the error class of an HTTP status (5xx: ``ApiUnavailableError``; unknown: the base class)."""
    if status is not None and status >= 500:
        return ApiUnavailableError
    return _BY_STATUS.get(status or 0, VolcanoArgoApiError)


def api_error(status: int | None, body: Any, verb: str, resource: str, namespace: str | None) -> VolcanoArgoApiError:
    """Build the typed error of a failed call, its message naming the action and the fix."""
    return api_error_class(status)(explain_api_error(status, body, verb, resource, namespace), status=status)


def unreachable_error(exc: BaseException, verb: str, resource: str, namespace: str | None) -> ApiUnavailableError:
    """Build the error of a call that reached no API server (refused, reset, timed out): worth a retry."""
    where = f" in namespace {namespace!r}" if namespace else ""
    return ApiUnavailableError(
        f"Could not {verb} {resource}{where}: the Kubernetes API server could not be reached "
        f"({type(exc).__name__}: {exc}). Check that it is up and that the connection points at it."
    )


def api_error_message(body: Any) -> str:
    """Return the ``message`` of a Kubernetes ``Status`` body, or the body itself (truncated) when it is not one."""
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
    """Say which action failed and how to fix it, e.g. for 403 the missing RBAC rule."""
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
