"""Shared test configuration: where the upstream reference files are."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_volcano_argo.sandbox.pytest_plugin import upstream_dir as _upstream_dir


@pytest.fixture(scope="session")
def upstream_dir(request: pytest.FixtureRequest) -> Path:
    """``shared/upstream`` (verbatim upstream files); tests read them from there, never from the repository."""
    found = _upstream_dir(request.config)
    if found is None:
        pytest.fail("upstream reference files not found: pass --sandbox-upstream-dir or set VOLCANO_ARGO_UPSTREAM_DIR")
    return found
