"""The API resources the provider reads and writes, as plain coordinates (no client)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.models.phases import ObjectKind


@dataclass(frozen=True)
class ApiResource:
    """A resource's coordinates: API group ("" for the core group), version and plural."""

    group: str
    version: str
    plural: str

    @property
    def label(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def collection_path(self, namespace: str) -> str:
        """Return the REST path of the namespaced collection (core resources under /api, others under /apis)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/namespaces/{namespace}/{self.plural}"


WORKFLOWS = ApiResource("argoproj.io", "v1alpha1", "workflows")
WORKFLOW_TEMPLATES = ApiResource("argoproj.io", "v1alpha1", "workflowtemplates")
VOLCANO_JOBS = ApiResource("batch.volcano.sh", "v1alpha1", "jobs")
PODGROUPS = ApiResource("scheduling.volcano.sh", "v1beta1", "podgroups")
PODS = ApiResource("", "v1", "pods")
EVENTS = ApiResource("", "v1", "events")
COMMANDS = ApiResource("bus.volcano.sh", "v1alpha1", "commands")

#: What a sensor of each kind watches.
RESOURCE_OF_KIND: dict[ObjectKind, ApiResource] = {"volcano_job": VOLCANO_JOBS, "workflow": WORKFLOWS}
