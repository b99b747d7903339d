"""Shared watches against the real API server: one paged list and one watch for many subscribers, each of
which sees exactly its own objects.
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_volcano_argo.engine import reconnect, reflector
from airflow_provider_volcano_argo.engine.informer import SharedObjectWatcher, shared_watches
from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook
from airflow_provider_volcano_argo.models.resources import PODS

pytestmark = pytest.mark.integration


def _pod(name: str, job: str, task: str = "mpimaster") -> dict:
    labels = {"volcano.sh/job-name": job, "volcano.sh/task-spec": task}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        # no node and an unknown scheduler: the pod stays Pending, nobody else touches it
        "spec": {"schedulerName": "nobody", "containers": [{"name": task, "image": "mpi:latest"}]},
    }


def test_subscribers_share_one_paged_list_and_watch_and_see_only_their_objects(sandbox, sandbox_namespace, monkeypatch):
    ns = sandbox_namespace
    for i in range(5):
        sandbox.api.create("pods", _pod(f"j{i}-mpimaster-0", f"j{i}"), ns)
    sandbox.api.create("pods", _pod("j1-mpiworker-0", "j1", task="mpiworker"), ns)
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.environment(admin=True)["AIRFLOW_CONN_KUBERNETES_DEFAULT"]
    )
    monkeypatch.setattr(reflector, "LIST_PAGE_SIZE", 2)
    seen: dict[str, list[tuple[str, list[str]]]] = {f"j{i}": [] for i in range(5)}
    specs: list[dict] = []  # checked after the run: an assertion in a callback would only end its subscriber

    async def scenario():
        hook = AsyncVolcanoArgoHook(conn_id="kubernetes_default")

        def recorder(job: str):
            async def on_update(kind: str, obj: dict) -> None:
                items = obj["items"] if kind == "SYNCED" else [obj]
                specs.extend(pod.get("spec") for pod in items)
                seen[job].append((kind, [pod["metadata"]["name"] for pod in items]))

            return on_update

        tasks = [
            asyncio.create_task(
                SharedObjectWatcher(
                    hook,
                    PODS,
                    ns,
                    recorder(job),
                    label_selector=f"volcano.sh/task-spec=mpimaster,volcano.sh/job-name={job}",
                ).run()
            )
            for job in seen
        ]
        while not all(seen.values()):
            await asyncio.sleep(0.05)
        watches = list(shared_watches().values())
        await asyncio.to_thread(sandbox.api.create, "pods", _pod("j2-mpimaster-1", "j2"), ns)
        while ("ADDED", ["j2-mpimaster-1"]) not in seen["j2"]:
            await asyncio.sleep(0.05)
        # a barrier instead of a wait: one watch delivers in order, so once j4 has its own new pod, j2's event was
        # handed to every subscriber it was ever going to reach
        await asyncio.to_thread(sandbox.api.create, "pods", _pod("j4-mpimaster-1", "j4"), ns)
        while ("ADDED", ["j4-mpimaster-1"]) not in seen["j4"]:
            await asyncio.sleep(0.05)
        ended = [task for task in tasks if task.done()]  # a subscriber that failed, before the cancel
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return watches, len(shared_watches()), ended

    watches, left, ended = asyncio.run(scenario())
    assert ended == []
    # cached without what followers do not read: of spec, only the restart policy (the API server's default)
    assert specs and all(spec == {"restartPolicy": "Always"} for spec in specs), specs
    assert len(watches) == 1
    assert watches[0].watcher.label_selector == "volcano.sh/task-spec=mpimaster"
    assert watches[0].watcher.stats.lists == 3  # 5 masters in pages of 2
    assert left == 0  # the last subscriber to leave stops the watch
    for i in range(5):
        assert seen[f"j{i}"][0] == ("SYNCED", [f"j{i}-mpimaster-0"])
    assert ("ADDED", ["j2-mpimaster-1"]) in seen["j2"]
    for job, updates in seen.items():  # other changes (status) may come too, but only of the job's own master
        assert all(name.startswith(f"{job}-mpimaster-") for _, names in updates for name in names), updates


def test_a_resource_type_the_server_does_not_serve_fails_every_subscriber_at_once(
    sandbox, sandbox_namespace, monkeypatch
):
    """A missing CRD is final at the first list (the 404 grace is only for types listed before)."""
    from airflow_provider_volcano_argo.exceptions import ApiNotFoundError
    from airflow_provider_volcano_argo.models.resources import ApiResource

    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.environment(admin=True)["AIRFLOW_CONN_KUBERNETES_DEFAULT"]
    )
    widgets = ApiResource("example.com", "v1", "widgets")

    async def ignore(kind: str, obj: dict) -> None:
        return None

    async def scenario():
        hook = AsyncVolcanoArgoHook(conn_id="kubernetes_default")
        runs = [
            SharedObjectWatcher(hook, widgets, sandbox_namespace, ignore, field_selector=f"metadata.name=w{i}").run()
            for i in range(2)
        ]
        # bounded by the grace: waiting it out would mean the 404 was taken for a passing one
        return await asyncio.wait_for(asyncio.gather(*runs, return_exceptions=True), reconnect.REFUSAL_GRACE_SECONDS)

    errors = asyncio.run(scenario())
    assert [type(e) for e in errors] == [ApiNotFoundError, ApiNotFoundError]
    assert all(e.status == 404 and "widgets.example.com" in str(e) for e in errors), errors
