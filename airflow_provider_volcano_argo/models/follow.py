"""What a follower follows, and when a followed run has ended and how: ``decide`` as a pure function."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from airflow_provider_volcano_argo.models.admission import overdue_for_admission
from airflow_provider_volcano_argo.models.phases import (
    WorkflowPhase,
    job_ended,
    job_failed,
    job_phase,
    job_succeeded,
    workflow_done,
    workflow_message,
    workflow_phase,
)

#: ``success`` ends the task well; the others fail it.
OutcomeStatus = Literal["success", "failed", "timeout", "error"]

#: Reasons of outcomes decided while the run may still go on: the deadline, a gang not admitted in time (it may be
#: admitted later and take its nodes), an API error; and ``deleted``, after which what is left is being removed.
_NOT_ENDED_REASONS = frozenset({"timeout", "unschedulable", "api_error", "deleted"})


def run_ended(reason: str) -> bool:
    """Tell whether an outcome's run ended by itself (a terminal phase), so that its pods and logs ended too."""
    return reason not in _NOT_ENDED_REASONS


@dataclass
class FollowSpec:
    """What to follow and when to give up; plain values only, so it serializes into trigger kwargs."""

    namespace: str
    workflow_name: str
    workflow_uid: str | None = None
    job_name: str | None = None  # single-job mode: the outcome is this job's terminal phase
    log_task: str = "mpimaster"
    log_container: str | None = None
    stream_logs: bool = True
    log_poll_interval: float | None = None  # None: follow the log; else read it every so many seconds
    prefix_job_names: bool = False
    schedule_timeout: float | None = None
    deadline: float | None = None  # epoch seconds (execution_timeout of the task)
    #: which of "workflow", "jobs", "pods" carry the provider's label (``models/owned_labels.py``): their shared
    #: watches select by it on the API server. Empty (triggers deferred by versions before it, templates without
    #: the label): the whole namespace is watched and each run filtered out locally, as those versions did.
    labelled: list[str] = field(default_factory=list)

    @property
    def container(self) -> str:
        """Return the container whose log is read (``log_container``, default the task's name)."""
        return self.log_container or self.log_task

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FollowOutcome:
    """How a followed run ended: ``status``, a message for the task log, ``reason`` a short machine-readable cause."""

    status: OutcomeStatus
    message: str
    reason: str = ""
    details: list[str] = field(default_factory=list)

    @property
    def run_ended(self) -> bool:
        """Tell whether the run ended by itself (see ``run_ended``)."""
        return run_ended(self.reason)


def owned_by(obj: dict, owner_uid: str | None) -> bool:
    """Tell whether ``obj`` has an ownerReference to ``owner_uid`` (Argo's setOwnerReference or a manual one)."""
    if not owner_uid:
        return False
    return any(ref.get("uid") == owner_uid for ref in obj["metadata"].get("ownerReferences") or [])


def follows_job(spec: FollowSpec, job: dict) -> bool:
    """Tell whether the run follows ``job``: one its Workflow created (owner reference), named ``job_name`` if set.

    The name alone is not enough: a fixed ``job_name`` whose earlier Job still exists names that Job too, while
    this run's ``action: create`` fails with AlreadyExists (argo-workflows v3.7 ``workflow/executor/resource.go``
    ``ExecResource``: ``kubectl create`` retried on transient errors only) and the Workflow fails.
    """
    if spec.job_name and job["metadata"]["name"] != spec.job_name:
        return False
    return owned_by(job, spec.workflow_uid)


def decide(
    spec: FollowSpec,
    workflow: dict | None,
    workflow_gone: bool,
    jobs: dict[str, dict],
    jobs_gone: set[str],
    now: float,
    admitted: set[str] | None = None,
) -> FollowOutcome | None:
    """Return the outcome once it is known, else None (keep following).

    ``admitted`` holds the attempts (``models.admission.attempt_key``) known to be admitted by the gang scheduler:
    ``schedule_timeout`` fails only an attempt not among them that waited that long in ``Pending``.
    """
    wf_phase, wf_message = workflow_phase(workflow), workflow_message(workflow)
    name = spec.workflow_name
    if workflow_gone:
        return FollowOutcome("failed", f"Argo Workflow {name} was deleted while the task was following it.", "deleted")
    for job_name in sorted(jobs_gone):
        if not job_ended(jobs.get(job_name)):
            return FollowOutcome(
                "failed", f"Volcano Job {job_name} was deleted before it finished (Workflow {name}).", "deleted"
            )
    alive = jobs_outliving(workflow, jobs)
    if spec.job_name:
        job = jobs.get(spec.job_name)
        phase = job_phase(job)
        note = _outlived_note(name, workflow)
        if job_succeeded(job):
            return FollowOutcome("success", f"Volcano Job {spec.job_name} {phase}.{note}", "completed")
        if job_failed(job):
            return FollowOutcome("failed", f"Volcano Job {spec.job_name} ended {phase}.{note}", phase.lower())
        if alive:
            pass  # the Workflow's own failure (e.g. its resource step's pod died): the Job runs on, and is followed
        elif workflow_done(workflow) and (job is None or wf_phase != WorkflowPhase.SUCCEEDED):
            what = "without creating" if job is None else "before"
            return FollowOutcome(
                "failed",
                f"Argo Workflow {name} ended {wf_phase} {what} Volcano Job {spec.job_name}"
                + (f" finished: {wf_message}" if job is not None else f": {wf_message or 'no message'}"),
                "workflow_ended",
            )
    elif workflow_done(workflow) and not alive:
        if wf_phase == WorkflowPhase.SUCCEEDED:
            return FollowOutcome("success", f"Argo Workflow {name} Succeeded ({len(jobs)} Volcano Jobs).", "completed")
        failing = sorted(n for n, j in jobs.items() if job_failed(j))
        named = "; ".join(f"Volcano Job {n} ended {job_phase(jobs[n])}" for n in failing)
        return FollowOutcome(
            "failed", f"Argo Workflow {name} ended {wf_phase}: {named or wf_message or 'no message'}", "workflow_ended"
        )
    if (timeout := deadline_outcome(spec, now)) is not None:
        return timeout
    if spec.schedule_timeout is not None:
        for job_name in overdue_for_admission(jobs, admitted or set(), spec.schedule_timeout, now):
            return FollowOutcome(
                "failed",
                f"Volcano Job {job_name} was not admitted by the gang scheduler within schedule_timeout "
                f"({spec.schedule_timeout:.0f} s).",
                "unschedulable",
            )
    return None


def jobs_outliving(workflow: dict | None, jobs: dict[str, dict]) -> list[str]:
    """Return the Jobs still running after their Workflow ended unsuccessfully by itself (not by a stop), sorted.

    Argo ends a resource step's node when its ``argoexec`` pod is deleted (``pod deleted``), evicted or OOM-killed
    (operator.go ``podReconciliation``, ``inferFailedReason``), and a failed node fails the Workflow, while the
    Volcano Job it created runs on, healthy. Ending the task then (and deleting the Workflow) would kill it.
    """
    if not workflow_done(workflow) or workflow_phase(workflow) == WorkflowPhase.SUCCEEDED:
        return []
    if ((workflow or {}).get("spec") or {}).get("shutdown"):
        return []  # a stop: what it leaves running is the stopper's to end
    return sorted(n for n, j in jobs.items() if j is not None and not job_ended(j))


def outliving_line(workflow_name: str, workflow: dict | None, jobs: list[str]) -> str:
    """Return the task-log line that says the Workflow ended under running Jobs, and that they are followed on."""
    return (
        f"Argo Workflow {workflow_name} ended {workflow_phase(workflow)} ({workflow_message(workflow) or 'no message'})"
        f" while Volcano Job {', '.join(jobs)} still runs: following it to its end rather than ending (and deleting)"
        " it now."
    )


def _outlived_note(workflow_name: str, workflow: dict | None) -> str:
    if not workflow_done(workflow) or workflow_phase(workflow) == WorkflowPhase.SUCCEEDED:
        return ""
    return f" (Argo Workflow {workflow_name} had ended {workflow_phase(workflow)}: {workflow_message(workflow)})"


def deadline_outcome(spec: FollowSpec, now: float) -> FollowOutcome | None:
    """Return the ``timeout`` outcome once ``execution_timeout``'s deadline has passed, else None.

    It needs no object: the deadline holds while the watches cannot list (API server unreachable) too.
    """
    if spec.deadline is not None and now >= spec.deadline:
        return FollowOutcome(
            "timeout", f"execution_timeout reached while following Argo Workflow {spec.workflow_name}.", "timeout"
        )
    return None


def with_unreadable_log(outcome: FollowOutcome, error: str) -> FollowOutcome:
    """Return the outcome of a run whose log could not be read.

    The job's outcome stands, but a success whose log is missing is an error, and a failure says so in its details.
    """
    if outcome.status == "success":
        return FollowOutcome("error", f"{outcome.message} Its log could not be read: {error}", "api_error")
    outcome.details.append(f"Its log could not be read: {error}")
    return outcome
