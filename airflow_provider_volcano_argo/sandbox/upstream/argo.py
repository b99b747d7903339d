"""Argo Workflows as its quick start sets it up: ``manifests/quick-start-minimal.yaml`` of the module built from.

Applied server-side into namespace ``argo`` as ``kubectl apply -n argo --server-side`` does (Argo 4's full CRDs are
too large for a client-side apply), without the workloads: the ``workflow-controller`` Deployment runs as a process
(its ``args``, as service account ``argo``); ``argo-server``, MinIO and httpbin do not run. What that changes in the
controller's ConfigMap, and why:

- ``artifactRepository`` is dropped: it names the quick start's MinIO, and with ``archiveLogs: true`` every step
  would fail uploading its log; no step of the seed or the provider uses artifacts;
- ``metricsConfig`` and ``telemetryConfig`` are disabled: their ports (9090 and the OpenTelemetry ones) are fixed,
  and two sandboxes run side by side on one machine;
- ``executor.env`` gets ``RESOURCE_STATE_CHECK_INTERVAL`` when the sandbox is asked for a shorter poll than
  argoexec's 5 s default (``workflow/executor/resource.go``; the variable is Argo's own knob).

The namespaced RBAC of the quick start (``executor``, ``pod-manager``, ... bound to ``default``) is what a
namespace needs for its Workflows' pods to report their results; ``namespace_rbac`` returns it for other namespaces.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from airflow_provider_volcano_argo.sandbox.controlplane.crds import wait_established
from airflow_provider_volcano_argo.sandbox.upstream.install import (
    WORKLOAD_KINDS,
    Component,
    TokenFor,
    container_args,
    load_documents,
    server_side_apply,
    service_account_of,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_volcano_argo.sandbox.controlplane.binaries import Build
    from airflow_provider_volcano_argo.sandbox.controlplane.processes import ControlPlane
    from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import KubeApi

QUICK_START = "manifests/quick-start-minimal.yaml"
NAMESPACE = "argo"
CONTROLLER_CONFIGMAP = "workflow-controller-configmap"
#: the quick start's objects that need what does not run here (MinIO's credentials and repositories)
_LEFT_OUT = {("ConfigMap", "artifact-repositories"), ("Secret", "my-minio-cred"), ("Secret", "my-httpbin-cred")}
_NAMESPACED_RBAC = ("Role", "RoleBinding", "ServiceAccount", "Secret")


def controller_config(data: dict[str, str], resource_interval: float | None) -> dict[str, str]:
    """Return the controller ConfigMap's data as the sandbox runs it (see the module)."""
    config = {k: v for k, v in data.items() if k != "artifactRepository"}
    config["metricsConfig"] = "enabled: false\n"
    config["telemetryConfig"] = "enabled: false\n"
    if resource_interval is not None:
        executor = yaml.safe_load(config.get("executor") or "") or {}
        env = [e for e in executor.get("env") or [] if e.get("name") != "RESOURCE_STATE_CHECK_INTERVAL"]
        env.append({"name": "RESOURCE_STATE_CHECK_INTERVAL", "value": f"{int(resource_interval * 1000)}ms"})
        config["executor"] = yaml.safe_dump({**executor, "env": env}, sort_keys=False)
    return config


class Argo(Component):
    """Install Argo from ``build``'s module and run its workflow-controller; ``start()`` returns once it runs."""

    def __init__(
        self,
        build: Build,
        binaries: Mapping[str, Path],
        control_plane: ControlPlane,
        api: KubeApi,
        resource_interval: float | None = None,
    ):
        super().__init__(build, binaries, control_plane, api)
        self.resource_interval = resource_interval
        self.docs = load_documents(self.module / QUICK_START)

    def namespace_rbac(self) -> list[dict]:
        """Return the quick start's namespaced RBAC objects (without a namespace: apply them into one)."""
        return [
            d
            for d in self.docs
            if d["kind"] in _NAMESPACED_RBAC
            and "namespace" not in d["metadata"]
            and (d["kind"], d["metadata"]["name"]) not in _LEFT_OUT
        ]

    def start(self, kubeconfig_for: TokenFor, timeout: float = 180) -> None:
        server_side_apply(self.api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        crds = [d for d in self.docs if d["kind"] == "CustomResourceDefinition"]
        for doc in crds:
            server_side_apply(self.api, doc)
        for doc in self.docs:
            kind, name = doc["kind"], doc["metadata"]["name"]
            if kind in WORKLOAD_KINDS or kind == "CustomResourceDefinition" or (kind, name) in _LEFT_OUT:
                continue
            if kind == "ConfigMap" and name == CONTROLLER_CONFIGMAP:
                doc = {**doc, "data": controller_config(doc.get("data") or {}, self.resource_interval)}
            server_side_apply(self.api, doc, NAMESPACE)
        wait_established(self.api, [d["metadata"]["name"] for d in crds])
        deployment = next(
            d for d in self.docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "workflow-controller"
        )
        kubeconfig = kubeconfig_for(NAMESPACE, service_account_of(deployment))
        env = {
            "KUBECONFIG": str(kubeconfig),
            "LEADER_ELECTION_IDENTITY": "workflow-controller-sandbox",
            "LEADER_ELECTION_DISABLE": "true",  # one replica: no lease to wait for
            "ARGO_NAMESPACE": NAMESPACE,
        }
        binary = self.binaries["workflow-controller"]
        self.run("workflow-controller", [str(binary), *container_args(deployment, {})], env)
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        """Wait until the controller has read its ConfigMap and leads (its log says so)."""
        deadline = time.monotonic() + timeout
        process = self.processes[-1]
        while time.monotonic() < deadline:
            self.check_alive()
            if "Starting Workflow Controller" in process.tail(400):  # config read, leading
                return
            time.sleep(0.2)
        raise TimeoutError(f"workflow-controller not ready after {timeout:.0f} s:\n{process.tail()}")
