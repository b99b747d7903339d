"""A real Airflow deployment for the tests: API server, scheduler (LocalExecutor), DAG processor and triggerers,
each a process of its own, on PostgreSQL, driven only through Airflow's REST API (as a user or a CI job would).

Health thresholds are short (heartbeats every second, a triggerer unhealthy after 5 s) so that hand-over scenarios
take seconds; everything else is Airflow's default.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.deployment.postgres import free_port

#: Seconds without a heartbeat after which a triggerer's triggers go to another one ([triggerer]
#: triggerer_health_check_threshold, read by ``Trigger.assign_unassigned``).
TRIGGERER_HEALTH_SECONDS = 5
ADMIN = "admin"


class AirflowDeployment:
    """Start, drive and stop the Airflow processes of one test session."""

    def __init__(
        self,
        home: Path,
        database_url: str,
        dags_folder: Path,
        extra_env: dict[str, str],
        on_read: Callable[..., None] | None = None,
    ):
        """Prepare (not start) a deployment; ``on_read`` receives each task log text read through the API (the
        tests hand it to their secret scan; a benchmark passes nothing).
        """
        self.home = home
        self.on_read = on_read or (lambda *texts: None)
        self.logs = home / "process-logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.password = secrets.token_urlsafe(12)
        (home / "passwords.json").write_text(json.dumps({ADMIN: self.password}))
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "KUBECONFIG"))},
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database_url,
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "8",
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            # The task supervisor's select() timeout. Once the task process has closed its sockets but is not yet
            # reaped, the supervisor sleeps this long before it notices the exit (up to 5 s by default), and the
            # executor's success event of a defer-exit arriving that late fails a task the trigger has already
            # resumed (apache/airflow#72716). 1 s (the minimum) narrows that window; it is not closed.
            "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
            "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": str(TRIGGERER_HEALTH_SECONDS),
            **extra_env,
        }
        self.processes: dict[str, subprocess.Popen] = {}
        self._token: str | None = None
        self._client = httpx.Client(base_url=self.url, timeout=30)

    # -- processes ---------------------------------------------------------------------------------------------

    def airflow(self, *args: str) -> subprocess.CompletedProcess:
        """Run an ``airflow`` CLI command in this deployment's environment (it must succeed)."""
        return subprocess.run(
            [sys.executable, "-m", "airflow", *args], env=self.env, check=True, capture_output=True, text=True
        )

    def start_process(self, name: str, *args: str) -> subprocess.Popen:
        """Start ``airflow <args>`` as ``name``, in a session of its own (a signal reaches its children too)."""
        log = open(self.logs / f"{name}.log", "ab")
        process = subprocess.Popen(
            [sys.executable, "-m", "airflow", *args],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes[name] = process
        return process

    def start_triggerer(self, name: str) -> subprocess.Popen:
        """Start one more triggerer (no log server: several share this host, and the API server reads the files)."""
        return self.start_process(name, "triggerer", "--skip-serve-logs")

    def signal(self, name: str, signum: int) -> None:
        """Send ``signum`` to a process and everything it started (its trigger runner, its task runners)."""
        os.killpg(self.processes[name].pid, signum)

    def kill(self, name: str) -> None:
        """Kill ``name`` hard (SIGKILL to its whole process group) and forget it."""
        process = self.processes.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)

    def start(self, triggerers: int = 2) -> None:
        """Migrate the database, start every process (``triggerer-1`` .. ``triggerer-<triggerers>``) and wait until
        Airflow reports them healthy.
        """
        self.airflow("db", "migrate")
        self.start_process("api-server", "api-server", "--port", str(self.port))
        self.start_process("scheduler", "scheduler")
        self.start_process("dag-processor", "dag-processor")
        for number in range(1, triggerers + 1):
            self.start_triggerer(f"triggerer-{number}")
        self.wait(lambda: self.healthy(), 180, "every Airflow component healthy")

    def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL after 30 s)."""
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()
        self._client.close()

    def process_logs(self) -> str:
        """Return the tail of each process's own log (for a failure report: enough to see what led up to it)."""
        return "\n".join(
            f"== {path.name} ==\n{path.read_text(errors='replace')[-15000:]}" for path in sorted(self.logs.glob("*"))
        )

    # -- REST API ------------------------------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Call the REST API as the admin user (a token from ``POST /auth/token``)."""
        if self._token is None:
            answer = self._client.post("/auth/token", json={"username": ADMIN, "password": self.password})
            answer.raise_for_status()
            self._token = answer.json()["access_token"]
        headers = {**kwargs.pop("headers", {}), "Authorization": f"Bearer {self._token}"}
        return self._client.request(method, path, headers=headers, **kwargs)

    def api(self, method: str, path: str, **kwargs: Any) -> dict:
        """Call the REST API; return the JSON body of a 2xx answer, raise on any other."""
        answer = self.request(method, f"/api/v2{path}", **kwargs)
        if answer.status_code >= 300:
            raise AssertionError(f"{method} {path}: {answer.status_code} {answer.text[:2000]}")
        return answer.json() if answer.content else {}

    def healthy(self) -> bool:
        """Tell whether the API server answers and reports the scheduler, triggerer and DAG processor healthy."""
        try:
            health = self._client.get("/api/v2/monitor/health").json()
        except (httpx.HTTPError, ValueError):
            return False
        parts = ("metadatabase", "scheduler", "triggerer", "dag_processor")
        return all((health.get(part) or {}).get("status") == "healthy" for part in parts)

    def trigger(self, dag_id: str, conf: dict) -> str:
        """Unpause ``dag_id`` once parsed and start a run with ``conf``; return its run id."""
        self.wait(lambda: self.request("GET", f"/api/v2/dags/{dag_id}").status_code == 200, 120, f"{dag_id} parsed")
        self.api("PATCH", f"/dags/{dag_id}", json={"is_paused": False})
        return self.api("POST", f"/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf})["dag_run_id"]

    def task_instance(self, dag_id: str, run_id: str, task_id: str) -> dict:
        return self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}")

    def task_state(self, dag_id: str, run_id: str, task_id: str) -> str | None:
        return self.task_instance(dag_id, run_id, task_id).get("state")

    def wait_task(self, dag_id: str, run_id: str, task_id: str, states: set[str], timeout: float) -> str:
        """Wait until the task instance is in one of ``states``; return that state."""
        self.wait(lambda: self.task_state(dag_id, run_id, task_id) in states, timeout, f"{task_id} in {states}")
        return self.task_state(dag_id, run_id, task_id) or ""

    def wait_run(self, dag_id: str, run_id: str, timeout: float) -> str:
        """Wait until the DAG run ends; return its state."""
        ended = {"success", "failed"}
        path = f"/dags/{dag_id}/dagRuns/{run_id}"
        self.wait(lambda: self.api("GET", path)["state"] in ended, timeout, f"run {run_id} ended")
        return self.api("GET", path)["state"]

    def mark(self, dag_id: str, run_id: str, task_id: str, state: str) -> None:
        """Set a task instance's state as a user does in the UI (mark failed / success)."""
        self.api("PATCH", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}", json={"new_state": state})

    def task_log_records(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> list | str:
        """Return a try's whole task log as the API serves it: its JSON records, or a text (before it has any)."""
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}"
        json_records = {"Accept": "application/json"}
        answer = self.request("GET", f"/api/v2{path}", params={"full_content": True}, headers=json_records)
        if answer.status_code == 404:  # the run's task instance is not created yet
            return []
        answer.raise_for_status()
        content = answer.json().get("content")
        return content if isinstance(content, str) else list(content or [])

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> str:
        """Return a try's task log as the UI shows it: every record's message, one per line."""
        content = self.task_log_records(dag_id, run_id, task_id, try_number)
        if isinstance(content, str):
            self.on_read(content)
            return content
        lines = []
        for record in content:
            if isinstance(record, dict):
                lines.append(" ".join(str(record.get(k, "")) for k in ("level", "event") if record.get(k)))
                # an exception's type and message, as the UI shows them under the record
                lines += [f"{e.get('exc_type')}: {e.get('exc_value')}" for e in record.get("error_detail") or []]
            else:
                lines.append(str(record))
        self.on_read(*lines)
        return "\n".join(lines)

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}"
        return self.api("GET", path, params={"deserialize": True})["value"]

    @staticmethod
    def wait(check: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``check`` every 0.5 s until it holds; fail naming ``what`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(0.5)
