"""What both hooks share about one API call: its query, and how a failed call becomes a typed error."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import aiohttp
import urllib3

from airflow_provider_volcano_argo.exceptions import ApiNotFoundError, VolcanoArgoApiError, api_error

if TYPE_CHECKING:
    from kubernetes_asyncio import client as async_client

MERGE_PATCH = "application/merge-patch+json"
RAISE: Any = object()  # no ``absent`` value: a 404 raises like any other error


def log_query(
    container: str, since_time: str | None, follow: bool, tail_lines: int | None, previous: bool = False
) -> list[tuple[str, Any]]:
    """Build the query of ``pods/log``; ``sinceTime`` is sent directly (the Python client has only ``sinceSeconds``)."""
    query: list[tuple[str, Any]] = [("container", container), ("timestamps", "true")]
    if follow:
        query.append(("follow", "true"))
    if previous:
        query.append(("previous", "true"))
    if since_time:
        query.append(("sinceTime", since_time))
    if tail_lines is not None:
        query.append(("tailLines", str(tail_lines)))
    return query


#: What the clients raise when no API server answered (refused, reset, timed out, TLS): not an HTTP status, so
#: never an ``ApiException``; mapped to ``ApiUnavailableError`` so that callers and the reconnect policy see one
#: kind of error (a trigger crashed on a connection refused while saving its cursors: tests/deployment R20).
SYNC_TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, OSError)
ASYNC_TRANSPORT_ERRORS = (aiohttp.ClientError, OSError, asyncio.TimeoutError)


def to_api_error(exc: Exception, verb: str, resource: str, namespace: str | None) -> VolcanoArgoApiError:
    """Turn a client's ``ApiException`` (sync or async) into the provider's typed error."""
    status = getattr(exc, "status", None)
    body = getattr(exc, "body", None) or getattr(exc, "reason", None)
    return api_error(status, body, verb, resource, namespace)


def absent_or_raise(exc: Exception, verb: str, resource: str, namespace: str | None, absent: Any) -> Any:
    """Return ``absent`` for a 404 (unless it is ``RAISE``); raise the typed error of anything else."""
    error = to_api_error(exc, verb, resource, namespace)
    if absent is not RAISE and isinstance(error, ApiNotFoundError):
        return absent
    raise error from exc


def raw_get(conn: async_client.ApiClient, path: str, query: list, timeout: Any):
    """Start a raw GET whose response the caller reads (and releases) itself."""
    return conn.call_api(
        path,
        "GET",
        query_params=query,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        _request_timeout=timeout,
    )
