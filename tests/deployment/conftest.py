"""Fixtures of the deployment tests: one real Airflow (separate processes on PostgreSQL) for the whole session,
pointed at the session's sandbox cluster as the provider's least-privilege identity.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import keep_for_secret_scan
from tests.deployment.deployment import AirflowDeployment
from tests.deployment.postgres import postgres_server
from tests.integration.helpers import install_mpi_templates

DAGS = Path(__file__).resolve().parent / "dags"
REPORTS = pytest.StashKey[dict]()


@pytest.fixture(scope="session")
def airflow_deployment(sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowDeployment]:
    """API server, scheduler (LocalExecutor), DAG processor and two triggerers, started once per session."""
    connections = {
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": sandbox.airflow_connection(),
        # names no cluster: a task that reaches one through it used the operator's config_file
        "AIRFLOW_CONN_KUBERNETES_NO_CLUSTER": json.dumps({"conn_type": "kubernetes", "extra": {}}),
    }
    with postgres_server() as database:
        home = tmp_path_factory.mktemp("airflow-deployment")
        deployment = AirflowDeployment(home, database, DAGS, connections, on_read=keep_for_secret_scan)
        try:
            deployment.start()
            yield deployment
        finally:
            deployment.stop()


@pytest.fixture
def airflow(airflow_deployment: AirflowDeployment, request: pytest.FixtureRequest) -> Iterator[AirflowDeployment]:
    """The deployment with both triggerers running (a test may stop or kill them); on failure, the processes' logs."""
    yield airflow_deployment
    for name in ("triggerer-1", "triggerer-2"):
        if name in airflow_deployment.processes:
            airflow_deployment.signal(name, signal.SIGCONT)
        else:
            airflow_deployment.start_triggerer(name)
    report = request.config.stash.get(REPORTS, {}).get(request.node.nodeid)
    if report is not None and report.failed:
        print(airflow_deployment.process_logs())


@pytest.fixture
def namespace(sandbox, sandbox_namespace: str) -> str:
    """A namespace of the test's own with the shipped WorkflowTemplates and Argo RBAC."""
    return install_mpi_templates(sandbox, sandbox_namespace)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.config.stash.setdefault(REPORTS, {})[item.nodeid] = report
