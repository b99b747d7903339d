"""``volcano-argo gc``'s sweep with a faked cluster and task-instance read: what it prints, what it asks of the hook."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo import cli, reaper
from airflow_provider_volcano_argo.exceptions import api_error
from airflow_provider_volcano_argo.hooks.volcano_argo import VolcanoArgoHook
from airflow_provider_volcano_argo.models.policies import CleanupSteps
from airflow_provider_volcano_argo.models.reaping import TaskInstanceRecord, TaskTry, reaper_annotations
from airflow_provider_volcano_argo.models.resources import VOLCANO_JOBS, WORKFLOWS


def _workflow(name: str, task: TaskTry | None, on_kill: str = "delete_workflow") -> dict:
    annotations = reaper_annotations(task, on_kill, durable=True) if task else {}
    return {"metadata": {"name": name, "uid": f"uid-{name}", "annotations": annotations}, "status": {"phase": ""}}


FAILED = TaskTry("d", "failed_task", "r", -1, 1)
DEFERRED = TaskTry("d", "deferred_task", "r", -1, 1)


class FakeHook:
    """Lists the given Workflows (or refuses), records the clean-ups asked for."""

    def __init__(self, workflows: list[dict], refuse: set[str] = frozenset()) -> None:
        self.workflows, self.refuse = workflows, refuse
        self.selectors: list[str | None] = []
        self.cleaned: list[tuple[str, str, CleanupSteps]] = []

    def list_objects(self, res, namespace, label_selector=None):
        if namespace in self.refuse:
            raise api_error(403, "forbidden", "list", res.label, namespace)
        self.selectors.append(label_selector)
        return self.workflows if res == WORKFLOWS else [] if res == VOLCANO_JOBS else pytest.fail(res)

    list_workflows_jobs = VolcanoArgoHook.list_workflows_jobs  # the real listing policy, over this fake's lists

    def clean_up_workflow(self, name, namespace, steps):
        self.cleaned.append((name, namespace, steps))
        return steps.delete


@pytest.fixture
def cluster(monkeypatch):
    hook = FakeHook([_workflow("wf-failed", FAILED), _workflow("wf-deferred", DEFERRED), _workflow("by-hand", None)])
    view = reaper.AirflowView(
        records={
            FAILED.key: TaskInstanceRecord("failed", 1, ended_at=0.0),
            DEFERRED.key: TaskInstanceRecord("deferred", 1),
        },
        known_dags={"d"},
    )
    monkeypatch.setattr(reaper, "read_airflow", lambda tasks: view)
    connection = type("Connection", (), {"hook": lambda self: hook})()
    return hook, connection


def test_a_dry_run_prints_one_line_per_workflow_and_changes_nothing(cluster):
    hook, connection = cluster
    lines: list[str] = []
    assert reaper.sweep(connection, ["ns"], apply=False, emit=lines.append)
    assert hook.cleaned == []
    assert hook.selectors[0] == "app.kubernetes.io/managed-by=airflow-provider-volcano-argo"
    assert lines == [
        "would delete ns/wf-failed (d.failed_task run r try 1): the task instance is failed "
        "(on_kill_action=delete_workflow)",
        "leave ns/wf-deferred (d.deferred_task run r try 1): its try is deferred",
        "leave ns/by-hand (no task instance): no task-instance identity recorded on it "
        "(not submitted by this provider version)",
    ]


def test_apply_cleans_up_only_the_orphans_and_quiet_prints_only_them(cluster):
    hook, connection = cluster
    lines: list[str] = []
    assert reaper.sweep(connection, ["ns"], apply=True, quiet=True, emit=lines.append)
    assert hook.cleaned == [("wf-failed", "ns", CleanupSteps(stop=True, delete=True))]
    assert [line.split(" (")[0] for line in lines] == ["deleted ns/wf-failed"]


def test_a_namespace_it_may_not_list_is_named_and_the_others_are_still_swept(cluster, capsys):
    hook, connection = cluster
    hook.refuse = {"locked"}
    assert not reaper.sweep(connection, ["locked", "ns"], apply=True, emit=lambda line: None)
    assert "error: locked: " in capsys.readouterr().err
    assert [name for name, _, _ in hook.cleaned] == ["wf-failed"]


@pytest.mark.parametrize("argv", [["gc", "--every", "0"], ["gc", "--grace", "-1"]])
def test_gc_refuses_a_period_that_is_not_positive(argv, capsys):
    with pytest.raises(SystemExit):
        cli.main(argv)
    assert "--every must be > 0" in capsys.readouterr().err


class JobsHook(FakeHook):
    """Holds Volcano Jobs too, each labelled by the provider or not, and answers a list by its selector."""

    def __init__(self, workflows: list[dict], jobs: list[tuple[dict, bool]]) -> None:
        super().__init__(workflows)
        self.jobs = jobs
        self.job_lists: list[str | None] = []

    def list_objects(self, res, namespace, label_selector=None):
        if res != VOLCANO_JOBS:
            return super().list_objects(res, namespace, label_selector)
        self.job_lists.append(label_selector)
        return [job for job, labelled in self.jobs if labelled or not label_selector]


def _ended(name: str) -> dict:
    return {**_workflow(name, FAILED), "status": {"phase": "Failed"}}


def _running_job(owner: dict) -> dict:
    refs = [{"kind": "Workflow", "uid": owner["metadata"]["uid"]}]
    return {"metadata": {"name": f"{owner['metadata']['name']}-job", "ownerReferences": refs},
            "status": {"state": {"phase": "Running"}}}  # fmt: skip


def test_a_running_workflows_jobs_are_not_listed():
    hook = JobsHook([_workflow("wf", FAILED)], [])
    [run] = reaper.list_submitted(hook, "ns")
    assert run.runs and hook.job_lists == []


def test_an_ended_workflows_labelled_gang_is_found_by_the_label_alone():
    ended = _ended("wf")
    hook = JobsHook([ended], [(_running_job(ended), True)])
    [run] = reaper.list_submitted(hook, "ns")
    assert run.runs  # Failed, but its gang still runs
    assert hook.job_lists == ["app.kubernetes.io/managed-by=airflow-provider-volcano-argo"]


@pytest.mark.parametrize("gang", [True, False], ids=["unlabelled gang", "no gang"])
def test_an_ended_workflow_owning_no_labelled_job_has_the_namespace_listed(gang):
    ended = _ended("wf")
    hook = JobsHook([ended], [(_running_job(ended), False)] if gang else [])
    [run] = reaper.list_submitted(hook, "ns")
    assert run.runs is gang  # a template of one's own without the label: its gang is still found
    assert hook.job_lists == ["app.kubernetes.io/managed-by=airflow-provider-volcano-argo", None]
