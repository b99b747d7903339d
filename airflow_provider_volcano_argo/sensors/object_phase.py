"""The base of the sensors: wait until an existing object (created by Airflow or not) reaches a phase."""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowFailException, AirflowSensorTimeout, AirflowSkipException
from airflow.sdk import BaseSensorOperator

from airflow_provider_volcano_argo.hooks.connection import DEFAULT_CONN_ID, KubernetesConnectionFields
from airflow_provider_volcano_argo.models.log_cursor import CursorBook
from airflow_provider_volcano_argo.models.names import CURSOR_XCOM_KEY
from airflow_provider_volcano_argo.models.phases import ObjectKind, phase_of, phase_verdict
from airflow_provider_volcano_argo.models.resources import RESOURCE_OF_KIND
from airflow_provider_volcano_argo.triggers.phase import ObjectPhaseTrigger

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.models.results import PhaseEvent


class ObjectPhaseSensor(KubernetesConnectionFields, BaseSensorOperator):
    """Wait until the object's phase is in ``target_phases`` (an object not created yet is waited for).

    Fail at once on ``failure_phases`` or when the object is deleted while deferred (``soft_fail`` skips instead).

    Deferrable by default; ``mode="poke"`` or ``"reschedule"`` with ``deferrable=False``.

    :param name: the object's name (templated).
    :param namespace: its namespace (default: the connection's, else ``default``; templated).
    :param target_phases: phases that end the wait in success.
    :param failure_phases: phases that fail the task at once.
    :param kubernetes_conn_id: the cncf-kubernetes connection (templated).
    :param cluster_context: kubeconfig context, overriding the connection's (templated).
    :param config_file: kubeconfig path, overriding the connection's (templated).
    :param in_cluster: use the pod's service account, overriding the connection's.
    :param deferrable: wait in the triggerer.
    """

    kind: ObjectKind
    default_target: tuple[str, ...] = ()
    default_failure: tuple[str, ...] = ()
    template_fields: Sequence[str] = ("name", "namespace", "kubernetes_conn_id", "cluster_context", "config_file")

    def __init__(
        self,
        *,
        name: str,
        namespace: str | None = None,
        target_phases: Sequence[str] | None = None,
        failure_phases: Sequence[str] | None = None,
        kubernetes_conn_id: str = DEFAULT_CONN_ID,
        cluster_context: str | None = None,
        config_file: str | None = None,
        in_cluster: bool | None = None,
        deferrable: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.namespace = namespace
        # plain strings (a phase enum member would not serialize into the trigger's kwargs as one)
        self.target_phases = [str(p) for p in target_phases or self.default_target]
        self.failure_phases = [str(p) for p in failure_phases or self.default_failure]
        self.kubernetes_conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context
        self.config_file = config_file
        self.in_cluster = in_cluster
        self.deferrable = deferrable

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
        obj = hook.get_object(RESOURCE_OF_KIND[self.kind], self.name, self.namespace)
        phase = phase_of(self.kind, obj)
        outcome = phase_verdict(phase, obj is not None, self.target_phases, self.failure_phases)
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
            # where the trigger keeps its log cursors, empty: the trigger's first read finds a value (Airflow's
            # client logs a missing XCom as an error), and each try shows the log from its start
            context["ti"].xcom_push(key=CURSOR_XCOM_KEY, value=CursorBook().to_dict())
        elif self.poke(context):
            return None
        trigger = ObjectPhaseTrigger(
            kind=self.kind,
            name=self.name,
            namespace=self.namespace,
            target_phases=self.target_phases,
            failure_phases=self.failure_phases,
            deadline=time.time() + self.timeout,
            connection=self.connection.to_dict(),
            **extra,
        )
        self.defer(
            trigger=trigger, method_name="execute_complete", timeout=datetime.timedelta(seconds=self.timeout + 60)
        )

    def trigger_kwargs(self) -> dict[str, Any]:
        """Return extra arguments of the trigger (subclasses add theirs)."""
        return {}

    def execute_complete(self, context: Any, event: PhaseEvent) -> str:
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
