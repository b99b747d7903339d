"""Shared test configuration: an isolated Airflow home, the provider's Airflow Role for the sandbox identity,
and where the upstream reference files are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Airflow reads its configuration at import time: isolate it before anything imports airflow.
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="volcano-argo-airflow-home-"))
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
