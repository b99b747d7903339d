"""Trigger that watches one object (a Volcano Job or an Argo Workflow) until its phase is a target or a failure.

It runs ``engine/object_follower.py``; the sensors defer to it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_volcano_argo.engine.object_follower import ObjectPhaseFollower
from airflow_provider_volcano_argo.hooks.connection import KubernetesConnection


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
        )
        yield TriggerEvent(await follower.run())
