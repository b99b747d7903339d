"""Volcano as its installer sets it up: ``installer/volcano-development.yaml`` of the module built from.

Everything but the workloads is applied as the file has it (namespaces, CRDs, RBAC, the scheduler's ConfigMap with
its default plugins, the admission webhooks). Then the three Deployments run as processes
(``vc-webhook-manager``, ``vc-controller-manager``, ``vc-scheduler``) with their ``args``, as their service accounts.
What a machine without a container runtime changes:

- the admission init Job (``gen-admission-secret.sh``: a certificate for the webhook Service) is replaced by a
  serving certificate of the sandbox's CA for 127.0.0.1, and each webhook's ``service`` by the ``url`` of the
  webhook server on loopback (both ``clientConfig`` forms are Kubernetes'; the webhook manager fills ``caBundle``
  itself, ``cmd/webhook-manager/app/util.go: addCaCertForWebhook``);
- ConfigMaps the Deployments mount become files the flags name, each ConfigMap in a folder of its own as the
  kubelet mounts one: the scheduler and the webhook manager watch their config file's whole folder
  (``fsnotify``) and reload on every write in it, so no log may live beside them;
- every listening address is a free loopback port (the health and metrics ports are fixed in the manifests).
"""

from __future__ import annotations

import base64
import socket
import subprocess
import time
from pathlib import Path

from airflow_provider_volcano_argo.sandbox.controlplane.crds import wait_established
from airflow_provider_volcano_argo.sandbox.controlplane.processes import free_port
from airflow_provider_volcano_argo.sandbox.upstream.install import (
    WORKLOAD_KINDS,
    Component,
    TokenFor,
    container_args,
    load_documents,
    server_side_apply,
    service_account_of,
)

INSTALLER = "installer/volcano-development.yaml"
NAMESPACE = "volcano-system"
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def webhook_by_url(doc: dict, url: str, ca_bundle: bytes) -> dict:
    """Return a webhook configuration whose webhooks call ``url`` + their service's path instead of the Service."""
    webhooks = []
    for hook in doc.get("webhooks") or []:
        config = dict(hook["clientConfig"])
        service = config.pop("service", None) or {}
        config["url"] = url + service.get("path", "")
        config["caBundle"] = base64.b64encode(ca_bundle).decode()
        webhooks.append({**hook, "clientConfig": config})
    return {**doc, "webhooks": webhooks}


def supported_flags(binary: Path) -> set[str]:
    """Return the long flags ``binary --help`` lists (older releases lack some of the newer ones)."""
    out = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30)
    return {word.split("=")[0].rstrip(",") for word in (out.stdout + out.stderr).split() if word.startswith("--")}


def _serving(port: int, timeout: float) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


class Volcano(Component):
    """Install Volcano from ``build``'s module and run its three components.

    ``start()`` returns once the webhooks serve and the ``default`` queue is Open.
    """

    def start(self, kubeconfig_for: TokenFor, timeout: float = 120) -> None:
        self.webhook_port = free_port()
        docs = load_documents(self.module / INSTALLER)
        url = f"https://127.0.0.1:{self.webhook_port}"
        ca = Path(self.control_plane.pki.ca_file).read_bytes()
        files: dict[str, Path] = {}
        for doc in docs:
            kind = doc["kind"]
            if kind in WORKLOAD_KINDS:
                continue
            if kind == "ConfigMap":
                folder = self.control_plane.dir / "configmaps" / doc["metadata"]["name"]
                folder.mkdir(parents=True, exist_ok=True)
                for key, value in (doc.get("data") or {}).items():
                    files[key] = folder / key
                    files[key].write_text(value)
            server_side_apply(self.api, webhook_by_url(doc, url, ca) if kind in WEBHOOK_KINDS else doc)
        wait_established(self.api, [d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"])
        deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
        cert, key = self.control_plane.pki.serving("volcano-admission")
        self._run(
            "vc-webhook-manager",
            deployments["volcano-admission"],
            kubeconfig_for,
            {
                "--tls-cert-file": str(cert),
                "--tls-private-key-file": str(key),
                "--ca-cert-file": str(self.control_plane.pki.ca_file),
                "--admission-conf": str(files.get("volcano-admission.conf", "")) or None,
                "--listen-address": "127.0.0.1",
                "--port": str(self.webhook_port),
            },
        )
        self._run("vc-controller-manager", deployments["volcano-controllers"], kubeconfig_for, {})
        self._run(
            "vc-scheduler",
            deployments["volcano-scheduler"],
            kubeconfig_for,
            {"--scheduler-conf": str(files["volcano-scheduler.conf"])},
        )
        self._wait_ready(timeout)

    def _run(self, name: str, deployment: dict, kubeconfig_for: TokenFor, flags: dict[str, str | None]) -> None:
        binary = self.binaries[name]
        known = supported_flags(binary)
        ports = {
            flag: f"127.0.0.1:{free_port()}"
            for flag in ("--healthz-address", "--listen-address")
            if flag in known and flag not in flags
        }
        kubeconfig = kubeconfig_for(
            deployment["metadata"].get("namespace") or NAMESPACE, service_account_of(deployment)
        )
        args = container_args(deployment, {**ports, **flags, "--kubeconfig": str(kubeconfig)})
        self.run(name, [str(binary), *args])

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            queue = self.api.get_or_none("queues", "default") or {}
            if _serving(self.webhook_port, 1) and (queue.get("status") or {}).get("state") == "Open":
                return
            time.sleep(0.2)
        raise TimeoutError(f"Volcano not ready after {timeout:.0f} s (webhooks on :{self.webhook_port}, queue default)")
