"""Sensors that wait for an existing Volcano Job or Argo Workflow (created by Airflow or not) to reach a phase."""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from typing import Any

from airflow.providers.common.compat.sdk import AirflowFailException, AirflowSensorTimeout, AirflowSkipException
from airflow.sdk import BaseSensorOperator

from airflow_provider_volcano_argo.hooks.volcano_argo import VolcanoArgoHook
from airflow_provider_volcano_argo.phases import JOB_FAILED_PHASES, JOB_SUCCESS_PHASES
from airflow_provider_volcano_argo.triggers.phase import KINDS, ObjectPhaseTrigger, phase_of, verdict


class _ObjectPhaseSensor(BaseSensorOperator):
    """Waits until the object's phase is in ``target_phases`` (an object not created yet is waited for); fails at
    once on ``failure_phases`` or when the object is deleted while deferred (``soft_fail`` skips instead).
    Deferrable by default; ``mode="poke"`` or ``"reschedule"`` with ``deferrable=False``."""

    kind = ""
    default_target: tuple[str, ...] = ()
    default_failure: tuple[str, ...] = ()
    template_fields: Sequence[str] = ("name", "namespace", "kubernetes_conn_id")

    def __init__(
        self,
        *,
        name: str,
        namespace: str | None = None,
        target_phases: Sequence[str] | None = None,
        failure_phases: Sequence[str] | None = None,
        kubernetes_conn_id: str = "kubernetes_default",
        deferrable: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.namespace = namespace
        self.target_phases = list(target_phases or self.default_target)
        self.failure_phases = list(failure_phases or self.default_failure)
        self.kubernetes_conn_id = kubernetes_conn_id
        self.deferrable = deferrable

    @property
    def hook(self) -> VolcanoArgoHook:
        return VolcanoArgoHook(conn_id=self.kubernetes_conn_id)

    def _end(self, outcome: str, phase: str) -> None:
        what = f"{self.kind.replace('_', ' ')} {self.namespace}/{self.name}"
        message = (
            f"{what} does not exist (deleted?)" if outcome == "deleted" else f"{what} reached failing phase {phase}"
        )
        if self.soft_fail:
            raise AirflowSkipException(message)
        raise AirflowFailException(message)

    def poke(self, context: Any) -> bool:
        hook = self.hook
        self.namespace = hook.resolve_namespace(self.namespace)
        obj = hook.get_object(KINDS[self.kind], self.name, self.namespace)
        phase = phase_of(self.kind, obj)
        outcome = verdict(phase, obj is not None, self.target_phases, self.failure_phases)
        self.log.info("%s %s/%s: phase %s", self.kind, self.namespace, self.name, phase or "unknown")
        if outcome in ("failed", "deleted"):
            self._end(outcome, phase)
        return outcome == "success"

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        extra = self.trigger_kwargs()
        if extra.get("log_task"):  # the trigger decides and shows the log, even of a job that already ended
            self.namespace = self.hook.resolve_namespace(self.namespace)
        elif self.poke(context):
            return None
        trigger = ObjectPhaseTrigger(
            kind=self.kind,
            name=self.name,
            namespace=self.namespace,
            target_phases=self.target_phases,
            failure_phases=self.failure_phases,
            deadline=time.time() + self.timeout,
            connection={"kubernetes_conn_id": self.kubernetes_conn_id},
            **extra,
        )
        self.defer(
            trigger=trigger, method_name="execute_complete", timeout=datetime.timedelta(seconds=self.timeout + 60)
        )

    def trigger_kwargs(self) -> dict[str, Any]:
        """Extra arguments of the trigger (subclasses add theirs)."""
        return {}

    def execute_complete(self, context: Any, event: dict[str, Any]) -> str:
        status, phase = event["status"], event.get("phase", "")
        if status == "success":
            self.log.info("%s %s/%s reached %s", self.kind, event["namespace"], event["name"], phase)
            return phase
        if status == "timeout":
            message = (
                f"{self.kind} {event['namespace']}/{event['name']} still {phase or 'unknown'} after {self.timeout:g} s"
            )
            if self.soft_fail:
                raise AirflowSkipException(message)
            raise AirflowSensorTimeout(message)
        if status == "error":
            raise AirflowFailException(event["message"])
        self._end(status, phase)
        return phase


class VolcanoJobSensor(_ObjectPhaseSensor):
    """Wait for a Volcano Job's ``status.state.phase`` (default target ``Completed``; fails fast on ``Failed``,
    ``Terminated``, ``Aborted``).

    :param log_task: stream this Volcano task's container log into the task log while waiting (deferrable mode),
        e.g. ``mpimaster``; every pod and job attempt under its own header.
    :param log_container: the container of ``log_task`` (default: the task's name).
    """

    kind = "volcano_job"
    default_target = tuple(sorted(JOB_SUCCESS_PHASES))
    default_failure = tuple(sorted(JOB_FAILED_PHASES))

    def __init__(self, *, log_task: str | None = None, log_container: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if log_task and not self.deferrable:
            raise ValueError("log_task: log forwarding needs deferrable=True (it streams from the triggerer)")
        self.log_task, self.log_container = log_task, log_container

    def trigger_kwargs(self) -> dict[str, Any]:
        return {"log_task": self.log_task, "log_container": self.log_container}


class ArgoWorkflowSensor(_ObjectPhaseSensor):
    """Wait for an Argo Workflow's ``status.phase`` (default target ``Succeeded``; fails fast on ``Failed``,
    ``Error``)."""

    kind = "workflow"
    default_target = ("Succeeded",)
    default_failure = ("Failed", "Error")
