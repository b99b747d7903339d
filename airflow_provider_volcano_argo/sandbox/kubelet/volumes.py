"""A pod's volumes on an emulated node, set up as the kubelet's volume manager sets them up.

Every volume is a real directory under the kubelet's work directory (``pods/<uid>/volumes/<plugin>/<name>``, as
``/var/lib/kubelet/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>``), and each node has a root directory of its
own standing for the node's filesystem (``hostPath``). Follows Kubernetes v1.31:

- ``configMap``: ``pkg/volume/configmap/configmap.go: SetUpAt, MakePayload`` (missing object: the API's
  ``configmap "X" not found`` unless ``optional``; an ``items`` key the object lacks: ``configmap references
  non-existent config key: K``);
- ``secret``: ``pkg/volume/secret/secret.go: SetUpAt, MakePayload`` (``secret references non-existent secret
  key: K``);
- ``emptyDir``: ``pkg/volume/emptydir/empty_dir.go: SetUpAt`` (a fresh directory per pod, shared by its
  containers);
- ``hostPath``: ``pkg/volume/hostpath/host_path.go: SetUp, checkTypeInternal`` (``hostPath type check failed: P is
  not a directory`` / ``is not a file``; ``DirectoryOrCreate`` / ``FileOrCreate`` create);
- ``persistentVolumeClaim``: ``pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go:
  getPVCExtractPV`` (the claim must exist and be bound); the bound PersistentVolume's ``hostPath`` / ``local``
  path is mounted from the node's root;
- ``downwardAPI`` and ``projected`` (configMap, secret, downwardAPI, serviceAccountToken sources):
  ``pkg/volume/downwardapi/downwardapi.go: CollectData``, ``pkg/volume/projected/projected.go: collectData``; a
  token is a TokenRequest bound to the pod (``pkg/kubelet/token/token_manager.go: GetServiceAccountToken``), as
  the ``kube-api-access-*`` volume the ServiceAccount admission plugin adds to every pod needs.

A failure is ``MountVolume.SetUp failed for volume "V" : <error>`` (``operation_generator.go:
GenerateMountVolumeFunc``, ``GenerateError``), an Event ``FailedMount``; the pod's containers wait
``ContainerCreating`` and the mount is retried (``nestedpendingoperations``: 0.5 s doubling to 2 min 2 s).

Pure of the API: objects come from ``get(kind, name)`` (data decoded, None when absent).
"""

from __future__ import annotations

import base64
import shutil
from collections.abc import Callable
from pathlib import Path

from airflow_provider_volcano_argo.sandbox.kubelet.envvars import CreateContainerConfigError, field_value, not_found

Getter = Callable[[str, str], "dict | None"]
TokenRequester = Callable[[dict], bytes]  # serviceAccountToken source -> the token

READ_ONLY_PLUGINS = ("configmap", "secret", "downward-api", "projected")
MOUNT_RETRY_START, MOUNT_RETRY_MAX = 0.5, 122.0  # exponentialbackoff: initialDurationBeforeRetry, maxDuration...


class MountError(Exception):
    """One volume could not be set up: ``str()`` is the FailedMount Event's message."""

    def __init__(self, volume: str, error: str):
        super().__init__(f'MountVolume.SetUp failed for volume "{volume}" : {error}')
        self.volume, self.error = volume, error


def _payload(kind: str, name: str, items: list | None, optional: bool, get: Getter) -> dict[str, bytes]:
    """``MakePayload``: file path -> content of a ConfigMap's (data + binaryData) or a Secret's keys."""
    obj = get(kind, name)
    if obj is None:
        if not optional:
            raise ValueError(not_found(kind, name))
        obj = {}
    if items:
        payload: dict[str, bytes] = {}
        for item in items:
            if item["key"] in obj:
                payload[item.get("path") or item["key"]] = obj[item["key"]]
            elif not optional:
                noun = (
                    "configmap references non-existent config key"
                    if kind == "configmaps"
                    else ("secret references non-existent secret key")
                )
                raise ValueError(f"{noun}: {item['key']}")
        return payload
    return dict(obj)


def _downward(pod: dict, items: list | None) -> dict[str, bytes]:
    payload = {}
    for item in items or []:
        if "fieldRef" in item:
            try:
                value = field_value(pod, item["fieldRef"].get("fieldPath", ""))
            except CreateContainerConfigError as exc:
                raise ValueError(str(exc)) from None
            payload[item["path"]] = value.encode()
    return payload


def object_data(obj: dict | None, kind: str) -> dict[str, bytes] | None:
    """Return a ConfigMap's or Secret's keys as bytes (what a volume's files hold); None stays None."""
    if obj is None:
        return None
    out: dict[str, bytes] = {}
    if kind == "secrets":
        for key, value in (obj.get("data") or {}).items():
            out[key] = base64.b64decode(value)
        for key, value in (obj.get("stringData") or {}).items():
            out[key] = str(value).encode()
        return out
    for key, value in (obj.get("data") or {}).items():
        out[key] = str(value).encode()
    for key, value in (obj.get("binaryData") or {}).items():
        out[key] = base64.b64decode(value)
    return out


class PodVolumes:
    """The volumes of one pod: ``set_up()`` mounts what it can, ``host_path()`` maps a container path to a file.

    ``get(kind, name)`` returns ``object_data`` for configmaps/secrets and the raw object for
    persistentvolumeclaims/persistentvolumes (None when absent).
    """

    def __init__(self, pod: dict, pod_dir: Path, node_root: Path, get: Getter, token: TokenRequester):
        self.pod = pod
        self.pod_dir = pod_dir
        self.node_root = node_root
        self.get = get
        self.token = token
        self.mounted: dict[str, Path] = {}

    def set_up(self) -> list[MountError]:
        """Mount every volume not mounted yet; return the failures (empty: all mounted)."""
        errors = []
        for volume in self.pod["spec"].get("volumes") or []:
            name = volume["name"]
            if name in self.mounted:
                continue
            try:
                self.mounted[name] = self._set_up(volume)
            except ValueError as exc:
                errors.append(MountError(name, str(exc)))
        return errors

    def _dir(self, plugin: str, name: str) -> Path:
        return self.pod_dir / "volumes" / f"kubernetes.io~{plugin}" / name

    def _write(self, plugin: str, name: str, payload: dict[str, bytes]) -> Path:
        """``AtomicWriter.Write``: the directory holds exactly the payload."""
        target = self._dir(plugin, name)
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for path, content in payload.items():
            file = target / path
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(content)
        return target

    def _host(self, path: str) -> Path:
        return self.node_root / path.lstrip("/")

    def _set_up(self, volume: dict) -> Path:
        name = volume["name"]
        if "configMap" in volume:
            source = volume["configMap"]
            payload = _payload(
                "configmaps", source.get("name", ""), source.get("items"), bool(source.get("optional")), self.get
            )
            return self._write("configmap", name, payload)
        if "secret" in volume:
            source = volume["secret"]
            payload = _payload(
                "secrets", source.get("secretName", ""), source.get("items"), bool(source.get("optional")), self.get
            )
            return self._write("secret", name, payload)
        if "downwardAPI" in volume:
            return self._write("downward-api", name, _downward(self.pod, volume["downwardAPI"].get("items")))
        if "projected" in volume:
            payload = {}
            for source in volume["projected"].get("sources") or []:
                if "configMap" in source:
                    ref = source["configMap"]
                    payload.update(
                        _payload(
                            "configmaps", ref.get("name", ""), ref.get("items"), bool(ref.get("optional")), self.get
                        )
                    )
                elif "secret" in source:
                    ref = source["secret"]
                    payload.update(
                        _payload("secrets", ref.get("name", ""), ref.get("items"), bool(ref.get("optional")), self.get)
                    )
                elif "downwardAPI" in source:
                    payload.update(_downward(self.pod, source["downwardAPI"].get("items")))
                elif "serviceAccountToken" in source:
                    payload[source["serviceAccountToken"]["path"]] = self.token(source["serviceAccountToken"])
            return self._write("projected", name, payload)
        if "emptyDir" in volume:
            target = self._dir("empty-dir", name)
            target.mkdir(parents=True, exist_ok=True)
            return target
        if "hostPath" in volume:
            return self._host_path(volume["hostPath"].get("path", ""), volume["hostPath"].get("type") or "")
        if "persistentVolumeClaim" in volume:
            return self._claim(volume["persistentVolumeClaim"].get("claimName", ""))
        raise ValueError(f"volume {name}: this emulated kubelet has no plugin for it")

    def _host_path(self, path: str, kind: str) -> Path:
        """``hostPathMounter.SetUp`` -> ``checkTypeInternal``; an unset type checks nothing."""
        if ".." in path.split("/"):
            raise ValueError(f"invalid HostPath `{path}`: must not contain '..'")
        host = self._host(path)
        if kind == "DirectoryOrCreate" and not host.exists():
            host.mkdir(parents=True, mode=0o755)
        elif kind == "FileOrCreate" and not host.exists():
            host.parent.mkdir(parents=True, exist_ok=True)
            host.touch(mode=0o644)
        if kind in ("Directory", "DirectoryOrCreate") and not host.is_dir():
            raise ValueError(f"hostPath type check failed: {path} is not a directory")
        if kind in ("File", "FileOrCreate") and not host.is_file():
            raise ValueError(f"hostPath type check failed: {path} is not a file")
        if kind in ("Socket", "CharDevice", "BlockDevice"):
            noun = {"Socket": "a socket file", "CharDevice": "a character device", "BlockDevice": "a block device"}
            raise ValueError(f"hostPath type check failed: {path} is not {noun[kind]}")
        return host

    def _claim(self, claim: str) -> Path:
        """Mount a bound claim's PersistentVolume (``hostPath`` or ``local``: a path on the node)."""
        namespace = self.pod["metadata"].get("namespace", "")
        pvc = self.get("persistentvolumeclaims", claim)
        if pvc is None:
            raise ValueError(
                f"error processing PVC {namespace}/{claim}: failed to fetch PVC from API server: "
                f'persistentvolumeclaims "{claim}" not found'
            )
        volume_name = (pvc.get("spec") or {}).get("volumeName")
        if (pvc.get("status") or {}).get("phase") != "Bound" or not volume_name:
            raise ValueError(f"error processing PVC {namespace}/{claim}: PVC is not bound")
        pv = self.get("persistentvolumes", volume_name)
        if pv is None:
            raise ValueError(
                f"error processing PVC {namespace}/{claim}: failed to fetch PV {volume_name} from API server: "
                f'persistentvolumes "{volume_name}" not found'
            )
        spec = pv.get("spec") or {}
        source = spec.get("hostPath") or spec.get("local")
        if not source:
            raise ValueError(f"volume {volume_name}: only hostPath and local PersistentVolumes are emulated")
        return self._host_path(source.get("path", ""), (spec.get("hostPath") or {}).get("type") or "")

    @staticmethod
    def mount_of(container: dict, path: str) -> dict | None:
        """Return the mount of ``container`` that holds ``path`` (the deepest), None if none does."""
        mounts = sorted(
            container.get("volumeMounts") or [], key=lambda m: len(m["mountPath"].rstrip("/")), reverse=True
        )
        for mount in mounts:
            root = mount["mountPath"].rstrip("/") or "/"
            if path == root or path.startswith(root.rstrip("/") + "/"):
                return mount
        return None

    def host_path(self, container: dict, path: str) -> Path | None:
        """Return the node file behind ``path`` in ``container`` (its mounts, deepest first, ``subPath`` applied)."""
        mount = self.mount_of(container, path)
        base = self.mounted.get(mount["name"]) if mount else None
        if mount is None or base is None:
            return None
        if mount.get("subPath"):
            base = base / mount["subPath"]
        rest = path[len(mount["mountPath"].rstrip("/")) :].lstrip("/")
        return base / rest if rest else base

    def read_only(self, mount: dict) -> bool:
        """Tell whether ``mount`` is read-only: asked so, or of a plugin that mounts read-only.

        ConfigMap, Secret, downwardAPI and projected volumes are (``pkg/volume``: their ``GetAttributes`` ReadOnly).
        """
        if mount.get("readOnly"):
            return True
        base = self.mounted.get(mount["name"])
        volumes_dir = self.pod_dir / "volumes"
        return base is not None and any(
            base.is_relative_to(volumes_dir / f"kubernetes.io~{p}") for p in READ_ONLY_PLUGINS
        )

    def tear_down(self) -> None:
        """Remove the pod's directory (its emptyDirs and copies of ConfigMaps/Secrets); the node's files stay."""
        shutil.rmtree(self.pod_dir, ignore_errors=True)
