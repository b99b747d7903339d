"""``ArgoWorkflowSensor``: wait for an Argo Workflow's phase."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.phases import WORKFLOW_FAILED_PHASES, WORKFLOW_SUCCESS_PHASES
from airflow_provider_volcano_argo.sensors.object_phase import ObjectPhaseSensor


class ArgoWorkflowSensor(ObjectPhaseSensor):
    """Wait for an Argo Workflow's ``status.phase`` (default target ``Succeeded``; fail at once on Failed, Error)."""

    kind = "workflow"
    default_target = tuple(sorted(WORKFLOW_SUCCESS_PHASES))
    default_failure = tuple(sorted(WORKFLOW_FAILED_PHASES))
