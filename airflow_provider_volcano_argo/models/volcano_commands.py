"""Volcano ``bus.volcano.sh/v1alpha1`` Commands: how a stop reaches the gang that a Workflow's resource step created.

Argo's ``spec.shutdown`` stops Argo's own pods only; a Volcano Job the Workflow created runs on (with its nodes and
GPUs) until it is deleted. A ``TerminateJob`` Command stops it and keeps it for inspection, as ``vcctl`` issues
commands (volcano ``pkg/cli/util``: ``CreateJobCommand``): in Pending and Running, the job controller's state
machine answers ``TerminateJobAction`` with ``KillJob(PodRetainPhaseSoft)`` and phase Terminating
(``pkg/controllers/job/state/pending.go``, ``running.go``: ``Execute``), then Terminated once the pods are gone.
"""

from __future__ import annotations

from airflow_provider_volcano_argo.models.follow import owned_by
from airflow_provider_volcano_argo.models.phases import job_ended

TERMINATE_JOB = "TerminateJob"


def jobs_to_terminate(jobs: list[dict], workflow_uid: str | None) -> list[dict]:
    """Return the Volcano Jobs the Workflow owns that have not ended."""
    return [job for job in jobs if owned_by(job, workflow_uid) and not job_ended(job)]


def needs_unnarrowed_list(labelled: list[dict], workflow_uid: str | None) -> bool:
    """Tell whether the Jobs listed by the provider's label hold none of the Workflow's, so all must be listed.

    The shipped templates label their Jobs (``models/owned_labels.py``), so a stop finds them without listing what
    else the namespace holds; a template of one's own may leave the label out. A Workflow whose Jobs carried it
    only in part would have its unlabelled ones missed: the custom-template contract's templates create one Job.
    """
    return not any(owned_by(job, workflow_uid) for job in labelled)


def terminate_command(job: dict, action: str = TERMINATE_JOB) -> dict:
    """Return the Command that makes Volcano's job controller run ``action`` on ``job`` once.

    Owned by the Job, as vcctl's are, so it goes with it; the controller deletes it once it has read it. Without
    ``blockOwnerDeletion``: where ``OwnerReferencesPermissionEnforcement`` is on (OpenShift), setting it takes
    ``update`` on the Job's finalizers, which nothing here needs (the Command is read at once, not waited for).
    """
    meta = job["metadata"]
    owner = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": f"{meta['name']}-{action.lower()}-", "ownerReferences": [owner]},
        "target": owner,
        "action": action,
    }
