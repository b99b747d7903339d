"""What ``volcano-argo gc`` does with a Workflow the provider submitted, once the try that submitted it is gone.

The submission records what the reaper needs on the Workflow itself (annotations, ``reaper_annotations``): the
full task-instance identity (the labels may hold hashes of long values, ``names.safe_label_value``), the task's
``on_kill_action`` and ``durable``. ``judge`` is the decision, from that and the task instance as Airflow has it.

The rule set, first match wins:

1. No identity annotation (submitted by hand or by an earlier version), being deleted, or nothing of it runs any
   more (the Workflow ended and none of its Volcano Jobs holds a gang): left alone. An ended Workflow may be kept
   on purpose (``on_finish_action``), and it holds nothing.
2. The task instance does not exist: an orphan (its DAG run was deleted), unless Airflow knows no DAG of that id
   at all (another deployment's Workflow, or gc pointed at the wrong metadata database): then left alone.
3. The task instance runs, is deferred, scheduled, queued or up for reschedule in the very try that submitted the
   Workflow: its own run, left alone (a deferred task resumes in the same try).
4. The task instance is over (success, failed, skipped, upstream_failed, removed): an orphan, once ``grace``
   seconds have passed since it ended. The task's own finish clean-up ran before Airflow recorded the end, but
   Argo may still be finishing a Workflow whose Volcano Job just completed; the grace keeps a ``keep_workflow``
   run from being taken for a killed one.
5. A later try runs or is to come (an older try's Workflow; or up_for_retry, restarting, cleared): with
   ``durable=False`` the later try never reattaches, so it is an orphan (after the grace, when the try ended). With
   ``durable`` the later try reattaches to a live Workflow of an earlier try (``_find_live_workflow``): when the
   running or deferred try has recorded the Workflow it follows (the XCom ``argo_workflow``, cleared by Airflow at
   the start of every try), any other is an orphan; until then it is left alone, since it may be the one adopted.
6. Anything else (a try number above the task instance's, a state this code does not know): left alone.

An orphan gets the task's ``on_kill_action``, as the trigger's ``on_kill`` would have applied it had a triggerer
been running: ``delete_workflow`` deletes it (its Volcano Jobs and pods go with it), ``stop_workflow`` stops it and
terminates its gangs (kept for inspection), ``keep_workflow`` leaves it running.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from airflow_provider_volcano_argo.models.phases import VolcanoJobPhase, job_phase, workflow_done
from airflow_provider_volcano_argo.models.policies import CleanupSteps, OnKillAction, kill_steps
from airflow_provider_volcano_argo.models.volcano_commands import jobs_to_terminate

#: The full identity of the task-instance try that submitted the Workflow (JSON).
TASK_INSTANCE_ANNOTATION = "volcano-argo.airflow.apache.org/task-instance"
#: The submitting task's ``on_kill_action``: what the reaper applies to an orphan.
ON_KILL_ANNOTATION = "volcano-argo.airflow.apache.org/on-kill-action"
#: The submitting task's ``durable`` ("true"/"false"): whether a later try may reattach to the Workflow.
DURABLE_ANNOTATION = "volcano-argo.airflow.apache.org/durable"
#: XCom key under which a try records the Workflow it follows (``{"name", "namespace", "uid"}``).
IDENTITY_XCOM_KEY = "argo_workflow"

#: States in which the task instance's ``try_number`` is a try that runs, or will resume, as it is.
CURRENT_TRY_STATES = frozenset({"running", "deferred", "scheduled", "queued", "up_for_reschedule"})
#: States in which its ``try_number`` is a try that ended, and another try is to come (None: cleared).
NEXT_TRY_STATES = frozenset({"up_for_retry", "restarting", None})
#: States after which no try of the task instance follows a Workflow again.
FINAL_STATES = frozenset({"success", "failed", "skipped", "upstream_failed", "removed"})
#: The only states in which a try has recorded, in this try, the Workflow it follows.
FOLLOWING_STATES = frozenset({"running", "deferred"})
#: A Volcano Job in these phases is being stopped already: it no longer counts as a gang that runs.
_STOPPING = frozenset({VolcanoJobPhase.TERMINATING, VolcanoJobPhase.ABORTING})


@dataclass(frozen=True)
class TaskTry:
    """One try of a task instance, as Airflow names it."""

    dag_id: str
    task_id: str
    run_id: str
    map_index: int
    try_number: int

    @property
    def key(self) -> tuple[str, str, str, int]:
        """Return the task instance's primary key (every try shares it)."""
        return (self.dag_id, self.task_id, self.run_id, self.map_index)

    def __str__(self) -> str:
        index = f"[{self.map_index}]" if self.map_index >= 0 else ""
        return f"{self.dag_id}.{self.task_id}{index} run {self.run_id} try {self.try_number}"


def reaper_annotations(task: TaskTry, on_kill_action: str, durable: bool) -> dict[str, str]:
    """Return the annotations a submitted Workflow carries for the reaper."""
    identity = {
        "dag_id": task.dag_id,
        "task_id": task.task_id,
        "run_id": task.run_id,
        "map_index": task.map_index,
        "try_number": task.try_number,
    }
    return {
        TASK_INSTANCE_ANNOTATION: json.dumps(identity, sort_keys=True, separators=(",", ":")),
        ON_KILL_ANNOTATION: OnKillAction(on_kill_action).value,
        DURABLE_ANNOTATION: "true" if durable else "false",
    }


def _task_try(text: str | None) -> TaskTry | None:
    """Read the identity annotation; None when it is absent or not one this code wrote."""
    try:
        data = json.loads(text or "")
        return TaskTry(
            dag_id=str(data["dag_id"]),
            task_id=str(data["task_id"]),
            run_id=str(data["run_id"]),
            map_index=int(data["map_index"]),
            try_number=int(data["try_number"]),
        )
    except (TypeError, ValueError, KeyError):
        return None


@dataclass(frozen=True)
class SubmittedRun:
    """A Workflow the provider submitted, as the reaper sees it.

    :param task: the try that submitted it (None: no identity annotation).
    :param on_kill_action: that task's ``on_kill_action`` (None: not recorded or not one this code knows).
    :param runs: the Workflow has not ended, or one of its Volcano Jobs still holds a gang.
    """

    namespace: str
    name: str
    uid: str
    task: TaskTry | None
    on_kill_action: OnKillAction | None
    durable: bool
    deleting: bool
    runs: bool


def submitted_run(workflow: dict, jobs: list[dict], namespace: str) -> SubmittedRun:
    """Read a Workflow and the namespace's Volcano Jobs into what the reaper judges."""
    meta = workflow["metadata"]
    annotations = meta.get("annotations") or {}
    try:
        on_kill: OnKillAction | None = OnKillAction(annotations.get(ON_KILL_ANNOTATION))
    except ValueError:
        on_kill = None
    gangs = [job for job in jobs_to_terminate(jobs, meta.get("uid")) if job_phase(job) not in _STOPPING]
    return SubmittedRun(
        namespace=namespace,
        name=meta["name"],
        uid=meta.get("uid", ""),
        task=_task_try(annotations.get(TASK_INSTANCE_ANNOTATION)),
        on_kill_action=on_kill,
        durable=annotations.get(DURABLE_ANNOTATION, "true") != "false",  # the operator's default
        deleting=bool(meta.get("deletionTimestamp")),
        runs=not workflow_done(workflow) or bool(gangs),
    )


@dataclass(frozen=True)
class TaskInstanceRecord:
    """A task instance as Airflow has it.

    :param state: its state (None: not yet run, or cleared).
    :param try_number: its latest try.
    :param ended_at: when it last ended (epoch seconds), if it has.
    :param followed_uid: the uid of the Workflow its latest try recorded it follows, if read.
    """

    state: str | None
    try_number: int
    ended_at: float | None = None
    followed_uid: str | None = None


@dataclass(frozen=True)
class Verdict:
    """What to do with one Workflow and why."""

    steps: CleanupSteps
    reason: str

    @property
    def action(self) -> str:
        """Return ``delete``, ``stop`` or ``leave``."""
        return "delete" if self.steps.delete else "stop" if self.steps.stop else "leave"


_NOTHING = CleanupSteps(stop=False, delete=False)


def _leave(reason: str) -> Verdict:
    return Verdict(_NOTHING, reason)


def _orphan(run: SubmittedRun, reason: str) -> Verdict:
    if run.on_kill_action is None:
        return _leave(f"{reason}, but no on_kill_action is recorded on it")
    steps = kill_steps(run.on_kill_action)
    if not steps.needed:
        return _leave(f"{reason}; on_kill_action={run.on_kill_action.value} keeps it")
    return Verdict(steps, f"{reason} (on_kill_action={run.on_kill_action.value})")


def _within_grace(record: TaskInstanceRecord, now: float, grace: float) -> float | None:
    """Return how long ago the task instance ended, when that is less than ``grace`` seconds ago."""
    if record.ended_at is None:
        return None
    age = max(now - record.ended_at, 0.0)
    return age if age < grace else None


def judge(run: SubmittedRun, record: TaskInstanceRecord | None, dag_known: bool, now: float, grace: float) -> Verdict:
    """Decide what the reaper does with ``run`` (the rule set of this module's docstring)."""
    if run.task is None:
        return _leave("no task-instance identity recorded on it (not submitted by this provider version)")
    if run.deleting:
        return _leave("already being deleted")
    if not run.runs:
        return _leave("nothing of it runs any more")
    if record is None:
        if not dag_known:
            return _leave(f"Airflow knows no DAG {run.task.dag_id!r} (another deployment's, or the wrong database?)")
        return _orphan(run, "its task instance no longer exists")
    mine, latest, state = run.task.try_number, record.try_number, record.state
    if mine > latest:
        return _leave(f"its try is newer than the task instance's try {latest}")
    if state in CURRENT_TRY_STATES and mine == latest:
        return _leave(f"its try is {state}")
    if state not in FINAL_STATES | CURRENT_TRY_STATES | NEXT_TRY_STATES:
        return _leave(f"the task instance is {state!r}, a state gc does not judge")
    age = _within_grace(record, now, grace)
    if age is not None:
        return _leave(f"the task instance ended {age:.0f} s ago: its own clean-up has {grace:.0f} s")
    if state in FINAL_STATES:
        return _orphan(run, f"the task instance is {state}")
    shown = state or "cleared"
    later = f"try {latest} is {shown}" if mine < latest else f"try {mine} is {shown}, another is to come"
    if not run.durable:
        return _orphan(run, f"{later} and never reattaches (durable=False)")
    if state in FOLLOWING_STATES and mine < latest and record.followed_uid:
        if record.followed_uid == run.uid:
            return _leave(f"adopted: {later} and follows it")
        return _orphan(run, f"{later} and follows another Workflow")
    return _leave(f"{later} and may reattach to it (durable)")


def verdict_line(run: SubmittedRun, verdict: Verdict, applied: bool) -> str:
    """Return the one line gc prints for a Workflow: what it does (or would do), which run, why."""
    if verdict.action == "leave":
        verb = "leave"
    else:
        verb = {"delete": "deleted", "stop": "stopped"}[verdict.action] if applied else f"would {verdict.action}"
    who = str(run.task) if run.task else "no task instance"
    return f"{verb} {run.namespace}/{run.name} ({who}): {verdict.reason}"
