"""``volcano-argo gc``: clean up the Workflows whose task-instance try is gone, even when no triggerer saw the kill.

A task marked failed or cleared while no triggerer runs its trigger never gets the trigger's ``on_kill``; its
Workflow and gang would run on. gc lists the Workflows the provider submitted (``app.kubernetes.io/managed-by``),
reads each one's task instance, and applies the task's ``on_kill_action`` to the orphans: the decision is
``models/reaping.py: judge``, a pure function; this module only reads and acts.

Where the task-instance state comes from: Airflow's metadata database, through Airflow's own models and session
(``airflow.models.TaskInstance``, ``create_session``), as ``airflow tasks state`` reads it. gc runs on an Airflow
host (the scheduler's or API server's image, a sidecar or cron job of it) whose configuration already reaches the
database, so it needs no API credentials, no user with rights on every DAG, and no page-through of the REST API:
one session per pass, a primary-key lookup per task instance. The REST API would need credentials of its own (a
token from the auth manager, for a user allowed to read every DAG gc may judge), and a DAG that user may not see
would read as a deleted run. The database also tells a DAG it knows from one it does not (another deployment's
Workflow, or gc pointed at the wrong database), which keeps a missing task instance from being taken for a
deleted run by mistake.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.exceptions import VolcanoArgoApiError
from airflow_provider_volcano_argo.models.phases import workflow_done
from airflow_provider_volcano_argo.models.reaping import (
    FOLLOWING_STATES,
    IDENTITY_XCOM_KEY,
    SubmittedRun,
    TaskInstanceRecord,
    TaskTry,
    judge,
    submitted_run,
    verdict_line,
)
from airflow_provider_volcano_argo.models.resources import WORKFLOWS
from airflow_provider_volcano_argo.models.selectors import OWNED_SELECTOR

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.connection import KubernetesConnection
    from airflow_provider_volcano_argo.hooks.volcano_argo import VolcanoArgoHook

#: Seconds after a task instance ended before its Workflow is judged an orphan (see ``models/reaping.py``).
DEFAULT_GRACE = 60.0


@dataclass
class AirflowView:
    """The task instances of one pass, by key, and the DAG ids Airflow knows."""

    records: dict[tuple[str, str, str, int], TaskInstanceRecord] = field(default_factory=dict)
    known_dags: set[str] = field(default_factory=set)


def list_submitted(hook: VolcanoArgoHook, namespace: str) -> list[SubmittedRun]:
    """Return the Workflows the provider submitted in ``namespace``, with whether each still holds a gang.

    Only an ended Workflow's Jobs matter (a running Workflow runs anyway): they are listed by the provider's label,
    and all of the namespace's only when an ended Workflow owns none of those (a template without the label, or
    Jobs already gone), as a stop lists them.
    """
    workflows = hook.list_objects(WORKFLOWS, namespace, OWNED_SELECTOR)
    ended = [workflow["metadata"].get("uid") for workflow in workflows if workflow_done(workflow)]
    jobs = hook.list_workflows_jobs(namespace, ended) if ended else []
    return [submitted_run(workflow, jobs, namespace) for workflow in workflows]


def read_airflow(tasks: Iterable[TaskTry]) -> AirflowView:
    """Read the task instances of ``tasks`` from Airflow's metadata database, in one session."""
    from airflow.models.dag import DagModel
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    keys = {task.key for task in tasks}
    view = AirflowView()
    if not keys:
        return view
    with create_session() as session:
        dag_ids = {key[0] for key in keys}
        view.known_dags = set(session.scalars(select(DagModel.dag_id).where(DagModel.dag_id.in_(dag_ids))))
        for key in keys:
            dag_id, task_id, run_id, map_index = key
            row = session.execute(
                select(TaskInstance.state, TaskInstance.try_number, TaskInstance.end_date).where(
                    TaskInstance.dag_id == dag_id,
                    TaskInstance.task_id == task_id,
                    TaskInstance.run_id == run_id,
                    TaskInstance.map_index == map_index,
                )
            ).first()
            if row is None:
                continue
            state = None if row.state is None else str(getattr(row.state, "value", row.state))
            view.records[key] = TaskInstanceRecord(
                state=state,
                try_number=int(row.try_number or 0),
                ended_at=row.end_date.timestamp() if row.end_date else None,
                followed_uid=_followed_uid(session, key) if state in FOLLOWING_STATES else None,
            )
    return view


def _followed_uid(session, key: tuple[str, str, str, int]) -> str | None:
    """Return the uid of the Workflow the task instance's running try recorded it follows (XCom), if any.

    With a custom XCom backend the database holds a reference, not the identity: then None (left alone).
    """
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    dag_id, task_id, run_id, map_index = key
    row = session.scalars(
        select(XComModel).where(
            XComModel.dag_id == dag_id,
            XComModel.task_id == task_id,
            XComModel.run_id == run_id,
            XComModel.map_index == map_index,
            XComModel.key == IDENTITY_XCOM_KEY,
        )
    ).first()
    value = XComModel.deserialize_value(row) if row is not None else None
    uid = value.get("uid") if isinstance(value, dict) else None
    return uid if isinstance(uid, str) and uid else None


def sweep(
    connection: KubernetesConnection,
    namespaces: list[str],
    *,
    apply: bool,
    grace: float = DEFAULT_GRACE,
    quiet: bool = False,
    emit: Callable[[str], None] = print,
) -> bool:
    """Judge every submitted Workflow in ``namespaces`` once, and clean up the orphans when ``apply``.

    Print one line per Workflow (with ``quiet``, only those to clean up). Return False when an API call failed.
    """
    hook = connection.hook()  # a fresh client every pass: an in-cluster token is re-read as it rotates
    ok = True
    for namespace in namespaces:
        try:
            runs = list_submitted(hook, namespace)
        except VolcanoArgoApiError as exc:
            print(f"error: {namespace}: {exc}", file=sys.stderr)
            ok = False
            continue
        view = read_airflow(run.task for run in runs if run.task is not None)
        now = time.time()
        for run in runs:
            record = view.records.get(run.task.key) if run.task else None
            dag_known = run.task is not None and run.task.dag_id in view.known_dags
            verdict = judge(run, record, dag_known, now, grace)
            if not verdict.steps.needed:
                if not quiet:
                    emit(verdict_line(run, verdict, applied=False))
                continue
            if apply:
                try:
                    hook.clean_up_workflow(run.name, namespace, verdict.steps)
                except VolcanoArgoApiError as exc:
                    print(f"error: {namespace}/{run.name}: {exc}", file=sys.stderr)
                    ok = False
                    continue
            emit(verdict_line(run, verdict, applied=apply))
    return ok


def run(
    connection: KubernetesConnection,
    namespaces: list[str],
    *,
    apply: bool,
    grace: float = DEFAULT_GRACE,
    every: float | None = None,
    quiet: bool = False,
) -> int:
    """Sweep once (exit status 1 if an API call failed), or every ``every`` seconds until stopped."""
    while True:
        try:
            ok = sweep(connection, namespaces, apply=apply, grace=grace, quiet=quiet)
        except Exception as exc:  # a loop that runs as a sidecar outlives a database or cluster outage
            if every is None:
                raise
            print(f"error: this pass failed, next in {every:.0f} s: {exc}", file=sys.stderr)
            ok = False
        sys.stdout.flush()
        if every is None:
            return 0 if ok else 1
        time.sleep(every)
