"""Follow one object (a Volcano Job or an Argo Workflow) until its phase is a target or a failure.

Optionally it streams the log of one of the Job's tasks: what the sensors wait for in the triggerer. The object is
not one the provider submitted, so it carries none of the provider's labels: its watches are narrowed on the API
server by its name (and its pods' by its Job's name), one per followed object. Its log
cursors are kept in a ``CursorStore`` when the trigger has one (an XCom of the sensor's task instance): the Job is
not the provider's to annotate.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.engine.cursor_keeper import CursorKeeper, CursorStore
from airflow_provider_volcano_argo.engine.follow_loop import FollowLoop
from airflow_provider_volcano_argo.engine.informer import SharedObjectWatcher
from airflow_provider_volcano_argo.engine.pod_log_forwarder import PodLogForwarder
from airflow_provider_volcano_argo.engine.pod_waiting import PodWaitingReporter
from airflow_provider_volcano_argo.exceptions import VolcanoArgoApiError
from airflow_provider_volcano_argo.models.follow import FollowOutcome
from airflow_provider_volcano_argo.models.log_cursor import CursorBook
from airflow_provider_volcano_argo.models.phases import ObjectKind, phase_of, phase_verdict
from airflow_provider_volcano_argo.models.resources import PODS, RESOURCE_OF_KIND
from airflow_provider_volcano_argo.models.selectors import name_selector, task_pods_selector

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook
    from airflow_provider_volcano_argo.models.results import PhaseEvent


class ObjectPhaseFollower(FollowLoop):
    """Watches one object; ``run()`` returns a ``PhaseEvent`` once its verdict (or ``deadline``) is reached."""

    def __init__(
        self,
        hook: AsyncVolcanoArgoHook,
        kind: ObjectKind,
        name: str,
        namespace: str,
        target_phases: list[str],
        failure_phases: list[str],
        deadline: float | None = None,
        log_task: str | None = None,
        log_container: str | None = None,
        emit: Callable[[str], None] = print,
        cursor_store: CursorStore | None = None,
    ):
        self.hook, self.kind, self.name, self.namespace = hook, kind, name, namespace
        self.target_phases, self.failure_phases, self.deadline = target_phases, failure_phases, deadline
        self.obj: dict | None = None
        self.exists: bool | None = None  # None until the first list
        self.seen = False
        logs, keeper, self.cursor_store = None, None, None
        self.waiting: PodWaitingReporter | None = None
        if log_task and kind == "volcano_job":
            book = CursorBook()
            logs = PodLogForwarder(
                hook,
                namespace,
                task_pods_selector(log_task, name),
                log_container or log_task,
                jobs=lambda: {name},
                book=book,
                emit=emit,
                per_object_on_server=True,
            )
            self.waiting = PodWaitingReporter(hook, namespace, emit)
            if cursor_store is not None:
                keeper, self.cursor_store = CursorKeeper(book, cursor_store.save), cursor_store
        super().__init__(logs, keeper)

    async def _on_update(self, kind: str, obj: dict) -> None:
        if kind == "SYNCED":
            self.obj = obj["items"][0] if obj["items"] else None
            self.exists = bool(obj["items"])
        else:
            self.obj, self.exists = obj, kind != "DELETED"
        self.seen = self.seen or bool(self.exists)
        self.changed.set()

    def watchers(self) -> list[SharedObjectWatcher]:
        resource = RESOURCE_OF_KIND[self.kind]
        watchers = [
            SharedObjectWatcher(
                self.hook,
                resource,
                self.namespace,
                self._on_update,
                field_selector=name_selector(self.name),
                per_object_on_server=True,
            )
        ]
        if self.logs is not None:
            watchers.append(self.logs.watcher())
        return watchers

    async def step(self, now: float) -> FollowOutcome | None:
        if self.logs is not None and self.waiting is not None:  # why the log task's containers do not start
            await self.waiting.report(self.logs.pods.values(), {self.name})
        phase = phase_of(self.kind, self.obj)
        if self.exists is not None and (self.logs is None or self.logs.synced):
            verdict = phase_verdict(phase, self.exists, self.target_phases, self.failure_phases, self.seen)
            if verdict is not None:
                return FollowOutcome("success" if verdict == "success" else "failed", phase, verdict)
        if self.deadline is not None and now >= self.deadline:
            return FollowOutcome("timeout", phase, "timeout")
        return None

    async def before_drain(self, outcome: FollowOutcome) -> None:
        """List the log task's pods once more: the Job's verdict may come before the pod watch shows its end."""
        if self.logs is None or not outcome.run_ended:
            return
        with contextlib.suppress(VolcanoArgoApiError):  # what the watch showed stands in
            listed = await self.hook.list_objects(PODS, self.namespace, label_selector=self.logs.label_selector)
            self.logs.catch_up(listed.get("items") or [])

    async def run(self) -> PhaseEvent:
        """Follow until the verdict; return the event (``status``: the verdict, ``timeout`` or ``error``)."""
        if self.keeper is not None and self.cursor_store is not None:  # before any stream starts
            self.keeper.take_up(await self.cursor_store.load())
        outcome = await self.follow()
        event: PhaseEvent = {
            "status": "error" if outcome.status == "error" else outcome.reason,
            "phase": phase_of(self.kind, self.obj),
            "name": self.name,
            "namespace": self.namespace,
            "kind": self.kind,
        }
        if outcome.status == "error":
            event["message"] = outcome.message
        return event
