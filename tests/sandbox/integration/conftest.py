"""The sandbox's integration tests share a session with the provider's (``tests/integration``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.integration import conftest as provider_integration

if TYPE_CHECKING:
    import pytest


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Hand what pytest captured here to the provider's secret scan (R13), which searches the whole session."""
    provider_integration.pytest_runtest_logreport(report)
