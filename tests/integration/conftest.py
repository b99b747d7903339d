"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo import templates
from tests.integration.reliability import (
    ROWS,
    Row,
    failed,
    format_table,
    full_run,
    scenario_of,
    table_rows,
    write_report,
)

#: Node ids of the reliability tests collected, their outcomes, and the table built at the end.
COLLECTED = pytest.StashKey[list]()
OUTCOMES = pytest.StashKey[dict]()
TABLE = pytest.StashKey[list]()


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
    records this test's row of the reliability table; the result comes from the test's outcome.
    """
    rows = request.config.stash.setdefault(ROWS, [])

    def record(scenario: str, **figures) -> Row:
        row = Row(scenario, request.node.nodeid, **figures)
        rows.append(row)
        return row

    return record


def pytest_collection_finish(session: pytest.Session) -> None:
    session.config.stash[COLLECTED] = [
        item.nodeid
        for item in session.items
        if item.get_closest_marker("reliability") or scenario_of(item.nodeid) is not None
    ]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    outcomes = item.config.stash.setdefault(OUTCOMES, {})
    if report.failed:
        outcomes[item.nodeid] = "failed" if report.when == "call" else "error"
    elif report.skipped:
        outcomes[item.nodeid] = "skipped"
    elif report.when == "call":
        outcomes[item.nodeid] = "pass"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Build the table from the registry; a failed row (skipped, no record, not run when due) fails the run."""
    config = session.config
    collected = config.stash.get(COLLECTED, [])
    if not collected:
        return
    rows = table_rows(config.stash.get(ROWS, []), collected, config.stash.get(OUTCOMES, {}))
    config.stash[TABLE] = rows
    write_report(rows)
    if failed(rows, full_run(collected, config.option.keyword)) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    rows = config.stash.get(TABLE, [])
    if rows:
        terminalreporter.write_sep("-", "reliability scenarios")
        terminalreporter.write_line(format_table(rows))
        bad = failed(rows, full_run(config.stash.get(COLLECTED, []), config.option.keyword))
        if bad:
            terminalreporter.write_line(f"{len(bad)} reliability rows failed: {', '.join(r.scenario for r in bad)}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The secret scan (R13) runs last, over what every other test of the session wrote."""
    items.sort(key=lambda item: item.name.startswith("test_r13"))
