"""The docker-compose quickstart: its structure, the image it builds, the connection it sets, and the README's
service names. No Docker engine is needed; `config` runs only where a Compose CLI is installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yaml"
AIRFLOW_SERVICES = (
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
)
DAGS_MOUNT = "./dags:/opt/airflow/dags"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def _kubeconfig_mount(service: dict) -> tuple[str, str, str]:
    mounts = [v for v in service["volumes"] if "KUBECONFIG_FILE" in v]
    assert len(mounts) == 1, service["volumes"]
    source, target, mode = mounts[0].rsplit(":", 2)
    return source, target, mode


def _dockerfile(compose: dict) -> str:
    return compose["x-airflow-common"]["build"]["dockerfile_inline"]


def test_services_and_executor(compose):
    assert set(compose["services"]) == {"postgres", *AIRFLOW_SERVICES}
    env = compose["x-airflow-common"]["environment"]
    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "false"
    assert "@postgres/" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].startswith("http://airflow-apiserver:8080/")


def test_airflow_services_share_the_common_image_and_mounts(compose):
    common = compose["x-airflow-common"]
    assert common["build"]["context"] == "."
    for name in AIRFLOW_SERVICES:
        service = compose["services"][name]
        assert service["image"] == common["image"], name
        assert service["build"] == common["build"], name
        assert (
            service["environment"]["AIRFLOW_CONN_KUBERNETES_DEFAULT"]
            == common["environment"]["AIRFLOW_CONN_KUBERNETES_DEFAULT"]
        ), name
        assert DAGS_MOUNT in service["volumes"], name
        source, target, mode = _kubeconfig_mount(service)
        assert source == "${KUBECONFIG_FILE:-~/.kube/config}", name
        assert mode == "ro", name


def test_image_installs_the_provider_from_the_checkout(compose):
    dockerfile = _dockerfile(compose)
    pins = dict(line.split("==", 1) for line in (REPO / "constraints.txt").read_text().splitlines() if "==" in line)
    base = re.search(r"^FROM apache/airflow:(\S+)-python3\.\d+$", dockerfile, re.MULTILINE)
    assert base, dockerfile
    # pip keeps the image's Airflow only if the constraints pin the same one
    assert base.group(1) == pins["apache-airflow"]
    assert re.search(r"^RUN pip install .*-c constraints\.txt \.$", dockerfile, re.MULTILINE), dockerfile
    for copy in re.findall(r"^COPY (.*)$", dockerfile, re.MULTILINE):
        sources = [word for word in copy.split()[:-1] if not word.startswith("--")]
        for source in sources:
            assert (REPO / source).exists(), f"the image copies {source}, which the checkout lacks"


def test_kubernetes_connection_uses_the_mounted_kubeconfig(compose):
    conn = json.loads(compose["x-airflow-common"]["environment"]["AIRFLOW_CONN_KUBERNETES_DEFAULT"])
    assert conn["conn_type"] == "kubernetes"
    _, target, _ = _kubeconfig_mount(compose["x-airflow-common"])
    assert conn["extra"]["kube_config_path"] == target
    assert conn["extra"]["namespace"] == "argo"
    assert "in_cluster" not in conn["extra"]  # mutually exclusive with kube_config_path


def test_init_migrates_and_gates_the_other_services(compose):
    services = compose["services"]
    init = services["airflow-init"]
    script = " ".join(init["command"]) if isinstance(init["command"], list) else init["command"]
    assert "airflow db migrate" in script or init["environment"].get("_AIRFLOW_DB_MIGRATE") == "true"
    assert "healthcheck" in services["postgres"]
    assert init["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in AIRFLOW_SERVICES[1:]:
        depends_on = services[name]["depends_on"]
        assert depends_on["airflow-init"]["condition"] == "service_completed_successfully", name
        assert depends_on["postgres"]["condition"] == "service_healthy", name


def test_readme_names_only_existing_services(compose):
    readme = re.sub(r"^```.*?^```", "", (REPO / "README.md").read_text(), flags=re.MULTILINE | re.DOTALL)
    named = {span for span in re.findall(r"`([^`\n]+)`", readme) if re.fullmatch(r"airflow-[a-z-]+|postgres", span)}
    assert named <= set(compose["services"]), named - set(compose["services"])


def _compose_cli() -> tuple[list[str], bool] | None:
    """The Compose command and whether it is v1 (the Python docker-compose, e.g. Debian 12's 1.29)."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return ["docker", "compose"], False
    if shutil.which("docker-compose"):
        probe = subprocess.run(["docker-compose", "version", "--short"], capture_output=True, text=True)
        return ["docker-compose"], probe.stdout.strip().startswith("1.")
    return None


def test_compose_config_accepts_the_file(tmp_path):
    cli = _compose_cli()
    if cli is None:
        pytest.skip("no docker compose / docker-compose CLI here")
    command, v1 = cli
    compose_file = COMPOSE_FILE
    if v1:
        # Compose v1 predates build.dockerfile_inline (Compose v2.17): check everything else, with the inline
        # Dockerfile moved to a file.
        data = yaml.safe_load(COMPOSE_FILE.read_text())
        build = data["x-airflow-common"]["build"]
        (tmp_path / "Dockerfile").write_text(build["dockerfile_inline"])
        for service in data["services"].values():
            if "dockerfile_inline" in service.get("build", {}):
                service["build"] = {"context": ".", "dockerfile": str(tmp_path / "Dockerfile")}
        compose_file = tmp_path / "docker-compose.yaml"
        compose_file.write_text(yaml.safe_dump(data, sort_keys=False))
    result = subprocess.run(
        [*command, "-f", str(compose_file), "--project-directory", str(REPO), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
