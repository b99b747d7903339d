"""What Argo's and Volcano's installers share: their manifests applied server-side, their Deployments run as processes.

An upstream component runs as its Deployment says (its container's ``args``, its service account), with three
changes a machine without a container runtime needs: the binary is the one built from the module, every listening
port is picked free on loopback (so several sandboxes run at once), and the in-cluster identity is a kubeconfig of
the Deployment's service account token (so RBAC decides as on a cluster).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from airflow_provider_volcano_argo.sandbox.controlplane.binaries import Build, module_dir
from airflow_provider_volcano_argo.sandbox.controlplane.manifests import object_path
from airflow_provider_volcano_argo.sandbox.controlplane.processes import ControlPlane, ControlPlaneError, Process

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import KubeApi

FIELD_MANAGER = "volcano-argo-sandbox"
#: the kinds an installer's manifest holds that are workloads: the sandbox runs their binaries itself
WORKLOAD_KINDS = frozenset({"Deployment", "Job", "Service", "StatefulSet", "DaemonSet"})

TokenFor = Callable[[str, str], Path]  # (namespace, service account) -> a kubeconfig with its token


def load_documents(path: Path) -> list[dict]:
    """Return the documents of a multi-document YAML file, empty ones dropped."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def server_side_apply(api: KubeApi, doc: dict, namespace: str | None = None) -> dict:
    """Apply ``doc`` as ``kubectl apply --server-side --force-conflicts`` does, into ``namespace`` if it has none.

    Argo 4's CRDs are too large for a client-side apply's last-applied annotation.
    """
    if namespace and "namespace" not in doc.get("metadata", {}) and _namespaced(api, doc):
        doc = {**doc, "metadata": {**doc["metadata"], "namespace": namespace}}
    return api.request(
        "PATCH",
        object_path(api, doc),
        body=doc,
        query={"fieldManager": FIELD_MANAGER, "force": "true"},
        content_type="application/apply-patch+yaml",
    )


def _namespaced(api: KubeApi, doc: dict) -> bool:
    return "/namespaces/" in object_path(api, {**doc, "metadata": {**doc["metadata"], "namespace": "x"}})


def container_args(deployment: dict, replace: Mapping[str, str | None]) -> list[str]:
    """Return the Deployment's first container's ``args``, with flags in ``replace`` set (None: dropped).

    ``2>&1`` (Volcano's manifests pass it as an argument; the image's shell entry point reads it) is dropped, and a
    flag in ``replace`` the manifest lacks is added.
    """
    args, seen = [], set()
    for arg in deployment["spec"]["template"]["spec"]["containers"][0].get("args") or []:
        if arg == "2>&1":
            continue
        flag = arg.split("=", 1)[0]
        if flag in replace:
            seen.add(flag)
            if replace[flag] is not None:
                args.append(f"{flag}={replace[flag]}")
        else:
            args.append(arg)
    args += [f"{flag}={value}" for flag, value in replace.items() if flag not in seen and value is not None]
    return args


def service_account_of(deployment: dict) -> str:
    """Return the service account a Deployment's pods run as."""
    spec = deployment["spec"]["template"]["spec"]
    return spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"


class Component:
    """Upstream processes of one build, started and stopped together, each logging to the control plane's folder."""

    def __init__(self, build: Build, binaries: Mapping[str, Path], control_plane: ControlPlane, api: KubeApi):
        self.build, self.binaries, self.control_plane, self.api = build, binaries, control_plane, api
        self.module = module_dir(build)  # where upstream's install manifests are
        self.processes: list[Process] = []

    def run(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> Process:
        process = Process(name, argv, self.control_plane.dir / f"{name}.log", env)
        process.start()
        self.processes.append(process)
        return process

    def check_alive(self) -> None:
        """Raise with the log's tail if one of the processes has exited."""
        for process in self.processes:
            if not process.alive():
                raise ControlPlaneError(f"{process.name} exited:\n{process.tail()}")

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.processes = []
