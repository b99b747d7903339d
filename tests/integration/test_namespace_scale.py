"""A follower's watches beside objects that are not its own (issue 18): narrowed by the provider's label on the
API server, so that foreign Workflows, Volcano Jobs and pods never reach the triggerer; a trigger deferred by an
older version (no ``labelled``) still watches the namespace as it did.
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_volcano_argo.engine.informer import SharedWatch
from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook, VolcanoArgoHook
from airflow_provider_volcano_argo.models.follow import FollowSpec
from airflow_provider_volcano_argo.models.names import MANAGED_BY, MANAGED_BY_LABEL
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from airflow_provider_volcano_argo.triggers.argo_workflow import ArgoWorkflowTrigger
from tests.integration.helpers import capture_task_log, install_mpi_templates, phase_of, wait_for

pytestmark = pytest.mark.integration

FOREIGN = "foreign"


def _foreign_objects(api, ns: str) -> None:
    """A finished Workflow, a Volcano Job whose pods never start, and master pods of another team's job."""
    api.create(
        "workflows",
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Workflow",
            "metadata": {"name": f"{FOREIGN}-wf", "labels": {"workflows.argoproj.io/completed": "true"}},
            "spec": {"entrypoint": "main", "templates": [{"name": "main", "container": {"image": "x"}}]},
            # no status subresource on Workflows: created finished, which Argo's controller leaves alone
            "status": {"phase": "Succeeded", "finishedAt": "2026-01-01T00:00:00Z"},
        },
        ns,
    )
    # no scheduler takes them, and no scripted program runs in them (the container is not named mpimaster)
    pod_spec = {"schedulerName": "nobody", "containers": [{"name": "solver", "image": "mpi:latest"}]}
    api.create(
        "vcjobs",
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": f"{FOREIGN}-job"},
            "spec": {
                "minAvailable": 1,
                "schedulerName": "volcano",
                "tasks": [{"name": "mpimaster", "replicas": 1, "template": {"spec": pod_spec}}],
            },
        },
        ns,
    )
    for i in range(3):  # no node and an unknown scheduler: Pending, nobody touches them
        labels = {"volcano.sh/job-name": f"{FOREIGN}-team-job", "volcano.sh/task-spec": "mpimaster"}
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{FOREIGN}-pod-{i}", "labels": labels}}
        api.create("pods", {**body, "spec": pod_spec}, ns)


def _submit(api, ns: str, job: str) -> dict:
    """Submit from the shipped template as the operator does: the Workflow labelled as the provider's."""
    body = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": f"{job}-", "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "spec": {
            "workflowTemplateRef": {"name": "volcano-mpi"},
            "arguments": {"parameters": [{"name": "job-name", "value": job}]},
        },
    }
    return api.create("workflows", body, ns)


def test_a_follower_never_receives_objects_that_are_not_its_own_and_still_completes(
    sandbox, sandbox_namespace, monkeypatch
):
    ns = install_mpi_templates(sandbox, sandbox_namespace)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())
    _foreign_objects(sandbox.api, ns)
    wait_for(lambda: sandbox.api.list("pods", ns, label_selector=f"volcano.sh/job-name={FOREIGN}-job")["items"],
             30, what="the foreign Volcano Job's pod")  # fmt: skip
    sandbox.kubelet.programs.script(
        ScriptedProgram(lines=[f"step {i}" for i in range(20)], rate=5, duration=8), namespace=ns, container="mpimaster"
    )
    runs = {"narrowed": ["jobs", "pods", "workflow"], "as-before": []}  # the second: a trigger deferred by 0.1
    workflows = {job: _submit(sandbox.api, ns, job) for job in runs}
    requests: list[tuple[str, str, str | None, str | None]] = []
    list_objects, watch_objects = AsyncVolcanoArgoHook.list_objects, AsyncVolcanoArgoHook.watch_objects

    async def recorded_list(self, res, namespace, field_selector=None, label_selector=None, **kw):
        requests.append(("list", res.plural, field_selector, label_selector))
        return await list_objects(self, res, namespace, field_selector, label_selector, **kw)

    def recorded_watch(self, res, namespace, version, field_selector=None, label_selector=None, **kw):
        requests.append(("watch", res.plural, field_selector, label_selector))
        return watch_objects(self, res, namespace, version, field_selector, label_selector, **kw)

    monkeypatch.setattr(AsyncVolcanoArgoHook, "list_objects", recorded_list)
    monkeypatch.setattr(AsyncVolcanoArgoHook, "watch_objects", recorded_watch)
    shown: dict[str, list[str]] = {job: [] for job in runs}

    received: dict[tuple[str, str], set[str]] = {}  # (resource, server-side label selector) -> names received
    on_update = SharedWatch._on_update

    async def recorded_update(self, kind: str, obj: dict) -> None:
        names = received.setdefault((self.resource.plural, self.watcher.label_selector or ""), set())
        names.update(o["metadata"]["name"] for o in (obj["items"] if kind == "SYNCED" else [obj]))
        await on_update(self, kind, obj)

    monkeypatch.setattr(SharedWatch, "_on_update", recorded_update)

    async def follow(job: str) -> dict:
        """Run one trigger to its event."""
        wf = workflows[job]
        spec = FollowSpec(namespace=ns, workflow_name=wf["metadata"]["name"], job_name=job, labelled=runs[job])
        trigger = ArgoWorkflowTrigger(spec=spec.to_dict(), connection={"kubernetes_conn_id": "kubernetes_default"})
        capture_task_log(trigger, shown[job].append)
        return (await trigger.run().__anext__()).payload

    event = asyncio.run(follow("narrowed"))
    narrowed, narrowed_requests = dict(received), list(requests)
    received.clear()
    old_event = asyncio.run(follow("as-before"))
    as_before = received
    for result in (event, old_event):
        assert result["status"] == "success", result
    for job in runs:
        assert [line for line in shown[job] if line.startswith("step ")] == [f"step {i}" for i in range(20)]
    assert sorted(narrowed) == [
        ("jobs", f"{MANAGED_BY_LABEL}={MANAGED_BY}"),
        ("pods", f"{MANAGED_BY_LABEL}={MANAGED_BY},volcano.sh/task-spec=mpimaster"),
        ("workflows", f"{MANAGED_BY_LABEL}={MANAGED_BY}"),
    ]
    assert not [name for names in narrowed.values() for name in names if name.startswith(FOREIGN)], narrowed
    # every list and watch it made selected on the API server (watches, the Job's pods at the end)
    assert {(verb, plural) for verb, plural, _, _ in narrowed_requests} >= {
        (verb, plural) for verb in ("list", "watch") for plural in ("workflows", "jobs", "pods")
    }
    assert all(field or label for _, _, field, label in narrowed_requests), narrowed_requests
    # the contrast: the namespace-wide watches of a trigger deferred before the label did receive them
    assert {f"{FOREIGN}-wf", f"{FOREIGN}-job", f"{FOREIGN}-pod-0"} <= set().union(*as_before.values()), as_before


def _owned_job(api, ns: str, name: str, workflow: dict, labelled: bool) -> None:
    """A Volcano Job the Workflow owns; its pod runs until it is stopped (scripted for the container ``solver``)."""
    meta = workflow["metadata"]
    owner = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "name": meta["name"], "uid": meta["uid"]}
    pod_spec = {"containers": [{"name": "solver", "image": "mpi:latest"}]}
    body = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "ownerReferences": [owner],
            "labels": {MANAGED_BY_LABEL: MANAGED_BY} if labelled else {},
        },
        "spec": {"minAvailable": 1, "tasks": [{"name": "mpimaster", "replicas": 1, "template": {"spec": pod_spec}}]},
    }
    api.create("vcjobs", body, ns)


@pytest.mark.parametrize("labelled", [True, False], ids=["labelled", "a template of one's own"])
def test_a_stop_finds_the_runs_job_by_the_label_and_lists_the_namespace_only_for_an_unlabelled_one(
    sandbox, sandbox_namespace, monkeypatch, labelled
):
    ns, api = sandbox_namespace, sandbox.api
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())
    sandbox.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="solver")
    _foreign_objects(api, ns)
    # a finished Workflow (no status subresource: created so), which the emulated Argo controller leaves alone
    workflow = api.create(
        "workflows",
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Workflow",
            "metadata": {"name": "stopped", "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
            "spec": {"entrypoint": "main", "templates": [{"name": "main", "container": {"image": "x"}}]},
            "status": {"phase": "Failed", "finishedAt": "2026-01-01T00:00:00Z"},
        },
        ns,
    )
    _owned_job(api, ns, "stopped-job", workflow, labelled)
    wait_for(lambda: phase_of(api, "vcjobs", "stopped-job", ns) in ("Pending", "Running"), 30, what="the run's Job")
    selectors: list[str | None] = []
    sync_list, async_list = VolcanoArgoHook.list_objects, AsyncVolcanoArgoHook.list_objects

    def recorded_sync(self, res, namespace, label_selector=None):
        selectors.append(label_selector)
        return sync_list(self, res, namespace, label_selector)

    async def recorded_async(self, res, namespace, field_selector=None, label_selector=None, **kw):
        selectors.append(label_selector)
        return await async_list(self, res, namespace, field_selector, label_selector, **kw)

    commands: list[dict] = []  # the sync hook's Command is kept here: sent, the async hook could list a stopped Job

    def recorded_create(self, res, body, namespace):
        commands.append(body)
        return body

    monkeypatch.setattr(VolcanoArgoHook, "list_objects", recorded_sync)
    monkeypatch.setattr(AsyncVolcanoArgoHook, "list_objects", recorded_async)
    monkeypatch.setattr(VolcanoArgoHook, "create_object", recorded_create)
    stopped = VolcanoArgoHook(conn_id="kubernetes_default").terminate_jobs(workflow, ns)
    stopped_async = asyncio.run(AsyncVolcanoArgoHook(conn_id="kubernetes_default").terminate_jobs(workflow, ns))
    assert stopped == stopped_async == ["stopped-job"]  # the foreign Job, running as well, is not the run's
    assert [command["target"]["name"] for command in commands] == ["stopped-job"]
    owned = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
    assert selectors == ([owned, owned] if labelled else [owned, None, owned, None])
    # the Command did reach Volcano's job controller: the run's Job stops, the foreign one is left as it was
    wait_for(lambda: phase_of(api, "vcjobs", "stopped-job", ns) in ("Terminating", "Terminated"), 30, what="stopped")
    assert phase_of(api, "vcjobs", f"{FOREIGN}-job", ns) in ("Pending", "Running")
    sandbox.kubelet.programs.clear()
