"""Operator extra link to the followed Workflow in the Argo UI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import XCom
from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.models.taskinstancekey import TaskInstanceKey


def argo_workflow_url(base_url: str | None, namespace: str, name: str) -> str | None:
    """Return ``<argo base url>/workflows/<namespace>/<name>`` (the Argo UI's route), or None without a base URL."""
    if not base_url:
        return None
    return f"{base_url.rstrip('/')}/workflows/{namespace}/{name}"


class ArgoWorkflowLink(BaseOperatorLink):
    """Link the task to its Workflow in the Argo UI: the URL is stored in XCom once the Workflow exists.

    The base URL comes from the operator's ``argo_base_url`` or the connection extra ``argo_base_url``; with
    neither there is no link.
    """

    name = "Argo Workflow"

    def persist(self, context: Any, base_url: str | None, namespace: str, workflow_name: str) -> None:
        """Store the URL, or "" without a base URL.

        The task runner reads every extra link's XCom at the end of the task (``task_runner.finalize``), and logs
        a missing one as an error, on a good run too.
        """
        url = argo_workflow_url(base_url, namespace, workflow_name)
        context["ti"].xcom_push(key=self.xcom_key, value=url or "")

    def get_link(self, operator: Any, *, ti_key: TaskInstanceKey) -> str:
        return XCom.get_value(key=self.xcom_key, ti_key=ti_key) or ""
