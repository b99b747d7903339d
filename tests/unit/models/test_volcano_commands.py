"""The Command that stops a gang a Workflow created, and which gangs get one."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.volcano_commands import (
    jobs_to_terminate,
    needs_unnarrowed_list,
    terminate_command,
)


def _job(name: str, phase: str, owner: str) -> dict:
    return {
        "metadata": {"name": name, "uid": f"{name}-uid", "ownerReferences": [{"uid": owner}]},
        "status": {"state": {"phase": phase}},
    }


def test_only_the_workflows_jobs_that_still_run_are_terminated():
    jobs = [
        _job("running", "Running", "wf"),
        _job("pending", "Pending", "wf"),
        _job("done", "Completed", "wf"),
        _job("failed", "Failed", "wf"),
        _job("foreign", "Running", "other"),
    ]
    assert [j["metadata"]["name"] for j in jobs_to_terminate(jobs, "wf")] == ["running", "pending"]
    assert jobs_to_terminate(jobs, None) == []


def test_the_namespace_is_listed_whole_only_when_no_labelled_job_is_the_workflows():
    # an ended Job found by the label is enough: the Workflow's Jobs carry it, the namespace need not be read
    assert not needs_unnarrowed_list([_job("mine", "Completed", "wf"), _job("other", "Running", "x")], "wf")
    assert needs_unnarrowed_list([_job("other", "Running", "x")], "wf")  # a template of one's own, unlabelled
    assert needs_unnarrowed_list([], "wf")


def test_the_command_is_owned_by_and_targets_its_job_without_blocking_its_deletion():
    command = terminate_command(_job("mpi-1", "Running", "wf"))
    owner = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "mpi-1",
        "uid": "mpi-1-uid",
        "controller": True,
    }
    assert command == {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": "mpi-1-terminatejob-", "ownerReferences": [owner]},
        "target": owner,
        "action": "TerminateJob",
    }
