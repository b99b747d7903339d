"""What the kubelet sets up before a pod's containers start: its volumes, then each container's env.

Both read Secrets, ConfigMaps and claims as the node (``system:node:<name>``) and retry as upstream does, with
the containers waiting meanwhile (``ContainerCreating``, ``CreateContainerConfigError``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import RESOURCES, ApiException, KubeApi, status_message
from airflow_provider_volcano_argo.sandbox.kubelet.envvars import CreateContainerConfigError, resolve_env
from airflow_provider_volcano_argo.sandbox.kubelet.volumes import (
    MOUNT_RETRY_MAX,
    MOUNT_RETRY_START,
    PodVolumes,
    object_data,
)

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.kubelet.pod_status import ContainerRun
    from airflow_provider_volcano_argo.sandbox.kubelet.pods import Recorder

log = logging.getLogger(__name__)

POD_IP = "127.0.0.1"  # every emulated pod and node
# pod_workers.go: a sync that failed (CreateContainerConfigError) is requeued after the kubelet's backOffPeriod
SYNC_RETRY_SECONDS = 10.0


class PodSetup:
    """The set-up part of ``PodRunner`` (a mixin: it uses the runner's pod, API, stop event and status)."""

    pod: dict
    node_api: KubeApi
    volumes: PodVolumes | None
    stop: threading.Event
    lock: Any
    time_scale: float
    record: Recorder

    key: tuple[str, str]

    def report(self) -> None:
        """Write the pod's status (``PodRunner.report``)."""
        raise NotImplementedError

    def _object(self, kind: str, name: str):
        """GET an object the pod references, as the node; None when it does not exist.

        ConfigMaps and Secrets come back as their keys (bytes). A 403 is retried for a second: the Node
        authorizer learns a pod's references from its own informer, a moment after the pod is bound.
        """
        namespace = None if kind == "persistentvolumes" else self.pod["metadata"]["namespace"]
        for attempt in range(10):
            try:
                obj = self.node_api.get_or_none(kind, name, namespace)
                break
            except ApiException as exc:
                if exc.status != 403 or attempt == 9:
                    raise
                time.sleep(0.1)
        if kind in ("configmaps", "secrets"):
            return object_data(obj, kind)
        return obj

    def _token(self, source: dict) -> bytes:
        """Request the pod's service account token for a projected source, as the node (``TokenRequest``).

        ``token_manager.go: GetServiceAccountToken`` with the source's audience and expiration (default 1 h),
        bound to the pod (``projected.go: collectData``); the Node authorizer allows it for pods bound to it.
        """
        meta = self.pod["metadata"]
        spec = {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}}
        spec["expirationSeconds"] = int(source.get("expirationSeconds") or 3600)
        if source.get("audience"):
            spec["audiences"] = [source["audience"]]
        path = RESOURCES["serviceaccounts"].path(
            meta["namespace"], self.pod["spec"].get("serviceAccountName") or "default", "token"
        )
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        try:
            return self.node_api.request("POST", path, body=body)["status"]["token"].encode()
        except ApiException as exc:
            raise ValueError(status_message(exc)) from None

    def _text_object(self, kind: str, name: str) -> dict[str, str] | None:
        data = self._object(kind, name)
        return None if data is None else {k: v.decode("utf-8", "replace") for k, v in data.items()}

    def _environment(self, run: ContainerRun) -> dict[str, str] | None:
        """Resolve the container's env before creating it, retrying as the pod worker does; None once stopping.

        ``kuberuntime_container.go: startContainer`` -> ``generateContainerConfig`` -> ``kubelet_pods.go:
        makeEnvironmentVariables``: on error the container is not created, an Event ``Failed`` ``Error: <text>``
        is recorded, the container waits ``CreateContainerConfigError`` with the text as its message, and the
        pod worker syncs the pod again after ``backOffPeriod`` (10 s, times ``time_scale``).
        """
        while not self.stop.is_set():
            try:
                return resolve_env(self.pod, run.spec, self._text_object, pod_ip=POD_IP)
            except CreateContainerConfigError as exc:
                message = str(exc)
            except ApiException as exc:
                message = status_message(exc)
            except Exception as exc:  # the API server restarting
                message = str(exc)
            with self.lock:
                run.state = {"waiting": {"reason": "CreateContainerConfigError", "message": message}}
            self.record(self.pod, "Warning", "Failed", f"Error: {message}", f"spec.containers{{{run.spec['name']}}}")
            self.report()
            if self.stop.wait(SYNC_RETRY_SECONDS * self.time_scale):
                return None
        return None

    def _mount_volumes(self) -> bool:
        """Mount the pod's volumes before any container starts (``volume_manager.go: WaitForAttachAndMount``).

        Each failure is an Event ``FailedMount`` (``MountVolume.SetUp failed for volume "V" : ...``) and is retried
        with the operation's exponential back-off (0.5 s doubling to 122 s, times ``time_scale``) until it mounts;
        the containers wait ``ContainerCreating`` meanwhile. False once the pod is stopping.
        """
        if self.volumes is None:
            return True
        delay = MOUNT_RETRY_START
        while not self.stop.is_set():
            try:
                errors = self.volumes.set_up()
            except Exception as exc:  # the API server restarting: the reconciler tries again
                log.debug("mounting volumes of %s/%s: %s", *self.key, exc)
                errors = []
                if self.stop.wait(delay * self.time_scale):
                    return False
                continue
            if not errors:
                return True
            for error in errors:
                self.record(self.pod, "Warning", "FailedMount", str(error), None)
            if self.stop.wait(delay * self.time_scale):
                return False
            delay = min(delay * 2, MOUNT_RETRY_MAX)
        return False
