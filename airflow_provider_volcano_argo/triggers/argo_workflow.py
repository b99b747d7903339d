"""Trigger that follows an Argo Workflow and its Volcano Jobs in the triggerer (``engine/workflow_follower.py``).

``operators/argo_workflow.py`` defers to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_volcano_argo.engine.kill_guard import finish_despite_cancels
from airflow_provider_volcano_argo.engine.workflow_follower import WorkflowFollower
from airflow_provider_volcano_argo.hooks.connection import KubernetesConnection
from airflow_provider_volcano_argo.models.follow import FollowSpec
from airflow_provider_volcano_argo.models.log_cursor import CursorBook
from airflow_provider_volcano_argo.models.policies import OnKillAction, kill_steps
from airflow_provider_volcano_argo.version_compat import AIRFLOW_V_3_3_PLUS

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook

#: Task instance states in which the run is someone's to follow: never destroyed from here.
TASK_ALIVE_STATES = frozenset({"deferred", "running"})


def kill_seconds() -> float:
    """Return how long a kill's clean-up may take: within Airflow's ``[triggerer] on_kill_timeout`` (3.3: 30 s)."""
    from airflow.configuration import conf

    return max(conf.getfloat("triggerer", "on_kill_timeout", fallback=30.0) - 2.0, 1.0)


class ArgoWorkflowTrigger(BaseTrigger):
    """Yield one event when the followed Volcano Job (or, without ``job_name``, the Workflow) has ended.

    :param spec: what to follow, as ``FollowSpec.to_dict()``.
    :param log_book: cursors of the log lines already shown (``CursorBook.to_dict()``).
    :param on_kill_action: what a user kill does to the Workflow: ``delete_workflow`` (stop, then delete;
        the owner reference cascades to the Volcano Job and its pods), ``stop_workflow`` or ``keep_workflow``.
    :param connection: ``KubernetesConnection.to_dict()``: ``kubernetes_conn_id``, ``cluster_context``,
        ``config_file``, ``in_cluster``.
    """

    def __init__(
        self,
        spec: dict[str, Any],
        log_book: dict[str, Any] | None = None,
        on_kill_action: str = OnKillAction.DELETE_WORKFLOW.value,
        connection: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.spec = spec
        self.log_book = log_book or {}
        self.on_kill_action = on_kill_action
        self.connection = connection or {}
        self._fired = False

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "spec": self.spec,
                "log_book": self.log_book,
                "on_kill_action": self.on_kill_action,
                "connection": self.connection,
            },
        )

    def hook(self) -> AsyncVolcanoArgoHook:
        return KubernetesConnection.from_dict(self.connection).async_hook()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        follower = WorkflowFollower(
            self.hook(), FollowSpec(**self.spec), CursorBook.from_dict(self.log_book), emit=self.log.info
        )
        event = await follower.run()
        self._fired = True
        yield TriggerEvent(event)

    async def _stop_and_delete(self) -> None:
        steps = kill_steps(self.on_kill_action)
        if not steps.needed:
            return
        name, namespace = self.spec["workflow_name"], self.spec["namespace"]
        self.log.info("Stopping Argo Workflow %s in %s (%s).", name, namespace, self.on_kill_action)
        try:
            await self.hook().clean_up_workflow(name, namespace, steps)
        except Exception:
            self.log.exception("Could not stop Argo Workflow %s", name)

    async def on_kill(self) -> None:
        """Stop the Workflow and delete it per policy, when a user killed the deferred task (Airflow >= 3.3).

        Airflow 3.3 also cancels a trigger this way when it moves to another triggerer (HA, missed heartbeats):
        then the task instance is still deferred and the other triggerer follows the run, so nothing is touched.
        """
        if self._fired:
            return
        if not await finish_despite_cancels(self._stop_unless_task_alive(), kill_seconds()):
            self.log.warning("Stopping Argo Workflow %s took too long; a retry or `volcano-argo gc` ends it.",
                             self.spec["workflow_name"])  # fmt: skip

    async def cleanup(self) -> None:
        """Never cancel external work on its own: this also runs on every triggerer restart.

        Before Airflow 3.3 (no ``on_kill``), a kill is told apart from a restart as KubernetesPodTrigger does:
        only when the task instance is no longer deferred (or running).
        """
        if AIRFLOW_V_3_3_PLUS or self._fired:
            return
        await finish_despite_cancels(self._stop_unless_task_alive(), kill_seconds())

    async def _stop_unless_task_alive(self) -> None:
        if kill_steps(self.on_kill_action).needed and not await self._task_alive():
            await self._stop_and_delete()

    async def _task_alive(self) -> bool:
        """Tell whether the task instance is still deferred or running; when its state cannot be read, say so."""
        try:
            return await self._task_state() in TASK_ALIVE_STATES
        except Exception:
            self.log.warning("Could not read the task state; leaving the Workflow running.", exc_info=True)
            return True

    async def _task_state(self) -> str | None:
        from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

        ti = self.task_instance
        states = await asyncio.to_thread(
            RuntimeTaskInstance.get_task_states,
            dag_id=ti.dag_id,
            task_ids=[ti.task_id],
            run_ids=[ti.run_id],
            map_index=ti.map_index,
        )
        key = f"{ti.task_id}_{ti.map_index}" if ti.map_index >= 0 else ti.task_id
        return str(states[ti.run_id][key])
