"""Volcano's Job rules as pure functions: webhook defaults, policy resolution, phase transitions, pod naming.

Follows volcano-sh/volcano: ``pkg/webhooks/admission/jobs/mutate/mutate_job.go`` (defaults),
``pkg/controllers/job/job_controller_util.go: applyPolicies`` (policies), ``pkg/controllers/job/state/*.go``
(phases), ``pkg/controllers/job/job_controller_util.go: createJobPod`` (pod names, labels, annotations).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

TERMINAL = ("Completed", "Failed", "Terminated")
FINISHING = {"AbortJob": "Aborting", "TerminateJob": "Terminating", "CompleteJob": "Completing"}
FINISHED = {"Aborting": "Aborted", "Terminating": "Terminated", "Completing": "Completed"}
OUT_OF_SYNC = "volcano.sh/controller-out-of-sync"


def with_defaults(spec: dict) -> dict:
    """Return the spec as the mutating webhook leaves it: queue, maxRetry, task names, minAvailable."""
    spec = copy.deepcopy(spec)
    spec.setdefault("queue", "default")
    spec.setdefault("maxRetry", 3)
    spec.setdefault("schedulerName", "volcano")
    total = 0
    for index, task in enumerate(spec.get("tasks", [])):
        task.setdefault("name", f"default{index}")
        task.setdefault("replicas", 1)
        task.setdefault("minAvailable", task["replicas"])
        task.setdefault("maxRetry", 3)
        total += int(task["minAvailable"])
    if not spec.get("minAvailable"):
        spec["minAvailable"] = total
    return spec


def total_replicas(spec: dict) -> int:
    return sum(int(t.get("replicas", 0)) for t in spec.get("tasks", []))


def pod_name(job: str, task: str, index: int) -> str:
    return f"{job}-{task}-{index}"


@dataclass(frozen=True)
class Request:
    """What happened to a job: an event from a pod (or a command's action), with its task and exit code."""

    event: str
    task: str = ""
    exit_code: int = 0
    action: str = ""  # set for commands, which carry their action
    version: int = 0  # the job version of the pod that raised it (its volcano.sh/job-version annotation)


def resolve_action(spec: dict, request: Request) -> str:
    """Return the action for ``request``.

    A command's action, else the first matching task policy, then job policy; ``SyncJob`` when nothing matches.
    """
    if request.action:
        return request.action
    task_policies = next((t.get("policies") or [] for t in spec.get("tasks", []) if t.get("name") == request.task), [])
    for policy in list(task_policies) + list(spec.get("policies") or []):
        if policy.get("timeout"):
            continue  # delayed actions are not emulated
        events = policy.get("events") or ([policy["event"]] if policy.get("event") else [])
        if events and ("*" in events or request.event in events):
            return policy["action"]
        code = policy.get("exitCode")
        if code and request.event == "PodFailed" and code == request.exit_code:
            return policy["action"]
    return "SyncJob"


def request_action(spec: dict, request: Request, job_version: int) -> str:
    """Return the action for ``request`` as ``applyPolicies`` resolves it when the request is processed.

    A command's action always counts; a pod event from an older job version (a pod of an attempt already killed)
    only syncs (``job_controller_util.go: applyPolicies``: ``req.JobVersion < job.Status.Version``).
    """
    if not request.action and request.version < job_version:
        return "SyncJob"
    return resolve_action(spec, request)


RESTARTS = ("RestartJob", "RestartTask", "RestartPod", "RestartPartition")


@dataclass(frozen=True)
class PhaseAction:
    """What a phase's state does with an action (``state/*.go: Execute``).

    ``kill``: None syncs (``SyncJob``), else ``"none"`` or ``"soft"`` (killJob's ``PodRetainPhase``); ``phase``: the
    phase set at once, None when the phase's own update rule decides; ``retry``: whether ``retryCount`` grows.
    """

    kill: str | None
    phase: str | None = None
    retry: bool = False


def phase_action(phase: str, action: str) -> PhaseAction:
    """Return what the ``state/*.go`` of ``phase`` does with ``action``."""
    if phase in ("Pending", "Running", ""):
        if action in RESTARTS:
            return PhaseAction("none", "Restarting", retry=True)
        if action in FINISHING:
            return PhaseAction("soft", FINISHING[action])
        return PhaseAction(None)
    if phase == "Restarting":  # restarting.go: no RetryCount++, whatever the action
        return PhaseAction(None) if action == "SyncJob" else PhaseAction("none")
    if phase in ("Aborting", "Aborted") and action == "ResumeJob":
        return PhaseAction("soft", "Restarting", retry=True)
    # completing.go, terminating.go, aborting.go, aborted.go, finished.go: every action kills softly
    return PhaseAction("soft")


@dataclass
class Counts:
    """Pod counts of the current job version."""

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0

    @property
    def done(self) -> int:
        return self.succeeded + self.failed


def next_phase(phase: str, spec: dict, counts: Counts, retry_count: int, task_succeeded: dict[str, int]) -> str:
    """Return the phase after a sync with no action (``state/*.go: Execute(SyncJob)`` and the ``*UpdateStatus``)."""
    min_available = int(spec.get("minAvailable", 0))
    total = total_replicas(spec)
    if phase in FINISHED:
        if counts.pending + counts.running + counts.terminating == 0:
            return FINISHED[phase]
        return phase
    if phase == "Restarting":  # restarting.go: restartingUpdateStatus
        if retry_count >= int(spec.get("maxRetry", 3)):
            return "Failed"
        if total - counts.terminating >= min_available:
            return "Pending"
        return phase
    if phase == "Pending":
        if min_available <= counts.running + counts.done and total:
            return "Running"
        return phase
    if phase == "Running":
        min_success = spec.get("minSuccess")
        if min_success and counts.succeeded >= int(min_success):
            return "Completed"
        if total and counts.done == total:
            tasks_min = sum(int(t.get("minAvailable", 0)) for t in spec.get("tasks", []))
            if min_available >= tasks_min:
                for task in spec.get("tasks", []):
                    if task_succeeded.get(task["name"], 0) < int(task.get("minAvailable", 0)):
                        return "Failed"
            if min_success:
                return "Failed"
            return "Completed" if counts.succeeded >= min_available else "Failed"
        if counts.pending > total - min_available:
            return "Pending"
    return phase


def gang_resources(spec: dict, requests_of) -> dict[str, float]:
    """``minResources``: what the first ``minAvailable`` pods ask for, tasks in order (``calcPGMinResources``)."""
    left = int(spec.get("minAvailable", 0))
    summed: dict[str, float] = {}
    for task in spec.get("tasks", []):
        for _ in range(min(left, int(task.get("replicas", 0)))):
            for name, value in requests_of(task).items():
                summed[name] = summed.get(name, 0.0) + value
            left -= 1
    return summed
