"""Follow one Argo Workflow and the Volcano Jobs it creates until the outcome is known.

Shared by the trigger (in the triggerer) and the blocking mode (in the worker): watches (not polls) the Workflow,
its Volcano Jobs and their log-task pods, writes progress lines and the chosen task's log into the task log,
and returns one result dict (the trigger's event payload).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from airflow_provider_volcano_argo.errors import KubernetesApiError
from airflow_provider_volcano_argo.follower_rules import (
    CURSOR_ANNOTATION,
    FollowOutcome,
    decide,
    exit_codes,
    owned_by,
)
from airflow_provider_volcano_argo.hooks.volcano_argo import (
    PODGROUPS,
    VOLCANO_JOBS,
    WORKFLOWS,
    AsyncVolcanoArgoHook,
)
from airflow_provider_volcano_argo.log_streams import CursorBook, PodLogForwarder
from airflow_provider_volcano_argo.progress import job_change_line, job_phase, job_result, workflow_change_line
from airflow_provider_volcano_argo.shared_watches import SharedObjectWatcher

#: A triggerer that stops cleanly saves the cursors as it goes; the periodic save only bounds what a crashed one
#: repeats, so it is rare (each save is an API request, benchmarks/api_load.py).
CURSOR_SAVE_SECONDS = 120.0
HEARTBEAT_SECONDS = 60.0


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class WorkflowFollower:
    """Watches, streams and decides; ``run()`` returns the result dict."""

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
        self.changed = asyncio.Event()
        self._listed: set[str] = set()
        pod_labels = f"volcano.sh/task-spec={spec.log_task}"
        if spec.job_name:
            pod_labels += f",volcano.sh/job-name={spec.job_name}"
        self.logs = PodLogForwarder(
            hook,
            spec.namespace,
            pod_labels,
            spec.log_container or spec.log_task,
            jobs=lambda: set(self.jobs),
            book=self.book,
            emit=emit,
            prefix_job_names=spec.prefix_job_names,
            on_change=self.changed.set,
            poll_interval=spec.log_poll_interval,
        )
        self.logs.paused = True  # until the saved cursors are known (first list of the Workflow)
        self.started = time.monotonic()
        self._last_save = time.monotonic()
        self._saved: str | None = None  # the cursors as last stored on the Workflow
        self._last_heartbeat = time.monotonic()
        self._phases: dict[str, str] = {}

    # -- watch callbacks ---------------------------------------------------------------------------------
    def _synced(self) -> bool:
        """Every watcher has listed once (until then a missing Job or pod only means "not seen yet")."""
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
        self.changed.set()

    async def _on_job(self, kind: str, obj: dict) -> None:
        items = obj["items"] if kind == "SYNCED" else [obj]
        if kind == "SYNCED":
            self._listed.add("jobs")
            present = {j["metadata"]["name"] for j in items}
            self.jobs_gone |= {name for name in self.jobs if name not in present}
        for job in items:
            if not self._tracks(job):
                continue
            name = job["metadata"]["name"]
            if kind == "DELETED":
                self.jobs_gone.add(name)
            else:
                self.jobs[name] = job
        if self.spec.stream_logs:
            self.logs.start_streams()
        self.changed.set()

    def _tracks(self, job: dict) -> bool:
        if self.spec.job_name:
            return job["metadata"]["name"] == self.spec.job_name
        return owned_by(job, self.spec.workflow_uid)

    # -- progress and persistence ------------------------------------------------------------------------
    def _report_progress(self) -> None:
        if self.workflow is not None:
            phase = (self.workflow.get("status") or {}).get("phase", "") or ""
            old = self._phases.get("workflow")
            if old != phase:
                message = (self.workflow.get("status") or {}).get("message")
                self.emit(workflow_change_line(self.spec.workflow_name, old or "", phase, message))
                self._phases["workflow"] = phase
        for name, job in sorted(self.jobs.items()):
            phase = job_phase(job)
            old = self._phases.get(name)
            if old != phase and phase:
                self.emit(job_change_line(name, old or "", phase, job))
                self._phases[name] = phase
        if time.monotonic() - self._last_heartbeat >= HEARTBEAT_SECONDS:
            self._last_heartbeat = time.monotonic()
            elapsed = int(time.monotonic() - self.started)
            for name, job in sorted(self.jobs.items()):
                self.emit(
                    f"{job_change_line(name, job_phase(job), job_phase(job), job)} {elapsed // 60}m{elapsed % 60:02d}s"
                )

    def _resume_from(self, workflow: dict | None) -> None:
        """Take up the cursors the last follower saved on the Workflow (a restarted triggerer), then stream.

        They come with the Workflow watch's first list, so resuming costs no request of its own."""
        saved = ((workflow or {}).get("metadata", {}).get("annotations") or {}).get(CURSOR_ANNOTATION)
        if saved:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                self.book.merge(CursorBook.from_dict(json.loads(saved)))
        self.logs.paused = False
        if self.spec.stream_logs:
            self.logs.start_streams()

    async def save_cursors(self) -> None:
        """Store the cursors on the Workflow, so that a new follower repeats no line (unless nothing moved)."""
        self._last_save = time.monotonic()
        saved = json.dumps(self.book.to_dict())
        if saved == self._saved:
            return
        patch = {"metadata": {"annotations": {CURSOR_ANNOTATION: saved}}}
        with contextlib.suppress(KubernetesApiError):
            await self.hook.patch_object(WORKFLOWS, self.spec.workflow_name, patch, self.spec.namespace)
            self._saved = saved

    async def _unschedulable_reasons(self) -> list[str]:
        reasons: list[str] = []
        for job in self.jobs.values():
            group = await self.hook.get_object(
                PODGROUPS, f"{job['metadata']['name']}-{job['metadata']['uid']}", self.spec.namespace
            )
            for cond in ((group or {}).get("status") or {}).get("conditions", []) or []:
                if cond.get("type") == "Unschedulable" and cond.get("status") == "True":
                    reasons.append(f"PodGroup {group['metadata']['name']}: {cond.get('reason')}: {cond.get('message')}")
        return reasons

    # -- main loop ---------------------------------------------------------------------------------------
    def _watchers(self) -> list[SharedObjectWatcher]:
        ns = self.spec.namespace
        job_selector = f"metadata.name={self.spec.job_name}" if self.spec.job_name else None
        watchers = [
            SharedObjectWatcher(
                self.hook, WORKFLOWS, ns, self._on_workflow, field_selector=f"metadata.name={self.spec.workflow_name}"
            ),
            SharedObjectWatcher(self.hook, VOLCANO_JOBS, ns, self._on_job, field_selector=job_selector),
        ]
        if self.spec.stream_logs:
            watchers.append(self.logs.watcher())
        return watchers

    async def run(self) -> dict[str, Any]:
        """Follow until the outcome is known; always returns a result (errors become ``status: error``)."""
        watch_tasks: list[asyncio.Task] = []
        outcome: FollowOutcome | None = None
        try:
            watch_tasks = [asyncio.create_task(w.run()) for w in self._watchers()]
            while outcome is None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), timeout=1.0)
                self.changed.clear()
                for task in watch_tasks:
                    if task.done() and task.exception():
                        raise task.exception()  # type: ignore[misc]
                self.logs.raise_failure()
                self._report_progress()
                if not self._synced():
                    continue  # decide on a complete picture: a job that ended before we looked, and its log
                outcome = decide(self.spec, self.workflow, self.workflow_gone, self.jobs, self.jobs_gone, time.time())
                if outcome and outcome.reason == "unschedulable":
                    outcome.details = await self._unschedulable_reasons()
                if time.monotonic() - self._last_save >= CURSOR_SAVE_SECONDS:
                    await self.save_cursors()
        except KubernetesApiError as exc:
            outcome = FollowOutcome("error", str(exc), reason="api_error")
        finally:
            for task in watch_tasks:
                task.cancel()
            await asyncio.gather(*watch_tasks, return_exceptions=True)  # their connections are closed
            if outcome is None:  # cancelled (triggerer restart): stop streaming, keep the place for the next one
                self.logs.cancel()
                await asyncio.shield(self.save_cursors())
        self._report_progress()
        await self.logs.drain(deleted=outcome.reason == "deleted")
        try:
            self.logs.raise_failure()
        except KubernetesApiError as exc:  # the job's outcome stands, but a log asked for is missing
            if outcome.status == "success":
                outcome = FollowOutcome("error", f"{outcome.message} Its log could not be read: {exc}", "api_error")
            else:
                outcome.details.append(f"Its log could not be read: {exc}")
        await self.save_cursors()
        return self.result(outcome)

    def result(self, outcome: FollowOutcome) -> dict[str, Any]:
        """The event payload: outcome, Workflow and Job summaries, log tails and the cursors."""
        status = (self.workflow or {}).get("status") or {}
        return {
            "status": outcome.status,
            "message": outcome.message,
            "reason": outcome.reason,
            "details": outcome.details,
            "namespace": self.spec.namespace,
            "workflow": {
                "name": self.spec.workflow_name,
                "uid": self.spec.workflow_uid,
                "phase": status.get("phase", ""),
                "message": status.get("message", ""),
                "started_at": status.get("startedAt"),
                "finished_at": status.get("finishedAt"),
            },
            "jobs": [job_result(j) for _, j in sorted(self.jobs.items())],
            "tails": self.logs.tails(),
            "lines_streamed": self.logs.lines_emitted,
            "exit_codes": exit_codes(self.logs.pods.values(), self.spec.log_container or self.spec.log_task),
            "log_book": self.book.to_dict(),
        }
