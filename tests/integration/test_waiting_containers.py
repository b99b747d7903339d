"""A master pod bound but unable to start says why in the task log, and the run goes on once the cause is fixed.

The emulated kubelet resolves env from Secrets as the node does: a Secret that does not exist leaves the container
waiting ``CreateContainerConfigError`` with the kubelet's message, and is retried every 10 s.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tests.integration.helpers import create_secret, run_dag

pytestmark = pytest.mark.integration

SECRET = "solver-credentials"


class SecretLater(threading.Thread):
    """Create the Secret once the master pod waits for it (at the latest after ``fallback`` seconds)."""

    def __init__(self, sandbox, namespace: str, fallback: float = 15.0) -> None:
        super().__init__(daemon=True)
        self.sandbox, self.namespace, self.fallback = sandbox, namespace, fallback
        self.seen_waiting = False

    def _master_waits(self) -> bool:
        for pod in self.sandbox.api.list("pods", self.namespace)["items"]:
            if not pod["metadata"]["name"].endswith("-mpimaster-0"):
                continue
            for status in (pod.get("status") or {}).get("containerStatuses") or []:
                waiting = (status.get("state") or {}).get("waiting") or {}
                if waiting.get("reason") == "CreateContainerConfigError":
                    return True
        return False

    def run(self) -> None:
        deadline = time.monotonic() + self.fallback
        while time.monotonic() < deadline and not self._master_waits():
            time.sleep(0.3)
        self.seen_waiting = time.monotonic() < deadline
        time.sleep(2.0)  # the follower sees the same status through its pod watch: time to write its line
        create_secret(self.sandbox, self.namespace, SECRET, {"token": "late-token"})


def test_a_missing_secret_is_named_in_the_task_log_and_the_run_succeeds_once_it_exists(
    sandbox, mpi_namespace, caplog, capfd
):
    from tests.dags.mpi_test_dags import mpi_overrides

    env = [
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": SECRET, "key": "token"}}},
        {"name": "MPI_ECHO_ENV", "value": "TOKEN"},
    ]
    # the master's env only: workers waiting for the Secret would hold the master in its init container (it
    # waits for their sshd), where it waits PodInitializing, a reason with nothing to tell
    overrides = {"mpi_command": "mpi_echo", "pod_overrides": {"mpimaster": {"spec": {"containers": [{"env": env}]}}}}
    later = SecretLater(sandbox, mpi_namespace)
    later.start()
    started = time.monotonic()
    states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides=overrides)
    later.join(timeout=30)
    assert states == {"mpi": "success"}, log[-3000:]
    assert later.seen_waiting
    line = f'container mpimaster waiting: CreateContainerConfigError: secret "{SECRET}" not found'
    told = [x for x in log.splitlines() if line in x]
    assert len(told) == 1, log[-3000:]  # once, though the kubelet retries every 10 s with the same message
    assert "-mpimaster-0: " + line in told[0]
    assert "env TOKEN=late-token" in log
    assert log.index(line) < log.index("env TOKEN=late-token")
    assert time.monotonic() - started < 60


def test_a_bound_master_stuck_mounting_is_seen_so_through_the_shared_pod_watch(sandbox, sandbox_namespace, monkeypatch):
    """The followers read pods from the shared watch's cache: it must keep what they read of ``spec`` (the node),
    or a master stuck mounting a volume is never seen creating and its ``FailedMount`` never told.
    """
    from airflow_provider_volcano_argo.engine.informer import SharedObjectWatcher
    from airflow_provider_volcano_argo.engine.pod_waiting import PodWaitingReporter
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook
    from airflow_provider_volcano_argo.models.admission import pods_bound
    from airflow_provider_volcano_argo.models.resources import PODS

    ns = sandbox_namespace
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.environment(admin=True)["AIRFLOW_CONN_KUBERNETES_DEFAULT"]
    )
    sandbox.api.create(
        "pods",
        {
            "metadata": {"name": "j-mpimaster-0", "labels": {"volcano.sh/job-name": "j"}},
            "spec": {
                "containers": [{"name": "mpimaster", "image": "volcanosh/example-mpi:0.0.3"}],
                "volumes": [{"name": "settings", "configMap": {"name": "not-created"}}],
            },
        },
        ns,
    )
    told: list[str] = []

    async def scenario() -> list[dict]:
        hook = AsyncVolcanoArgoHook(conn_id="kubernetes_default")
        cached: dict[str, dict] = {}

        async def on_update(kind: str, obj: dict) -> None:
            for pod in obj["items"] if kind == "SYNCED" else [obj]:
                cached[pod["metadata"]["name"]] = pod

        watch = asyncio.create_task(
            SharedObjectWatcher(hook, PODS, ns, on_update, label_selector="volcano.sh/job-name=j").run()
        )
        reporter = PodWaitingReporter(hook, ns, told.append, stuck_after=0.0)
        deadline = time.monotonic() + 30
        while not any("FailedMount" in line for line in told) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            await reporter.report(cached.values(), {"j"})
            reporter.events_read_at = None  # each pass may read the Events (the mount fails a moment after binding)
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        return list(cached.values())

    pods = asyncio.run(scenario())
    assert pods_bound(pods, {"metadata": {"name": "j"}, "status": {}})
    assert any(
        'MountVolume.SetUp failed for volume "settings" : configmap "not-created" not found' in x for x in told
    ), told
