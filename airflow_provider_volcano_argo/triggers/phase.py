"""Trigger that watches one object (a Volcano Job or an Argo Workflow) until its phase is a target or a failure.

It runs ``engine/object_follower.py``; the sensors defer to it. With ``log_task``, it keeps its log cursors in an
XCom of the sensor's task instance (``XComCursorStore``), so that a new trigger after a triggerer restart goes on
where the last one stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_volcano_argo.engine.object_follower import ObjectPhaseFollower
from airflow_provider_volcano_argo.hooks.connection import KubernetesConnection
from airflow_provider_volcano_argo.models.names import CURSOR_XCOM_KEY

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger


class ObjectPhaseTrigger(BaseTrigger):
    """Yield a ``PhaseEvent`` (``status``, ``phase``, ``name``, ``namespace``, ``kind``) once the object is decided.

    That is when it reaches a target phase, a failing phase, is deleted, or ``deadline`` (epoch seconds) passes
    (``status: timeout``).

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
        follower = ObjectPhaseFollower(
            KubernetesConnection.from_dict(self.connection).async_hook(),
            self.kind,  # type: ignore[arg-type]
            self.name,
            self.namespace,
            self.target_phases,
            self.failure_phases,
            deadline=self.deadline,
            log_task=self.log_task,
            log_container=self.log_container,
            emit=self.log.info,
            cursor_store=XComCursorStore.of(self) if self.log_task else None,
        )
        yield TriggerEvent(await follower.run())


class XComCursorStore:
    """Keeps a sensor's log cursors in an XCom (``CURSOR_XCOM_KEY``) of its task instance, through the triggerer.

    The Volcano Job a sensor follows is not the provider's: annotating it would take ``patch`` on every Job of the
    namespace (RBAC cannot narrow a patch to an annotation) and write to an object another tool may own. Airflow
    gives a trigger no ``task_state_store`` (the triggerer's supervisor does not serve its messages), but it serves
    XCom reads and writes (apache/airflow#53514), and ``XCom.aset``/``aget_one`` (in Airflow 3.3) make them without
    blocking the event loop. The XCom is the task instance's own: it survives triggerer restarts while the task is
    deferred (Airflow clears a task's XComs when a try starts, not when it resumes from a deferral), and the sensor
    writes it empty before deferring.
    """

    def __init__(self, dag_id: str, run_id: str, task_id: str, map_index: int, log: FilteringBoundLogger) -> None:
        self.where = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index}
        self.log = log
        self._warned = False

    @classmethod
    def of(cls, trigger: BaseTrigger) -> XComCursorStore | None:
        """Return the store of ``trigger``'s task instance, or None where there is none to reach.

        None below Airflow 3.3 (no async XCom), and where the trigger runs inline in the task (``dag.test()``: no
        triggerer, and no async channel to Airflow).
        """
        try:
            from airflow.sdk.execution_time import task_runner
            from airflow.sdk.execution_time.xcom import XCom
        except ImportError:
            return None
        ti = trigger.task_instance
        comms = getattr(task_runner, "SUPERVISOR_COMMS", None)
        if ti is None or not hasattr(comms, "asend") or not hasattr(XCom, "aset") or not hasattr(XCom, "aget_one"):
            return None
        return cls(ti.dag_id, ti.run_id, ti.task_id, ti.map_index, trigger.log)

    async def load(self) -> dict[str, Any] | None:
        """Return the cursors an earlier trigger of this task instance stored, or None."""
        from airflow.sdk.execution_time.xcom import XCom

        if _channel_closed():
            return None
        try:
            found = await XCom.aget_one(key=CURSOR_XCOM_KEY, **self.where)
        except Exception:  # any failure here costs repeated lines at worst, never the sensor's verdict
            self._warn("read")
            return None
        return found if isinstance(found, dict) else None

    async def save(self, cursors: dict[str, Any]) -> bool:
        """Store ``cursors``; return whether Airflow took them."""
        from airflow.sdk.execution_time.xcom import XCom

        if _channel_closed():
            return False
        try:
            await XCom.aset(key=CURSOR_XCOM_KEY, value=cursors, **self.where)
        except Exception:
            self._warn("store")
            return False
        return True

    def _warn(self, what: str) -> None:
        if not self._warned:  # once: a store that fails keeps failing, every interval
            self._warned = True
            self.log.warning("Could not %s the log cursors in XCom %s", what, CURSOR_XCOM_KEY, exc_info=True)


def _channel_closed() -> bool:
    """Tell whether the triggerer's channel to Airflow no longer answers.

    When a whole triggerer stops, Airflow 3.3's trigger runner stops reading replies
    (``TriggerCommsDecoder._reader_task``, cancelled in ``TriggerRunner.arun``) before ``asyncio.run`` cancels the
    triggers: a request then waits for ever. Read defensively: the attribute is Airflow's, not an API.
    """
    from airflow.sdk.execution_time import task_runner

    reader = getattr(getattr(task_runner, "SUPERVISOR_COMMS", None), "_reader_task", None)
    return isinstance(reader, asyncio.Task) and reader.done()
