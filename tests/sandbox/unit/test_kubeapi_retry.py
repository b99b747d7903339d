"""The sandbox's client retries what the API server asks it to retry (Retry-After), as client-go does."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from urllib3 import HTTPHeaderDict

from airflow_provider_volcano_argo.sandbox.emulation import kubeapi
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, KubeApi, retry_after_seconds


def _error(status: int, retry_after: str | None) -> ApiException:
    headers = HTTPHeaderDict({"Retry-After": retry_after} if retry_after is not None else {})
    return ApiException(http_resp=SimpleNamespace(status=status, reason="x", data=b"{}", getheaders=lambda: headers))


@pytest.mark.parametrize(
    ("status", "retry_after", "expected"),
    [(500, "1", 1.0), (429, "2", 2.0), (503, "0", 0.0), (500, None, None), (409, "1", None), (403, "1", None)],
)
def test_only_429_and_5xx_with_retry_after_are_retried(status, retry_after, expected):
    assert retry_after_seconds(_error(status, retry_after)) == expected


class _Flaky:
    """An ApiClient whose first ``failures`` calls fail with ``error``."""

    def __init__(self, failures: int, error: ApiException):
        self.failures, self.error, self.calls = failures, error, 0

    def call_api(self, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return SimpleNamespace(data=b'{"kind": "Pod"}')


def test_a_server_timeout_with_retry_after_is_retried_until_it_succeeds(monkeypatch):
    monkeypatch.setattr(kubeapi.time, "sleep", lambda seconds: None)
    flaky = _Flaky(3, _error(500, "1"))
    assert KubeApi(flaky).request("POST", "/api/v1/namespaces/n/pods", body={}) == {"kind": "Pod"}
    assert flaky.calls == 4


def test_retries_stop_after_client_gos_ten_and_other_errors_are_not_retried(monkeypatch):
    monkeypatch.setattr(kubeapi.time, "sleep", lambda seconds: None)
    always = _Flaky(100, _error(500, "1"))
    with pytest.raises(ApiException):
        KubeApi(always).request("GET", "/api/v1/pods")
    assert always.calls == kubeapi.MAX_RETRY_AFTER_RETRIES + 1
    conflict = _Flaky(100, _error(409, None))
    with pytest.raises(ApiException):
        KubeApi(conflict).request("POST", "/api/v1/namespaces/n/pods", body={})
    assert conflict.calls == 1
