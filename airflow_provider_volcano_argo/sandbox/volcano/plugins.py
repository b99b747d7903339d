"""Volcano job plugins ``svc``, ``ssh`` and ``env``: their resources and what they add to each pod.

Follows ``pkg/controllers/job/plugins/svc/svc.go``, ``plugins/ssh/ssh.go`` and ``plugins/env/env.go``.
"""

from __future__ import annotations

import base64
import copy
import functools

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from airflow_provider_volcano_argo.sandbox.volcano.rules import pod_name

SVC_MOUNT = "/etc/volcano"
SSH_MOUNT = "/root/.ssh"


def hosts(job: dict) -> dict[str, str]:
    """Return the ``<job>-svc`` ConfigMap data (``GenerateHosts``)."""
    name = job["metadata"]["name"]
    data: dict[str, str] = {}
    for task in job["spec"]["tasks"]:
        key = task["name"].replace("-", "_")
        names = [f"{pod_name(name, task['name'], i)}.{name}" for i in range(int(task.get("replicas", 0)))]
        data[f"{key}.host"] = "\n".join(names)
        data[f"VC_{key.upper()}_HOSTS"] = ",".join(names)
        data[f"VC_{key.upper()}_NUM"] = str(len(names))
    return data


@functools.lru_cache(maxsize=1)
def _key_pair() -> tuple[str, str]:
    # One 2048-bit key per sandbox process: generating one per job would cost ~0.1 s each and prove nothing.
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return private, public


def ssh_secret_data(job: dict) -> dict[str, str]:
    """Return the ``<job>-ssh`` Secret data (base64): id_rsa, id_rsa.pub, authorized_keys, config."""
    private, public = _key_pair()
    name = job["metadata"]["name"]
    config = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
    for task in job["spec"]["tasks"]:
        for i in range(int(task.get("replicas", 0))):
            pod = pod_name(name, task["name"], i)
            config += f"Host {pod}\n  HostName {pod}.{name}\n  Port 22\n"
    raw = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public, "config": config}
    return {k: base64.b64encode(v.encode()).decode() for k, v in raw.items()}


def plugin_resources(job: dict, owner: dict) -> list[tuple[str, dict]]:
    """(kind, object) for every resource the job's plugins own."""
    meta = job["metadata"]
    name, ns = meta["name"], meta["namespace"]
    plugins = job["spec"].get("plugins") or {}
    out: list[tuple[str, dict]] = []
    base = {"namespace": ns, "ownerReferences": [owner]}
    if "svc" in plugins:
        out.append(("configmaps", {"metadata": {"name": f"{name}-svc", **base}, "data": hosts(job)}))
        out.append(
            (
                "services",
                {
                    "metadata": {"name": name, **base},
                    "spec": {
                        "clusterIP": "None",
                        "selector": {"volcano.sh/job-name": name, "volcano.sh/job-namespace": ns},
                        "publishNotReadyAddresses": False,
                        "ports": [{"name": "placeholder-volcano", "port": 1}],
                    },
                },
            )
        )
        out.append(
            (
                "networkpolicies",
                {
                    "metadata": {"name": name, **base},
                    "spec": {
                        "podSelector": {"matchLabels": {"volcano.sh/job-name": name, "volcano.sh/job-namespace": ns}},
                        "ingress": [
                            {
                                "from": [
                                    {
                                        "podSelector": {
                                            "matchLabels": {"volcano.sh/job-name": name, "volcano.sh/job-namespace": ns}
                                        }
                                    }
                                ]
                            }
                        ],
                        "policyTypes": ["Ingress"],
                    },
                },
            )
        )
    if "ssh" in plugins:
        out.append(
            ("secrets", {"metadata": {"name": f"{name}-ssh", **base}, "type": "Opaque", "data": ssh_secret_data(job)})
        )
    return out


def controlled_resources(job: dict) -> dict[str, str]:
    return {f"plugin-{p}": p for p in sorted(job["spec"].get("plugins") or {}) if p in ("svc", "ssh", "env")}


def mutate_pod(pod: dict, job: dict, task: dict, index: int) -> dict:
    """Add the plugins' hostname, volumes, mounts and environment to a new pod (``OnPodCreate``)."""
    pod = copy.deepcopy(pod)
    spec = pod["spec"]
    name = job["metadata"]["name"]
    plugins = job["spec"].get("plugins") or {}
    containers = spec.get("containers", []) + spec.get("initContainers", [])
    if "svc" in plugins:
        spec.setdefault("hostname", pod["metadata"]["name"])
        spec.setdefault("subdomain", name)
        spec.setdefault("volumes", []).append({"name": f"{name}-svc", "configMap": {"name": f"{name}-svc"}})
        for container in containers:
            container.setdefault("volumeMounts", []).append({"name": f"{name}-svc", "mountPath": SVC_MOUNT})
            for other in job["spec"]["tasks"]:
                key = other["name"].replace("-", "_").upper()
                for suffix in ("HOSTS", "NUM"):
                    container.setdefault("env", []).append(
                        {
                            "name": f"VC_{key}_{suffix}",
                            "valueFrom": {"configMapKeyRef": {"name": f"{name}-svc", "key": f"VC_{key}_{suffix}"}},
                        }
                    )
    if "ssh" in plugins:
        spec.setdefault("volumes", []).append(
            {
                "name": f"{name}-ssh",
                "secret": {
                    "secretName": f"{name}-ssh",
                    "defaultMode": 0o600,
                    "items": [
                        {"key": k, "path": f".ssh/{k}"} for k in ("id_rsa", "id_rsa.pub", "authorized_keys", "config")
                    ],
                },
            }
        )
        for container in containers:
            container.setdefault("volumeMounts", []).append(
                {"name": f"{name}-ssh", "mountPath": SSH_MOUNT, "subPath": ".ssh"}
            )
    if "env" in plugins:
        for container in containers:
            container.setdefault("env", []).extend(
                [{"name": "VK_TASK_INDEX", "value": str(index)}, {"name": "VC_TASK_INDEX", "value": str(index)}]
            )
    return pod
