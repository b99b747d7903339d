"""Follow one Argo Workflow and the Volcano Jobs it creates until the outcome is known.

Run by the trigger (in the triggerer) and by blocking mode (in the worker): watches (not polls) the Workflow, its
Volcano Jobs and their log-task pods, writes progress lines and the chosen task's log into the task log, keeps
its log cursors on the Workflow (``engine/cursor_keeper.py``), and returns one ``FollowEvent`` (the trigger's event
payload).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.engine.cursor_keeper import CursorKeeper
from airflow_provider_volcano_argo.engine.follow_loop import FollowLoop
from airflow_provider_volcano_argo.engine.informer import SharedObjectWatcher
from airflow_provider_volcano_argo.engine.pod_log_forwarder import PodLogForwarder
from airflow_provider_volcano_argo.engine.pod_waiting import PodWaitingReporter
from airflow_provider_volcano_argo.exceptions import VolcanoArgoApiError
from airflow_provider_volcano_argo.models.admission import (
    attempt_key,
    overdue_for_admission,
    podgroup_admitted,
    pods_bound,
    unschedulable_reasons,
)
from airflow_provider_volcano_argo.models.container_instances import exit_codes
from airflow_provider_volcano_argo.models.follow import (
    FollowOutcome,
    FollowSpec,
    deadline_outcome,
    decide,
    follows_job,
    jobs_outliving,
    outliving_line,
    owned_by,
)
from airflow_provider_volcano_argo.models.log_cursor import CursorBook
from airflow_provider_volcano_argo.models.names import CURSOR_ANNOTATION, VOLCANO_JOB_NAME_LABEL, podgroup_name
from airflow_provider_volcano_argo.models.owned_labels import LABELLED_JOBS, LABELLED_PODS, LABELLED_WORKFLOW
from airflow_provider_volcano_argo.models.phases import job_phase, workflow_message, workflow_phase
from airflow_provider_volcano_argo.models.progress import heartbeat_line, job_change_line, workflow_change_line
from airflow_provider_volcano_argo.models.resources import EVENTS, PODGROUPS, PODS, VOLCANO_JOBS, WORKFLOWS
from airflow_provider_volcano_argo.models.results import FollowEvent, job_summary, workflow_summary
from airflow_provider_volcano_argo.models.selectors import name_selector, task_pods_selector, with_owned

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook

HEARTBEAT_SECONDS = 60.0


class WorkflowFollower(FollowLoop):
    """Watches, streams and decides; ``run()`` returns the event."""

    def __init__(
        self,
        hook: AsyncVolcanoArgoHook,
        spec: FollowSpec,
        book: CursorBook | None = None,
        emit: Callable[[str], None] = print,
    ):
        self.hook = hook
        self.spec = spec
        self.book = book or CursorBook()
        self.emit = emit
        self.workflow: dict | None = None
        self.workflow_gone = False
        self.jobs: dict[str, dict] = {}
        self.jobs_gone: set[str] = set()
        self._unclaimed: dict[str, dict] = {}  # Jobs listed before the Workflow's uid was known
        self._listed: set[str] = set()
        super().__init__(
            PodLogForwarder(
                hook,
                spec.namespace,
                task_pods_selector(spec.log_task, spec.job_name, owned=LABELLED_PODS in spec.labelled),
                spec.container,
                jobs=lambda: set(self.jobs),
                book=self.book,
                emit=emit,
                prefix_job_names=spec.prefix_job_names,
                on_change=self._changed,
                poll_interval=spec.log_poll_interval,
            ),
            CursorKeeper(self.book, self._store_cursors),
        )
        self.logs: PodLogForwarder
        self.keeper: CursorKeeper
        self.logs.paused = True  # until the saved cursors are known (first list of the Workflow)
        self.started = time.monotonic()
        self._last_heartbeat = time.monotonic()
        self._phases: dict[str, str] = {}
        self._told_outliving = False
        self._admitted: set[str] = set()  # attempt keys (models.admission) the gang scheduler admitted
        self._job_pods: dict[str, list[dict]] = {}  # every pod of each Job, listed once the outcome is known
        self.waiting = PodWaitingReporter(hook, spec.namespace, emit, events_interval=HEARTBEAT_SECONDS)

    def _changed(self) -> None:
        self.changed.set()

    # -- watch callbacks ---------------------------------------------------------------------------------
    def _synced(self) -> bool:
        """Tell whether every watcher has listed once (until then a missing Job or pod means "not seen yet")."""
        return {"workflow", "jobs"} <= self._listed and (self.logs.synced or not self.spec.stream_logs)

    async def _on_workflow(self, kind: str, obj: dict) -> None:
        if kind == "SYNCED":
            items = obj["items"]
            if "workflow" not in self._listed:
                self._listed.add("workflow")
                self._resume_from(items[0] if items else None)
            if items:
                self.workflow = items[0]
            elif self.workflow is not None:
                self.workflow_gone = True
        elif kind == "DELETED":
            self.workflow_gone = True
        else:
            self.workflow = obj
        if self.workflow and not self.spec.workflow_uid:
            self.spec.workflow_uid = self.workflow["metadata"]["uid"]
            claimed = {n: j for n, j in self._unclaimed.items() if follows_job(self.spec, j)}
            self.jobs.update(claimed)
            self._unclaimed.clear()
            if claimed and self.spec.stream_logs:
                self.logs.start_streams()
        self.changed.set()

    async def _on_job(self, kind: str, obj: dict) -> None:
        items = obj["items"] if kind == "SYNCED" else [obj]
        if kind == "SYNCED":
            self._listed.add("jobs")
            present = {j["metadata"]["name"] for j in items}
            self.jobs_gone |= {name for name in self.jobs if name not in present}
            self._unclaimed.clear()
        for job in items:
            name = job["metadata"]["name"]
            if not self.spec.workflow_uid:  # whose it is is known with the Workflow
                if kind == "DELETED":
                    self._unclaimed.pop(name, None)
                else:
                    self._unclaimed[name] = job
                continue
            if not follows_job(self.spec, job):
                continue  # e.g. an earlier run's Job under a fixed job_name: never this run's
            if kind == "DELETED":
                self.jobs_gone.add(name)
            else:
                self.jobs[name] = job
        if self.spec.stream_logs:
            self.logs.start_streams()
        self.changed.set()

    # -- progress and persistence ------------------------------------------------------------------------
    def _report_progress(self) -> None:
        if self.workflow is not None:
            phase = workflow_phase(self.workflow)
            old = self._phases.get("workflow")
            if old != phase:
                message = workflow_message(self.workflow) or None
                self.emit(workflow_change_line(self.spec.workflow_name, old or "", phase, message))
                self._phases["workflow"] = phase
        for name, job in sorted(self.jobs.items()):
            phase = job_phase(job)
            old = self._phases.get(name)
            if old != phase and phase:
                self.emit(job_change_line(name, old or "", phase, job))
                self._phases[name] = phase
        outliving = jobs_outliving(self.workflow, self.jobs)
        if outliving and not self._told_outliving:
            self._told_outliving = True
            self.emit(outliving_line(self.spec.workflow_name, self.workflow, outliving))
        if time.monotonic() - self._last_heartbeat >= HEARTBEAT_SECONDS:
            self._last_heartbeat = time.monotonic()
            for name, job in sorted(self.jobs.items()):
                self.emit(heartbeat_line(name, job, time.monotonic() - self.started))

    def _resume_from(self, workflow: dict | None) -> None:
        """Take up the cursors the last follower saved on the Workflow (a restarted triggerer), then stream.

        They come with the Workflow watch's first list, so resuming costs no request of its own.
        """
        saved = ((workflow or {}).get("metadata", {}).get("annotations") or {}).get(CURSOR_ANNOTATION)
        cursors = None
        if saved:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                cursors = CursorBook.from_dict(json.loads(saved)).to_dict()
        self.keeper.take_up(cursors)
        self.logs.paused = False
        if self.spec.stream_logs:
            self.logs.start_streams()

    async def _store_cursors(self, cursors: dict) -> bool:
        """Store the cursors on the Workflow (one PATCH), where a new follower takes them up."""
        patch = {"metadata": {"annotations": {CURSOR_ANNOTATION: json.dumps(cursors)}}}
        try:
            await self.hook.patch_object(WORKFLOWS, self.spec.workflow_name, patch, self.spec.namespace)
        except VolcanoArgoApiError:  # e.g. the Workflow is gone: only a hard kill's repeats depend on it
            return False
        return True

    async def _unschedulable_reasons(self) -> list[str]:
        """Say why each Job's gang waits: its PodGroup's condition, else the Events recorded on the PodGroup."""
        reasons: list[str] = []
        for job in self.jobs.values():
            name = podgroup_name(job)
            group = await self.hook.get_object(PODGROUPS, name, self.spec.namespace)
            events: list[dict] = []
            if group is not None:
                try:
                    selector = f"involvedObject.kind=PodGroup,involvedObject.name={name}"
                    listed = await self.hook.list_objects(EVENTS, self.spec.namespace, field_selector=selector)
                    events = listed.get("items") or []
                except VolcanoArgoApiError as exc:  # the task fails anyway: say what could not be read, and why
                    reasons.append(f"The Events of PodGroup {name} could not be read: {exc}")
            reasons.extend(unschedulable_reasons(group, events))
        return reasons

    def _admitted_attempts(self) -> set[str]:
        """Return the attempts known to be admitted: remembered ones, and those whose watched pods are bound."""
        for job in self.jobs.values():
            if pods_bound(self.logs.pods.values(), job):
                self._admitted.add(attempt_key(job))
        return self._admitted

    async def _confirm_admissions(self, now: float) -> bool:
        """Ask the PodGroups of the Jobs about to fail ``schedule_timeout`` whether their gang was scheduled.

        The pod watch sees only the log task's pods (a master that ``dependsOn`` its workers has none yet): the
        PodGroup's phase says it for the whole gang. Return whether one was.
        """
        found = False
        overdue = overdue_for_admission(self.jobs, self._admitted, self.spec.schedule_timeout or 0.0, now)
        for name in overdue:
            job = self.jobs[name]
            group = await self.hook.get_object(PODGROUPS, podgroup_name(job), self.spec.namespace)
            if podgroup_admitted(group):
                self._admitted.add(attempt_key(job))
                found = True
        return found

    # -- the follow loop's steps -------------------------------------------------------------------------
    def watchers(self) -> list[SharedObjectWatcher]:
        """Return the watches of the Workflow, its Jobs and their log-task pods, shared by every run of the namespace.

        Each selects on the API server by the provider's label where the run's objects carry it
        (``FollowSpec.labelled``), and picks its run's objects out locally.
        """
        ns, labelled = self.spec.namespace, self.spec.labelled
        job_selector = name_selector(self.spec.job_name) if self.spec.job_name else None
        watchers = [
            SharedObjectWatcher(
                self.hook,
                WORKFLOWS,
                ns,
                self._on_workflow,
                field_selector=name_selector(self.spec.workflow_name),
                label_selector=with_owned(None, LABELLED_WORKFLOW in labelled),
            ),
            SharedObjectWatcher(
                self.hook,
                VOLCANO_JOBS,
                ns,
                self._on_job,
                field_selector=job_selector,
                label_selector=with_owned(None, LABELLED_JOBS in labelled),
            ),
        ]
        if self.spec.stream_logs:
            watchers.append(self.logs.watcher())
        return watchers

    async def step(self, now: float) -> FollowOutcome | None:
        self._report_progress()
        if self.spec.stream_logs:  # why the log task's containers do not start, from the pods watched already
            await self.waiting.report(self.logs.pods.values(), set(self.jobs))
        if not self._synced():  # decide on a complete picture (a job that ended before we looked, and its log),
            return deadline_outcome(self.spec, now)  # but the deadline holds while nothing could be listed
        outcome = self._decide(now)
        if outcome and outcome.reason == "unschedulable" and await self._confirm_admissions(now):
            outcome = self._decide(now)
        if outcome and outcome.reason == "unschedulable":
            outcome.details = await self._unschedulable_reasons()
        return outcome

    def _decide(self, now: float) -> FollowOutcome | None:
        admitted = self._admitted_attempts()
        return decide(self.spec, self.workflow, self.workflow_gone, self.jobs, self.jobs_gone, now, admitted)

    async def before_drain(self, outcome: FollowOutcome) -> None:
        self._report_progress()
        if outcome.run_ended:  # a run cut short (deadline, API errors) keeps the counts its Jobs' status has
            await self._list_job_pods()

    async def _list_job_pods(self) -> None:
        """List every pod of each Job once (all tasks): the per-task results come from them, not the Job's status.

        A Job that ended reports no per-task counts since Volcano v1.11 (volcano#4616); its finished pods remain.
        On an API error the Job's status stands in.
        """
        for name in sorted(self.jobs):
            try:
                listed = await self.hook.list_objects(
                    PODS, self.spec.namespace, label_selector=f"{VOLCANO_JOB_NAME_LABEL}={name}"
                )
            except VolcanoArgoApiError:
                continue
            uid = self.jobs[name]["metadata"].get("uid")
            self._job_pods[name] = [pod for pod in listed.get("items") or [] if owned_by(pod, uid)]
            if self.spec.stream_logs:  # the last instances the pod watch may not have delivered yet
                self.logs.catch_up(self._job_pods[name])

    async def run(self) -> FollowEvent:
        """Follow until the outcome is known; always return an event (errors become ``status: error``)."""
        return self.result(await self.follow())

    def result(self, outcome: FollowOutcome) -> FollowEvent:
        """Build the event: outcome, Workflow and Job summaries, log tails and the cursors."""
        return {
            "status": outcome.status,
            "message": outcome.message,
            "reason": outcome.reason,
            "details": outcome.details,
            "namespace": self.spec.namespace,
            "workflow": workflow_summary(self.spec.workflow_name, self.spec.workflow_uid, self.workflow),
            "jobs": [job_summary(j, self._job_pods.get(n)) for n, j in sorted(self.jobs.items())],
            "tails": self.logs.tails(),
            "lines_streamed": self.logs.lines_emitted,
            "exit_codes": exit_codes(self.logs.pods.values(), self.spec.container, set(self.jobs)),
            "log_book": self.book.to_dict(),
        }
