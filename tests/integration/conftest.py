"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo import templates

from .reliability import ROWS, Row, format_table, write_report


@pytest.fixture
def mpi_namespace(sandbox, sandbox_namespace, airflow_db, monkeypatch):
    """A namespace with the shipped template and Argo RBAC, and Airflow's connection as the least-privilege SA."""
    ns = sandbox_namespace
    for name in templates.TEMPLATE_FILES:
        body = templates.workflow_template(name)
        body["metadata"]["namespace"] = ns
        sandbox.apply(body)
    for doc in templates.argo_rbac(ns):
        sandbox.apply(doc)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())
    return ns


@pytest.fixture
def reliability(request: pytest.FixtureRequest):
    """``reliability(scenario, expected=..., delivered=..., repeated=..., objects_left=..., cleanup_seconds=...)``
    records this test's row of the reliability table; the result comes from the test's outcome."""
    rows = request.config.stash.setdefault(ROWS, [])

    def record(scenario: str, **figures) -> Row:
        row = Row(scenario, request.node.nodeid, **figures)
        rows.append(row)
        return row

    return record


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        for row in item.config.stash.get(ROWS, []):
            if row.nodeid == item.nodeid:
                row.result = "pass" if report.outcome == "passed" else report.outcome


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    rows = config.stash.get(ROWS, [])
    if rows:
        terminalreporter.write_sep("-", "reliability scenarios")
        terminalreporter.write_line(format_table(rows))
        write_report(rows)


#: Everything pytest captured for each test (logs, output, failure reports): R13 searches it for secrets.
CAPTURED_TEXTS = pytest.StashKey[list]()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    texts = report_texts = [content for _, content in report.sections]
    if report.longrepr is not None:
        report_texts.append(report.longreprtext)
    if texts and _session_config is not None:
        _session_config.stash.setdefault(CAPTURED_TEXTS, []).extend(texts)


_session_config: pytest.Config | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _session_config
    _session_config = config


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The secret scan (R13) runs last, over what every other test of the session wrote."""
    items.sort(key=lambda item: item.name.startswith("test_r13"))
