"""The MPI pods' settings (data, secrets, placement, resources), checked and turned into template parameters.

The arguments have KubernetesPodOperator's names and types and apply to master and workers alike, except the
per-role resources and ``pod_overrides``. Each role's settings reach its pod template as four JSON parameters
(``inert_json``) that the shipped template merges with YAML merge keys (``<<:``): ``<role>-pod`` into the pod
spec, ``<role>-container`` into the role's container, ``<role>-pod-labels`` / ``<role>-pod-annotations`` into
its metadata. A merge key never overrides a key the template writes itself, so ``pod_overrides`` may not set
those (the container's name, image, command, args, ports and probe; the pod's containers, init containers and
restart policy; the labels ``app.kubernetes.io/managed-by`` and ``workflows.argoproj.io/workflow``): they are
refused, naming the argument that sets them, instead of being silently dropped.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from airflow_provider_volcano_argo.models.names import MANAGED_BY_LABEL
from airflow_provider_volcano_argo.models.params import (
    InvalidParameterError,
    check_dns_label,
    check_dns_subdomain,
    check_quantity,
    validate_labels,
)
from airflow_provider_volcano_argo.models.pod_schema import to_api, to_api_checked

ROLES = ("mpimaster", "mpiworker")
DEFAULT_WORKING_DIR = "/home"
# pod spec keys the template writes itself, and what to use instead
TEMPLATE_POD_KEYS = {
    "containers": "the role's container is changed through pod_overrides[role]['spec']['containers'][0]",
    "initContainers": "the master's init container waits for the workers; set its image with init_image",
    "restartPolicy": "the template's restart policies are what its Volcano policies rely on",
}
TEMPLATE_CONTAINER_KEYS = {
    "name": "the container is named after its role",
    "image": "use image",
    "command": "use mpi_command, mpi_args and mpi_launcher_flags",
    "args": "use mpi_command, mpi_args and mpi_launcher_flags",
    "ports": "the template opens the ssh port",
    "readinessProbe": "the template probes sshd so the master starts once workers accept ssh",
}
# pod labels the template writes itself (after its merge key, so a value given here would be dropped)
TEMPLATE_LABEL_KEYS = {
    MANAGED_BY_LABEL: "the triggerer's watches select the run's pods by it",
    "workflows.argoproj.io/workflow": "it names the Workflow that created the pod",
}
_LISTS_EXTENDED = ("volumes", "tolerations", "imagePullSecrets", "env", "envFrom", "volumeMounts")
_TOLERATION_OPERATORS = ("Exists", "Equal")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def merge(base: dict, extra: dict) -> dict:
    """Return ``base`` with ``extra`` merged in: mappings recursively, the lists above extended, the rest set."""
    result = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        elif key in _LISTS_EXTENDED and isinstance(result.get(key), list):
            result[key] = result[key] + copy.deepcopy(value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def env_list(field: str, env_vars: Any) -> list[dict] | None:
    """Return ``env_vars`` (a dict of names to text, or a list of ``V1EnvVar``) as API JSON, names checked."""
    if isinstance(env_vars, dict):
        for name, value in env_vars.items():
            if not isinstance(value, str):
                raise InvalidParameterError(f"{field}[{name!r}]", "must be text (env values are strings)", value)
        env_vars = [{"name": name, "value": value} for name, value in env_vars.items()]
    items = to_api_checked(field, env_vars, "list[V1EnvVar]")
    for i, item in enumerate(items or []):
        # since v1.30 (RelaxedEnvironmentVariableValidation) a name is any printable ASCII but '='
        name = item["name"]
        if not name or "=" in name or not all(" " <= ch <= "~" for ch in name):
            raise InvalidParameterError(f"{field}[{i}].name", "must be printable ASCII without '='", name)
    return items


def resources(field: str, value: Any) -> dict | None:
    """Return a ``V1ResourceRequirements`` (or dict) as API JSON with every quantity checked."""
    if isinstance(value, dict):  # numbers are quantities too ({"cpu": 2})
        value = {
            k: {n: str(q) if isinstance(q, int) and not isinstance(q, bool) else q for n, q in v.items()}
            if isinstance(v, dict)
            else v
            for k, v in value.items()
        }
    data = to_api(field, value, "V1ResourceRequirements")
    for part in ("requests", "limits"):
        for name, quantity in (data or {}).get(part, {}).items():
            check_quantity(f"{field}.{part}[{name!r}]", quantity)
    return data


def _image_pull_secrets(value: Any) -> list[dict] | None:
    if isinstance(value, str):  # KubernetesPodOperator's comma-separated form
        value = [{"name": name.strip()} for name in value.split(",") if name.strip()]
    items = to_api_checked("image_pull_secrets", value, "list[V1LocalObjectReference]")
    for i, item in enumerate(items or []):
        check_dns_subdomain(f"image_pull_secrets[{i}].name", item.get("name"))
    return items


def _tolerations(value: Any) -> list[dict] | None:
    items = to_api_checked("tolerations", value, "list[V1Toleration]")
    for i, item in enumerate(items or []):
        if item.get("operator", "Equal") not in _TOLERATION_OPERATORS:
            raise InvalidParameterError(f"tolerations[{i}].operator", "must be Exists or Equal", item["operator"])
        if item.get("effect") not in (None, "", *_TAINT_EFFECTS):
            raise InvalidParameterError(
                f"tolerations[{i}].effect", f"must be one of {', '.join(_TAINT_EFFECTS)} or empty", item["effect"]
            )
        if item.get("operator") == "Exists" and item.get("value"):
            raise InvalidParameterError(f"tolerations[{i}].value", "must be empty with operator Exists", item)
    return items


@dataclass
class MPIPodSettings:
    """What the MPI pods get beyond the MPI program: KubernetesPodOperator's arguments, per role where noted."""

    volumes: Any = None
    volume_mounts: Any = None
    env_vars: Any = None
    env_from: Any = None
    node_selector: Any = None
    tolerations: Any = None
    affinity: Any = None
    image_pull_secrets: Any = None
    service_account_name: str | None = None
    master_resources: Any = None
    worker_resources: Any = None
    pod_overrides: Any = None
    working_dir: str = DEFAULT_WORKING_DIR

    def shared_pod_spec(self) -> dict:
        """Return the pod spec fields both roles get, checked."""
        volumes = to_api_checked("volumes", self.volumes, "list[V1Volume]")
        names: set[str] = set()
        for i, volume in enumerate(volumes or []):
            check_dns_label(f"volumes[{i}].name", volume["name"])
            if volume["name"] in names:
                raise InvalidParameterError(f"volumes[{i}].name", "is given twice", volume["name"])
            names.add(volume["name"])
        spec = {
            "volumes": volumes,
            "nodeSelector": validate_labels("node_selector", self.node_selector) if self.node_selector else None,
            "tolerations": _tolerations(self.tolerations),
            "affinity": to_api_checked("affinity", self.affinity, "V1Affinity"),
            "imagePullSecrets": _image_pull_secrets(self.image_pull_secrets),
        }
        if self.service_account_name is not None:
            spec["serviceAccountName"] = check_dns_subdomain("service_account_name", self.service_account_name)
        return {k: v for k, v in spec.items() if v}

    def shared_container(self) -> dict:
        """Return the container fields both roles' containers get, checked."""
        if not isinstance(self.working_dir, str) or not self.working_dir or "\x00" in self.working_dir:
            raise InvalidParameterError("working_dir", "must be a path", self.working_dir)
        container = {
            "workingDir": self.working_dir,
            "env": env_list("env_vars", self.env_vars),
            "envFrom": to_api_checked("env_from", self.env_from, "list[V1EnvFromSource]"),
            "volumeMounts": to_api_checked("volume_mounts", self.volume_mounts, "list[V1VolumeMount]"),
        }
        return {k: v for k, v in container.items() if v}

    def overrides(self) -> dict[str, dict]:
        """Return ``pod_overrides`` per role as API JSON (a ``V1PodTemplateSpec`` each), template keys refused."""
        given = self.pod_overrides or {}
        if not isinstance(given, dict) or set(given) - set(ROLES):
            raise InvalidParameterError("pod_overrides", f"must map {' and/or '.join(ROLES)} to a pod template", given)
        result = {}
        for role, template in given.items():
            field = f"pod_overrides[{role!r}]"
            data = to_api(field, template, "V1PodTemplateSpec") or {}
            meta = data.get("metadata") or {}
            for key in set(meta) - {"labels", "annotations"}:
                raise InvalidParameterError(f"{field}.metadata.{key}", "only labels and annotations can be set", meta)
            validate_labels(f"{field}.metadata.labels", meta.get("labels") or {})
            for key in set(meta.get("labels") or {}) & set(TEMPLATE_LABEL_KEYS):
                raise InvalidParameterError(
                    f"{field}.metadata.labels[{key!r}]", f"is set by the template: {TEMPLATE_LABEL_KEYS[key]}"
                )
            validate_labels(f"{field}.metadata.annotations", {k: "" for k in meta.get("annotations") or {}})
            spec = data.get("spec") or {}
            for key in set(spec) & set(TEMPLATE_POD_KEYS) - {"containers"}:
                raise InvalidParameterError(f"{field}.spec.{key}", f"is set by the template: {TEMPLATE_POD_KEYS[key]}")
            containers = spec.get("containers") or []
            if len(containers) > 1 or any(c.get("name", role) != role for c in containers):
                raise InvalidParameterError(
                    f"{field}.spec.containers", f"may hold one container, named {role!r} (no sidecars)", containers
                )
            container = dict(containers[0]) if containers else {}
            container.pop("name", None)
            for key in set(container) & set(TEMPLATE_CONTAINER_KEYS):
                raise InvalidParameterError(
                    f"{field}.spec.containers[0].{key}", f"is set by the template: {TEMPLATE_CONTAINER_KEYS[key]}"
                )
            if "resources" in container:
                container["resources"] = resources(f"{field}.spec.containers[0].resources", container["resources"])
            result[role] = {
                "metadata": meta,
                "spec": {k: v for k, v in spec.items() if k != "containers"},
                "container": container,
            }
        return result

    def role_parameters(self, worker_resources: dict) -> dict[str, dict]:
        """Return each role's pod, container, labels and annotations (before JSON), all checked.

        ``worker_resources`` are the workers' requests and limits from the per-worker settings; the
        ``worker_resources`` argument's entries replace them name by name.
        """
        pod, container, overrides = self.shared_pod_spec(), self.shared_container(), self.overrides()
        given = {
            "mpimaster": resources("master_resources", self.master_resources),
            "mpiworker": resources("worker_resources", self.worker_resources),
        }
        base_resources = {"mpimaster": {}, "mpiworker": worker_resources}
        result = {}
        for role in ROLES:
            extra = overrides.get(role, {"metadata": {}, "spec": {}, "container": {}})
            role_pod = merge(pod, extra["spec"])
            if role == "mpimaster":
                role_pod.setdefault("serviceAccountName", "argo")  # kubectl wait in the init container lists pods
            role_resources = merge(base_resources[role], given[role] or {})
            role_container = merge(
                {**container, **({"resources": role_resources} if role_resources else {})}, extra["container"]
            )
            known = {v["name"] for v in role_pod.get("volumes", [])}
            for i, mount in enumerate(role_container.get("volumeMounts", [])):
                if mount["name"] not in known:
                    raise InvalidParameterError(
                        f"volume_mounts[{i}].name",
                        f"names no volume of the {role} pod (volumes: {sorted(known)})",
                        mount["name"],
                    )
            result[role] = {
                "pod": role_pod,
                "container": role_container,
                "pod-labels": extra["metadata"].get("labels") or {},
                "pod-annotations": extra["metadata"].get("annotations") or {},
            }
        return result
