"""What every emulated component shares: the admin API, shared informers, a stop signal, event recording."""

from __future__ import annotations

import datetime
import threading
import uuid

from airflow_provider_volcano_argo.sandbox.emulation.informer import Informer
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, KubeApi


def now_rfc3339(nanos: bool = False) -> str:
    """UTC now as Kubernetes writes timestamps (seconds), or with nanoseconds as container log lines carry."""
    now = datetime.datetime.now(datetime.timezone.utc)
    if nanos:
        return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond * 1000:09d}Z"
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def owner_reference(obj: dict, controller: bool = True) -> dict:
    """Return a controller ownerReference to ``obj`` (as ``metav1.NewControllerRef``)."""
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: dict) -> dict | None:
    for ref in obj.get("metadata", {}).get("ownerReferences", []) or []:
        if ref.get("controller"):
            return ref
    return None


def bind_pod(api: KubeApi, pod: dict, node: str) -> bool:
    """Bind ``pod`` to ``node`` through ``pods/binding``, as a scheduler does; False if the API refused."""
    meta = pod["metadata"]
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": meta["name"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    try:
        api.request("POST", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding", body=body)
        return True
    except ApiException:
        return False  # already bound, or deleted meanwhile: the next pass sees it


class Cluster:
    """The admin identity plus shared informers; one per sandbox, handed to every emulator."""

    def __init__(self, api: KubeApi):
        self.api = api
        self.stop = threading.Event()
        self._informers: dict[str, Informer] = {}
        self._lock = threading.Lock()

    def informer(self, kind: str) -> Informer:
        """Return the shared informer for ``kind`` (a key of ``kubeapi.RESOURCES``), started and synced on first use."""
        with self._lock:
            informer = self._informers.get(kind)
            if informer is None:
                informer = self._informers[kind] = Informer(self.api, kind, self.stop)
                informer.start()
        informer.synced.wait(30)
        return informer

    def record_event(self, obj: dict, event_type: str, reason: str, message: str, component: str) -> None:
        """Write a core/v1 Event about ``obj``, as client-go's EventRecorder does."""
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        now = now_rfc3339()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": event_type,
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self.api.create("events", body, namespace)
        except ApiException:
            pass  # events are best effort, as upstream's recorder drops them under pressure

    def shutdown(self) -> None:
        self.stop.set()
