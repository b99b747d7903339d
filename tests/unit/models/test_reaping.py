"""What ``volcano-argo gc`` does with each Workflow: the rule set of ``models/reaping.py`` as a table of cases."""

from __future__ import annotations

import dataclasses
import json

import pytest

from airflow_provider_volcano_argo.models.names import safe_label_value
from airflow_provider_volcano_argo.models.policies import CleanupSteps, OnKillAction
from airflow_provider_volcano_argo.models.reaping import (
    DURABLE_ANNOTATION,
    ON_KILL_ANNOTATION,
    TASK_INSTANCE_ANNOTATION,
    SubmittedRun,
    TaskInstanceRecord,
    TaskTry,
    Verdict,
    judge,
    reaper_annotations,
    submitted_run,
    verdict_line,
)

NOW = 10_000.0
GRACE = 60.0
LONG_AGO = NOW - 3600
TASK = TaskTry("etl", "mpi", "manual__2026-01-01T00:00:00+00:00", -1, 2)
DELETE = CleanupSteps(stop=True, delete=True)
STOP = CleanupSteps(stop=True, delete=False)
LEAVE = CleanupSteps(stop=False, delete=False)
STOP_WF, KEEP_WF = OnKillAction.STOP_WORKFLOW, OnKillAction.KEEP_WORKFLOW


def _run(**changes) -> SubmittedRun:
    base = SubmittedRun(
        namespace="ns",
        name="wf",
        uid="uid-wf",
        task=TASK,
        on_kill_action=OnKillAction.DELETE_WORKFLOW,
        durable=True,
        deleting=False,
        runs=True,
    )
    return dataclasses.replace(base, **changes)


def _ti(state, try_number=2, ended_at=None, followed_uid=None) -> TaskInstanceRecord:
    return TaskInstanceRecord(state=state, try_number=try_number, ended_at=ended_at, followed_uid=followed_uid)


CASES = [
    # (case, run, task instance, dag known, steps, reason contains)
    ("no identity: never touched", _run(task=None), None, False, LEAVE, "no task-instance identity"),
    ("being deleted", _run(deleting=True), _ti("failed", ended_at=LONG_AGO), True, LEAVE, "being deleted"),
    ("ended, holds nothing", _run(runs=False), _ti("failed", ended_at=LONG_AGO), True, LEAVE, "nothing of it runs"),
    ("DAG run deleted", _run(), None, True, DELETE, "no longer exists"),
    ("DAG unknown to this Airflow", _run(), None, False, LEAVE, "Airflow knows no DAG 'etl'"),
    ("its try runs", _run(), _ti("running"), True, LEAVE, "its try is running"),
    ("its try is deferred", _run(), _ti("deferred"), True, LEAVE, "its try is deferred"),
    ("resuming after deferral", _run(), _ti("scheduled"), True, LEAVE, "its try is scheduled"),
    ("queued to resume", _run(), _ti("queued"), True, LEAVE, "its try is queued"),
    ("up for reschedule", _run(), _ti("up_for_reschedule"), True, LEAVE, "its try is up_for_reschedule"),
    ("marked failed, no triggerer", _run(), _ti("failed", ended_at=LONG_AGO), True, DELETE, "is failed"),
    ("marked success", _run(), _ti("success", ended_at=LONG_AGO), True, DELETE, "is success"),
    ("skipped", _run(), _ti("skipped", ended_at=LONG_AGO), True, DELETE, "is skipped"),
    ("upstream_failed", _run(), _ti("upstream_failed"), True, DELETE, "is upstream_failed"),
    ("removed, no end date", _run(), _ti("removed"), True, DELETE, "is removed"),
    ("failed a moment ago", _run(), _ti("failed", ended_at=NOW - 5), True, LEAVE, "ended 5 s ago"),
    ("failed just past the grace", _run(), _ti("failed", ended_at=NOW - GRACE), True, DELETE, "is failed"),
    ("stop_workflow", _run(on_kill_action=STOP_WF), _ti("failed"), True, STOP, "stop_workflow"),
    ("keep_workflow", _run(on_kill_action=KEEP_WF), _ti("failed"), True, LEAVE, "keep_workflow keeps it"),
    ("no kill policy recorded", _run(on_kill_action=None), _ti("failed"), True, LEAVE, "no on_kill_action"),
    # a later try runs or is to come: durable reattaches, durable=False never does
    ("up for retry, durable", _run(), _ti("up_for_retry", ended_at=LONG_AGO), True, LEAVE, "may reattach"),
    ("cleared, durable", _run(), _ti(None), True, LEAVE, "try 2 is cleared, another is to come"),
    ("restarting, durable", _run(), _ti("restarting"), True, LEAVE, "may reattach"),
    ("up for retry, not durable", _run(durable=False), _ti("up_for_retry"), True, DELETE, "durable=False"),
    ("cleared, not durable", _run(durable=False), _ti(None), True, DELETE, "never reattaches"),
    ("retry ended a moment ago", _run(durable=False), _ti("up_for_retry", ended_at=NOW - 1), True, LEAVE, "1 s ago"),
    ("next try queued, durable", _run(), _ti("queued", 3), True, LEAVE, "try 3 is queued and may reattach"),
    ("next try runs, not durable", _run(durable=False), _ti("running", 3), True, DELETE, "try 3 is running"),
    ("next try runs, not yet recorded", _run(), _ti("running", 3), True, LEAVE, "may reattach"),
    ("next try adopted it", _run(), _ti("deferred", 3, followed_uid="uid-wf"), True, LEAVE, "adopted"),
    ("next try follows another", _run(), _ti("deferred", 3, followed_uid="uid-x"), True, DELETE, "another Workflow"),
    ("next try resumes, its XCom unread", _run(), _ti("scheduled", 3, followed_uid="x"), True, LEAVE, "may reattach"),
    ("a later try, task over", _run(), _ti("failed", 3), True, DELETE, "is failed"),
    ("try newer than the TI's", _run(), _ti("failed", 1), True, LEAVE, "newer than the task instance's try 1"),
    ("a state gc does not know", _run(), _ti("awaiting_input"), True, LEAVE, "does not judge"),
]


@pytest.mark.parametrize(
    ("run", "record", "dag_known", "steps", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_judge(run, record, dag_known, steps, reason):
    verdict = judge(run, record, dag_known, NOW, GRACE)
    assert verdict.steps == steps
    assert reason in verdict.reason


def _workflow(annotations=None, phase="Running", uid="uid-wf", **meta) -> dict:
    return {
        "metadata": {"name": "wf", "uid": uid, "annotations": annotations or {}, **meta},
        "status": {"phase": phase},
    }


def _job(phase: str, owner: str = "uid-wf") -> dict:
    return {
        "metadata": {"name": f"job-{phase}", "uid": f"job-{phase}", "ownerReferences": [{"uid": owner}]},
        "status": {"state": {"phase": phase}},
    }


def test_the_annotations_carry_the_full_identity_where_labels_carry_hashes():
    annotations = reaper_annotations(TASK, "stop_workflow", durable=False)
    assert safe_label_value(TASK.run_id) != TASK.run_id  # ':' and '+' are no label characters: hashed
    assert json.loads(annotations[TASK_INSTANCE_ANNOTATION])["run_id"] == TASK.run_id
    run = submitted_run(_workflow(annotations), [], "ns")
    assert (run.task, run.on_kill_action, run.durable) == (TASK, "stop_workflow", False)
    assert (run.namespace, run.name, run.uid, run.deleting, run.runs) == ("ns", "wf", "uid-wf", False, True)


def test_an_unknown_kill_policy_is_refused_at_submission():
    with pytest.raises(ValueError):
        reaper_annotations(TASK, "nuke", durable=True)


@pytest.mark.parametrize("text", [None, "", "not json", "[]", '{"dag_id": "d"}', '{"map_index": "x"}'])
def test_an_identity_not_written_by_this_code_is_none(text):
    annotations = {TASK_INSTANCE_ANNOTATION: text} if text is not None else {}
    assert submitted_run(_workflow(annotations), [], "ns").task is None


def test_a_missing_or_unknown_kill_policy_reads_as_none_and_durable_defaults_to_true():
    run = submitted_run(_workflow({ON_KILL_ANNOTATION: "nuke"}), [], "ns")
    assert (run.on_kill_action, run.durable) == (None, True)
    assert submitted_run(_workflow({DURABLE_ANNOTATION: "true"}), [], "ns").durable is True


@pytest.mark.parametrize(
    ("phase", "jobs", "runs"),
    [
        ("Running", [], True),
        ("", [], True),  # not yet seen by Argo's controller
        ("Failed", [], False),
        ("Succeeded", [_job("Completed")], False),
        ("Failed", [_job("Running")], True),  # Argo's shutdown stopped its pods, not the gang
        ("Failed", [_job("Pending")], True),
        ("Failed", [_job("Terminating")], False),  # being stopped already
        ("Failed", [_job("Aborting")], False),
        ("Failed", [_job("Running", owner="uid-other")], False),  # another Workflow's gang
    ],
)
def test_a_run_runs_while_its_workflow_has_not_ended_or_one_of_its_gangs_holds_nodes(phase, jobs, runs):
    assert submitted_run(_workflow(phase=phase), jobs, "ns").runs is runs


def test_a_workflow_being_deleted_says_so():
    assert submitted_run(_workflow(deletionTimestamp="2026-01-01T00:00:00Z"), [], "ns").deleting


@pytest.mark.parametrize(
    ("steps", "applied", "start"),
    [
        (DELETE, False, "would delete ns/wf "),
        (DELETE, True, "deleted ns/wf "),
        (STOP, False, "would stop ns/wf "),
        (STOP, True, "stopped ns/wf "),
        (LEAVE, False, "leave ns/wf "),
        (LEAVE, True, "leave ns/wf "),
    ],
)
def test_one_line_per_workflow_says_what_which_run_and_why(steps, applied, start):
    line = verdict_line(_run(), Verdict(steps, "because"), applied)
    assert line == f"{start}(etl.mpi run manual__2026-01-01T00:00:00+00:00 try 2): because"


def test_the_line_names_a_mapped_index_and_a_run_without_identity():
    mapped = _run(task=dataclasses.replace(TASK, map_index=4))
    assert "(etl.mpi[4] run " in verdict_line(mapped, Verdict(LEAVE, "x"), False)
    assert "(no task instance)" in verdict_line(_run(task=None), Verdict(LEAVE, "x"), False)
