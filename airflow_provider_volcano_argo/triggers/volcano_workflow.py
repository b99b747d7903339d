"""Deprecated module: the trigger is ``triggers.argo_workflow.ArgoWorkflowTrigger``.

Tasks deferred by version 0.1 stored the class path ``triggers.volcano_workflow.VolcanoWorkflowTrigger`` with
the same kwargs; the triggerer still loads and runs them through this name.
"""

from __future__ import annotations

from airflow_provider_volcano_argo._deprecated import moved_names

__getattr__ = moved_names(
    __name__,
    {
        "VolcanoWorkflowTrigger": "airflow_provider_volcano_argo.triggers.argo_workflow:ArgoWorkflowTrigger",
        "ON_KILL_ACTIONS": "airflow_provider_volcano_argo.operators.argo_workflow:ON_KILL_ACTIONS",
    },
)
