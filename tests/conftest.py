"""Shared test configuration: an isolated Airflow home, the provider's Airflow Role for the sandbox identity,
and where the upstream reference files are.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Airflow reads its configuration at import time: isolate it before anything imports airflow.
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="volcano-argo-airflow-home-"))
atexit.register(shutil.rmtree, _AIRFLOW_HOME, True)  # each pytest run left one behind in /tmp
os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "False")
os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(REPO / "dags"))
# dag.test() runs only DAGs it finds in a bundle: the examples and the tests' own DAGs
os.environ.setdefault(
    "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST",
    json.dumps(
        [
            {
                "name": name,
                "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
                "kwargs": {"path": str(path)},
            }
            for name, path in (("example-dags", REPO / "dags"), ("test-dags", REPO / "tests" / "dags"))
        ]
    ),
)
# The sandbox's Airflow identity gets exactly the provider's least-privilege Role.
os.environ.setdefault(
    "VOLCANO_ARGO_SANDBOX_AIRFLOW_ROLE", str(REPO / "airflow_provider_volcano_argo" / "templates" / "airflow-role.yaml")
)

from airflow_provider_volcano_argo.sandbox.pytest_plugin import upstream_dir as _upstream_dir  # noqa: E402
from tests.integration.reliability import (  # noqa: E402
    ROWS,
    Row,
    failed,
    format_table,
    full_run,
    scenario_of,
    table_rows,
    write_report,
)

if (REPO.parent / "shared" / "upstream").is_dir():  # for test DAG files that read the upstream examples
    os.environ.setdefault("VOLCANO_ARGO_UPSTREAM_DIR", str(REPO.parent / "shared" / "upstream"))


@pytest.fixture(scope="session")
def upstream_dir(request: pytest.FixtureRequest) -> Path:
    """``shared/upstream`` (verbatim upstream files); tests read them from there, never from the repository."""
    found = _upstream_dir(request.config)
    if found is None:
        pytest.fail("upstream reference files not found: pass --sandbox-upstream-dir or set VOLCANO_ARGO_UPSTREAM_DIR")
    return found


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """A migrated Airflow metadata database (SQLite) in the isolated Airflow home."""
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)
    return _AIRFLOW_HOME


#: Everything pytest captured for each test of the session, unit, sandbox and integration tests alike (logs,
#: output, failure reports), plus what tests hand over themselves (``keep_for_secret_scan``): R13 searches it.
CAPTURED_TEXTS = pytest.StashKey[list]()
_session_config: pytest.Config | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _session_config
    _session_config = config


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    texts = [content for _, content in report.sections]
    if report.longrepr is not None:
        texts.append(report.longreprtext)
    if texts:
        keep_for_secret_scan(*texts)


def keep_for_secret_scan(*texts: str) -> None:
    """Add output a test read itself (a trigger's task log, a subprocess's output) to what R13 searches."""
    if _session_config is not None:
        _session_config.stash.setdefault(CAPTURED_TEXTS, []).extend(texts)


# -- the reliability table (tests/integration/reliability.py): rows from tests/integration and tests/deployment --

#: Node ids of the reliability tests collected, their outcomes, and the table built at the end.
COLLECTED = pytest.StashKey[list]()
OUTCOMES = pytest.StashKey[dict]()
TABLE = pytest.StashKey[list]()


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
