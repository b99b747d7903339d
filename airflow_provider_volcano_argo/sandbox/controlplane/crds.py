"""CustomResourceDefinitions for Argo Workflows and Volcano: the sandbox's own, or upstream's.

The sandbox's own CRDs keep upstream's names, scopes, short names, printer columns and status subresources, with
schemas that preserve unknown fields (as Argo's "minimal" CRDs do). Upstream's full CRDs can be loaded instead
(``upstream_crds``).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import yaml

from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, KubeApi

log = logging.getLogger(__name__)

_PRESERVE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_JOB_PHASES = [
    "Pending",
    "Aborting",
    "Aborted",
    "Running",
    "Restarting",
    "Completing",
    "Completed",
    "Terminating",
    "Terminated",
    "Failed",
]

# (group, kind, plural, short names, namespaced, status subresource, printer columns [(name, type, jsonPath)])
_TABLE: list[tuple[str, str, str, list[str], bool, bool, list[tuple[str, str, str]]]] = [
    (
        "argoproj.io",
        "Workflow",
        "workflows",
        ["wf"],
        True,
        False,
        [
            ("Status", "string", ".status.phase"),
            ("Age", "date", ".status.startedAt"),
            ("Message", "string", ".status.message"),
        ],
    ),
    ("argoproj.io", "WorkflowTemplate", "workflowtemplates", ["wftmpl"], True, False, []),
    ("argoproj.io", "ClusterWorkflowTemplate", "clusterworkflowtemplates", ["clusterwftmpl", "cwft"], False, False, []),
    ("argoproj.io", "CronWorkflow", "cronworkflows", ["cwf", "cronwf"], True, False, []),
    ("argoproj.io", "WorkflowTaskResult", "workflowtaskresults", [], True, False, []),
    (
        "batch.volcano.sh",
        "Job",
        "jobs",
        ["vcjob", "vj"],
        True,
        True,
        [
            ("STATUS", "string", ".status.state.phase"),
            ("minAvailable", "integer", ".status.minAvailable"),
            ("RUNNINGS", "integer", ".status.running"),
            ("AGE", "date", ".metadata.creationTimestamp"),
        ],
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "podgroups",
        ["pg", "podgroup-v1beta1"],
        True,
        False,
        [
            ("STATUS", "string", ".status.phase"),
            ("MINMEMBER", "integer", ".spec.minMember"),
            ("AGE", "date", ".metadata.creationTimestamp"),
        ],
    ),
    (
        "scheduling.volcano.sh",
        "Queue",
        "queues",
        ["q", "queue-v1beta1"],
        False,
        True,
        [("STATE", "string", ".status.state")],
    ),
    ("bus.volcano.sh", "Command", "commands", [], True, False, []),
]
_VERSIONS = {
    "argoproj.io": "v1alpha1",
    "batch.volcano.sh": "v1alpha1",
    "scheduling.volcano.sh": "v1beta1",
    "bus.volcano.sh": "v1alpha1",
}


def _schema(group: str, kind: str) -> dict:
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
    }
    if kind == "Command":
        properties.update(
            {
                "action": {"type": "string"},
                "target": _PRESERVE,
                "reason": {"type": "string"},
                "message": {"type": "string"},
            }
        )
    else:
        properties.update({"spec": _PRESERVE, "status": _PRESERVE})
    if kind == "Job":
        properties["status"] = {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {
                "state": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"phase": {"type": "string", "enum": _JOB_PHASES}},
                }
            },
        }
    return {"openAPIV3Schema": {"type": "object", "properties": properties}}


def sandbox_crds() -> list[dict]:
    """Return the CRDs the sandbox carries itself."""
    crds = []
    for group, kind, plural, short, namespaced, status, columns in _TABLE:
        version: dict[str, Any] = {
            "name": _VERSIONS[group],
            "served": True,
            "storage": True,
            "schema": _schema(group, kind),
        }
        if status:
            version["subresources"] = {"status": {}}
        if columns:
            version["additionalPrinterColumns"] = [{"name": n, "type": t, "jsonPath": p} for n, t, p in columns]
        names = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
        if short:
            names["shortNames"] = short
        crds.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{group}"},
                "spec": {
                    "group": group,
                    "names": names,
                    "scope": "Namespaced" if namespaced else "Cluster",
                    "versions": [version],
                },
            }
        )
    return crds


UPSTREAM_CRD_FILES = [
    "argo-workflows-v3.7.10/manifests/base/crds/minimal/argoproj.io_workflows.yaml",
    "argo-workflows-v3.7.10/manifests/base/crds/minimal/argoproj.io_workflowtemplates.yaml",
    "argo-workflows-v3.7.10/manifests/base/crds/minimal/argoproj.io_clusterworkflowtemplates.yaml",
    "argo-workflows-v3.7.10/manifests/base/crds/minimal/argoproj.io_cronworkflows.yaml",
    "argo-workflows-v3.7.10/manifests/base/crds/minimal/argoproj.io_workflowtaskresults.yaml",
    "volcano/installer/helm/chart/volcano/crd/bases/batch.volcano.sh_jobs.yaml",
    "volcano/installer/helm/chart/volcano/crd/bases/scheduling.volcano.sh_podgroups.yaml",
    "volcano/installer/helm/chart/volcano/crd/bases/scheduling.volcano.sh_queues.yaml",
    "volcano/installer/helm/chart/volcano/crd/bases/bus.volcano.sh_commands.yaml",
]


def upstream_crds(upstream_dir: Path) -> list[dict]:
    """Upstream's CRDs, read from a copy of the upstream files (e.g. ``shared/upstream``)."""
    return [yaml.safe_load((upstream_dir / rel).read_text()) for rel in UPSTREAM_CRD_FILES]


def apply_crds(api: KubeApi, crds: list[dict], timeout: float = 60) -> None:
    """Create (or replace) the CRDs and wait until each is Established."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for crd in crds:
        name = crd["metadata"]["name"]
        try:
            api.request("POST", path, body=crd)
        except ApiException as exc:
            if exc.status != 409:
                raise
            current = api.request("GET", f"{path}/{name}")
            crd = {**crd, "metadata": {**crd["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
            api.request("PUT", f"{path}/{name}", body=crd)
    wait_established(api, [crd["metadata"]["name"] for crd in crds], timeout)


def wait_established(api: KubeApi, names: list[str], timeout: float = 120) -> None:
    """Wait until each CRD named is Established (served)."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            # a CRD just created or replaced may carry "status": {"conditions": null} until the controller sets it
            conditions = (api.request("GET", f"{path}/{name}").get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} not Established after {timeout:.0f} s")
            time.sleep(0.1)
