"""Trigger that watches one object (a Volcano Job or an Argo Workflow) until its phase is a target or a failure."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_volcano_argo.errors import KubernetesApiError
from airflow_provider_volcano_argo.hooks.volcano_argo import VOLCANO_JOBS, WORKFLOWS, AsyncVolcanoArgoHook
from airflow_provider_volcano_argo.log_streams import CursorBook, PodLogForwarder
from airflow_provider_volcano_argo.shared_watches import SharedObjectWatcher

KINDS = {"volcano_job": VOLCANO_JOBS, "workflow": WORKFLOWS}


def phase_of(kind: str, obj: dict | None) -> str:
    """``status.state.phase`` of a Volcano Job, ``status.phase`` of a Workflow ("" when unknown)."""
    status = (obj or {}).get("status") or {}
    return (status.get("state") or {}).get("phase", "") if kind == "volcano_job" else status.get("phase", "")


def verdict(phase: str, exists: bool, target: list[str], failing: list[str], seen: bool = False) -> str | None:
    """``success``, ``failed`` or ``deleted`` (gone after it was seen) once decided, else None: an object that
    does not exist yet is waited for."""
    if not exists:
        return "deleted" if seen else None
    if phase in target:
        return "success"
    if phase in failing:
        return "failed"
    return None


class ObjectPhaseTrigger(BaseTrigger):
    """Yields ``{"status", "phase", "name", "namespace", "kind"}`` when the watched object reaches a target phase,
    a failing phase, is deleted, or ``deadline`` (epoch seconds) passes (``status: timeout``).

    For a Volcano Job, ``log_task`` streams that task's container log (``log_container``, default the task's
    name) into the task log while waiting, every pod and attempt under its own header.
    """

    def __init__(
        self,
        kind: str,
        name: str,
        namespace: str,
        target_phases: list[str],
        failure_phases: list[str],
        deadline: float | None = None,
        connection: dict[str, Any] | None = None,
        log_task: str | None = None,
        log_container: str | None = None,
    ):
        super().__init__()
        self.kind, self.name, self.namespace = kind, name, namespace
        self.target_phases, self.failure_phases = list(target_phases), list(failure_phases)
        self.deadline = deadline
        self.connection = connection or {}
        self.log_task, self.log_container = log_task, log_container

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "kind": self.kind,
                "name": self.name,
                "namespace": self.namespace,
                "target_phases": self.target_phases,
                "failure_phases": self.failure_phases,
                "deadline": self.deadline,
                "connection": self.connection,
                "log_task": self.log_task,
                "log_container": self.log_container,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        conn = self.connection
        hook = AsyncVolcanoArgoHook(
            conn_id=conn.get("kubernetes_conn_id", "kubernetes_default"),
            cluster_context=conn.get("cluster_context"),
            config_file=conn.get("config_file"),
            in_cluster=conn.get("in_cluster"),
        )
        changed = asyncio.Event()
        state: dict[str, Any] = {"obj": None, "exists": None, "seen": False}

        async def on_update(kind: str, obj: dict) -> None:
            if kind == "SYNCED":
                state["obj"] = obj["items"][0] if obj["items"] else None
                state["exists"] = bool(obj["items"])
            else:
                state["obj"], state["exists"] = obj, kind != "DELETED"
            state["seen"] = state["seen"] or bool(state["exists"])
            changed.set()

        watcher = SharedObjectWatcher(
            hook, KINDS[self.kind], self.namespace, on_update, field_selector=f"metadata.name={self.name}"
        )
        watchers = [watcher]
        logs = None
        if self.log_task and self.kind == "volcano_job":
            logs = PodLogForwarder(
                hook,
                self.namespace,
                f"volcano.sh/job-name={self.name},volcano.sh/task-spec={self.log_task}",
                self.log_container or self.log_task,
                jobs=lambda: {self.name},
                book=CursorBook(),
                emit=self.log.info,
            )
            watchers.append(logs.watcher())
        tasks = [asyncio.create_task(w.run()) for w in watchers]
        result: str | None = None
        try:
            while result is None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(changed.wait(), timeout=1.0)
                changed.clear()
                for task in tasks:
                    if task.done() and task.exception():
                        raise task.exception()  # type: ignore[misc]
                if logs is not None:
                    logs.raise_failure()
                phase = phase_of(self.kind, state["obj"])
                if state["exists"] is not None and (logs is None or logs.synced):
                    result = verdict(phase, state["exists"], self.target_phases, self.failure_phases, state["seen"])
                if result is None and self.deadline is not None and time.time() >= self.deadline:
                    result = "timeout"
        except KubernetesApiError as exc:
            yield TriggerEvent(
                {
                    "status": "error",
                    "message": str(exc),
                    "name": self.name,
                    "namespace": self.namespace,
                    "kind": self.kind,
                    "phase": "",
                }
            )
            return
        finally:
            for task in tasks:
                task.cancel()
            if logs is not None and result is None:  # cancelled or failed: no tail to wait for
                logs.cancel()
        if logs is not None:
            # the last lines of an instance that just ended
            await logs.drain(deleted=result == "deleted")
        yield TriggerEvent(
            {
                "status": result,
                "phase": phase_of(self.kind, state["obj"]),
                "name": self.name,
                "namespace": self.namespace,
                "kind": self.kind,
            }
        )
