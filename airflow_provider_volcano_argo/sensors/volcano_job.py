"""``VolcanoJobSensor``: wait for a Volcano Job's phase, optionally streaming one task's log meanwhile."""

from __future__ import annotations

from typing import Any

from airflow_provider_volcano_argo.models.phases import JOB_FAILED_PHASES, JOB_SUCCESS_PHASES
from airflow_provider_volcano_argo.sensors.object_phase import ObjectPhaseSensor


class VolcanoJobSensor(ObjectPhaseSensor):
    """Wait for a Volcano Job's ``status.state.phase``.

    The default target is ``Completed``; ``Failed``, ``Terminated`` and ``Aborted`` fail the task at once.

    :param log_task: stream this Volcano task's container log into the task log while waiting (deferrable mode),
        e.g. ``mpimaster``; every pod and job attempt under its own header. Where it got to is kept in the XCom
        ``volcano_argo_log_cursors`` of the task instance (Airflow >= 3.3), so that a triggerer restart does not
        show the log again (``triggers/phase.py``).
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
