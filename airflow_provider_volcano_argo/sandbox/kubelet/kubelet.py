"""The emulated kubelet.

Nodes with capacity, pod lifecycle, container logs behind the HTTPS endpoint the API server proxies for
``pods/log``, and fault injection. Follows the kubelet (``pkg/kubelet``: node status, pod workers, graceful
deletion) in what the provider can observe through the API. It binds nothing: the real kube-scheduler binds the
pods of its profile, Volcano's scheduler its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_volcano_argo.sandbox.emulation.cluster import Cluster, now_rfc3339
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException
from airflow_provider_volcano_argo.sandbox.kubelet.logstore import CONTAINER_LOG_MAX_SIZE, LogServer, LogStore
from airflow_provider_volcano_argo.sandbox.kubelet.pods import PodRunner, grace_seconds
from airflow_provider_volcano_argo.sandbox.kubelet.programs import ProgramRegistry
from airflow_provider_volcano_argo.sandbox.kubelet.resources import node_capacity

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.controlplane.pki import Pki

log = logging.getLogger(__name__)
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def node_object(spec: Any) -> dict:
    """Return a Node's metadata and spec from a ``NodeCapacity``: labels (with ``kubernetes.io/hostname``), taints."""
    labels = {**(getattr(spec, "labels", None) or {}), "kubernetes.io/hostname": spec.name}
    node: dict = {"metadata": {"name": spec.name, "labels": labels}}
    taints = [dict(t) for t in getattr(spec, "taints", None) or []]
    if taints:
        node["spec"] = {"taints": taints}
    return node


class Kubelet:
    """Runs every pod bound to its nodes.

    ``programs`` scripts container behaviour; the ``fail_container``, ``evict_pod``, ``evict_for_pressure``,
    ``delete_pod`` and ``set_node_capacity`` methods inject faults.
    """

    def __init__(
        self,
        cluster: Cluster,
        nodes: list,
        pki: Pki,
        workdir: Path,
        time_scale: float = 1.0,
        container_log_max_size: int | None = CONTAINER_LOG_MAX_SIZE,
        container_creating_seconds: float = 0.0,
        executables: Mapping[str, Path] | None = None,
    ):
        self.cluster = cluster
        self.api = cluster.api
        self.nodes = {n.name: n for n in nodes}
        self.time_scale = time_scale
        # how long a bound pod stays Pending before its first container starts (image pull, volume mounts):
        # seconds, not scaled; may be changed while the sandbox runs
        self.container_creating_seconds = container_creating_seconds
        self.programs = ProgramRegistry(executables, self.api.api_client.configuration.host)
        self.workdir = workdir
        # each node reads Secrets/ConfigMaps/claims as itself: the API server's Node authorizer lets a node read
        # only what the pods bound to it reference (plugin/pkg/auth/authorizer/node/node_authorizer.go)
        self.node_apis = {n.name: self.api.impersonating(f"system:node:{n.name}", ["system:nodes"]) for n in nodes}
        self.events: dict[tuple[str, str, str, str], tuple[str, int]] = {}  # (uid, reason, message, path) -> name
        self.logs = LogStore(workdir, container_log_max_size)  # logs.max_size: set it to rotate sooner
        cert, key = pki.serving("kubelet")
        self.server = LogServer(self.logs, cert, key)
        self.runners: dict[tuple[str, str], PodRunner] = {}
        self.terminating: set[str] = set()  # uids of pods whose graceful deletion is under way
        self.lock = threading.RLock()
        self.wake = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="kubelet", daemon=True)

    # -- life cycle ---------------------------------------------------------------------------------------
    def start(self) -> None:
        self.server.start()
        for spec in self.nodes.values():
            self._register(spec)
        self.pods = self.cluster.informer("pods")
        self.pods.subscribe(lambda *_: self.wake.set())
        self.thread.start()

    def stop(self) -> None:
        with self.lock:
            for runner in self.runners.values():
                runner.kill()
        self.wake.set()
        self.server.stop()

    def _register(self, spec: Any) -> None:
        node = {"apiVersion": "v1", "kind": "Node", **node_object(spec)}
        try:
            self.api.create("nodes", node)
        except ApiException as exc:
            if exc.status != 409:
                raise
        self._node_status(spec)

    def _node_status(self, spec: Any) -> None:
        capacity = node_capacity(spec)
        now = now_rfc3339()
        status = {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "emulated kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": spec.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.server.port}},
            "nodeInfo": {
                "kubeletVersion": "v1.35.3-emulated",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "containerRuntimeVersion": "emulated://1",
                "kernelVersion": "",
                "osImage": "emulated",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kubeProxyVersion": "",
            },
        }
        self.api.patch("nodes", spec.name, {"status": status}, subresource="status")
        self._untaint_ready(spec.name)

    def _untaint_ready(self, name: str) -> None:
        """Drop the ``node.kubernetes.io/not-ready`` taint from a Ready node.

        The API server's ``TaintNodesByCondition`` admission (plugin/pkg/admission/nodetaint) puts it on every new
        Node; kube-controller-manager's node lifecycle controller removes it once the node is Ready
        (``pkg/controller/nodelifecycle/node_lifecycle_controller.go`` ``doNoScheduleTaintingPass``). The sandbox
        does not run that controller (it would also evict from nodes without heartbeats), so the kubelet does it.
        """
        node = self.api.get("nodes", name)
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != NOT_READY_TAINT]
        if kept != taints:
            self.api.patch("nodes", name, {"spec": {"taints": kept or None}})

    # -- the sync loop ------------------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self.cluster.stop.is_set():
            self.wake.wait(0.5)
            self.wake.clear()
            try:
                self._sync()
            except Exception as exc:  # API server restarting: try again on the next pass
                log.debug("kubelet sync: %s", exc)

    def _sync(self) -> None:
        present = set()
        for pod in self.pods.items():
            meta, spec = pod["metadata"], pod["spec"]
            key = (meta["namespace"], meta["name"])
            node = spec.get("nodeName")
            if node not in self.nodes:  # unbound, or another node's
                continue
            present.add(key)
            with self.lock:
                runner = self.runners.get(key)
                if runner is not None and runner.pod["metadata"]["uid"] != meta["uid"]:
                    runner.kill()  # a new pod under an old name
                    runner = self.runners.pop(key)
                    runner = None
                if meta.get("deletionTimestamp"):
                    self._finalize(pod, runner)
                    continue
                if runner is None and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    self.logs.admit_pod(*key, meta["uid"])
                    runner = self.runners[key] = PodRunner(
                        pod,
                        self.api,
                        self.programs,
                        self.logs,
                        self.time_scale,
                        self.container_creating_seconds,
                        node_api=self.node_apis[node],
                        pod_dir=self.workdir / "pods" / meta["uid"],
                        node_root=self.node_root(node),
                        record=self.record_event,
                    )
                    runner.start()
                elif runner is not None and runner.dirty:
                    runner.report()
        with self.lock:
            for key in [k for k in self.runners if k not in present]:
                gone = self.runners.pop(key)
                gone.kill()
                if gone.volumes is not None:
                    gone.volumes.tear_down()
                uid = gone.pod["metadata"]["uid"]
                for event_key in [k for k in self.events if k[0] == uid]:
                    del self.events[event_key]
                self.logs.forget_pod(*key)

    def _finalize(self, pod: dict, runner: PodRunner | None) -> None:
        """Graceful deletion: stop the containers within the pod's grace period, then confirm with a zero one.

        Runs on a thread of its own, so one pod's grace period holds up no other pod.
        """
        uid = pod["metadata"]["uid"]
        if uid in self.terminating:
            return
        self.terminating.add(uid)
        threading.Thread(target=self._terminate, args=(pod, runner), name=f"kill-{uid}", daemon=True).start()

    def _terminate(self, pod: dict, runner: PodRunner | None) -> None:
        meta = pod["metadata"]
        try:
            if runner is not None:
                runner.terminate(grace_seconds(pod) * self.time_scale)
                runner.thread.join(5)
            # status_manager.go syncPod: the pod's UID as a precondition, so that a pod re-created under the
            # name meanwhile (RestartJob, or this pass seeing the old one again from a stale cache) is never deleted
            self.api.delete("pods", meta["name"], meta["namespace"], grace_period_seconds=0, uid=meta["uid"])
        except Exception as exc:  # gone already (404, or 409: another pod now), or the API server restarting
            log.debug("finalizing %s: %s", meta["name"], exc)
        finally:
            self.terminating.discard(meta["uid"])

    # -- the node's filesystem and events -----------------------------------------------------------------
    def node_root(self, node: str) -> Path:
        """Return the directory standing for ``node``'s filesystem.

        ``hostPath`` volumes and bound local claims mount from it. A test puts a file on the node with
        ``(sb.kubelet.node_root(node) / "data/x").write_text(...)``.
        """
        root = self.workdir / "nodes" / node
        root.mkdir(parents=True, exist_ok=True)
        return root

    def record_event(
        self, pod: dict, event_type: str, reason: str, message: str, field_path: str | None = None
    ) -> None:
        """Record an Event from the kubelet about ``pod``; a repeat bumps ``count`` (client-go's EventCorrelator)."""
        meta = pod["metadata"]
        key = (meta["uid"], reason, message, field_path or "")
        now = now_rfc3339()
        with self.lock:
            known = self.events.get(key)
        try:
            if known is not None:
                name, count = known
                self.api.patch("events", name, {"count": count + 1, "lastTimestamp": now}, meta["namespace"])
                with self.lock:
                    self.events[key] = (name, count + 1)
                return
            involved = {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta["uid"],
            }
            if field_path:
                involved["fieldPath"] = field_path
            body = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
                "involvedObject": involved,
                "type": event_type,
                "reason": reason,
                "message": message,
                "source": {"component": "kubelet", "host": pod["spec"].get("nodeName", "")},
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            }
            created = self.api.create("events", body, meta["namespace"])
            with self.lock:
                self.events[key] = (created["metadata"]["name"], 1)
        except Exception as exc:  # best effort, as the recorder
            log.debug("event %s on %s: %s", reason, meta["name"], exc)

    # -- fault injection ----------------------------------------------------------------------------------
    def fail_container(self, namespace: str, pod: str, container: str, exit_code: int = 1) -> None:
        """End the running ``container`` now with ``exit_code``; the pod's restart policy then applies."""
        with self.lock:
            runner = self.runners.get((namespace, pod))
        if runner is None or not runner.fail_container(container, exit_code):
            raise LookupError(f"no running container {container} in pod {namespace}/{pod}")

    def oom_kill_container(self, namespace: str, pod: str, container: str) -> None:
        """End ``container`` as the kernel's OOM killer does at its memory limit (exit code 137, OOMKilled).

        SIGKILL, so exit code 137, and the runtime reports reason ``OOMKilled`` (kubernetes.io, "Manage Resources
        for Containers"; containerd's CRI sets it from the task's OOM event). The pod's restart policy then applies.
        """
        with self.lock:
            runner = self.runners.get((namespace, pod))
        if runner is None or not runner.fail_container(container, 137, "OOMKilled"):
            raise LookupError(f"no running container {container} in pod {namespace}/{pod}")

    def evict_pod(self, namespace: str, pod: str) -> None:
        """Evict through the Eviction API (as ``kubectl drain``): the API server deletes the pod."""
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": namespace}}
        self.api.request("POST", f"/api/v1/namespaces/{namespace}/pods/{pod}/eviction", body=body)

    def evict_for_pressure(self, namespace: str, pod: str, resource: str = "memory") -> None:
        """Evict as the kubelet's eviction manager does when the node runs low on ``resource``.

        The containers are killed and the pod ends Failed, reason Evicted, but stays (Volcano sees PodFailed, not
        PodEvicted: ``job_controller_handler.go`` raises PodEvicted only from deletePod).
        """
        with self.lock:
            runner = self.runners.get((namespace, pod))
        if runner is None:
            raise LookupError(f"no pod {namespace}/{pod} running on this kubelet")
        runner.evict(f"The node was low on resource: {resource}. ")

    def delete_pod(self, namespace: str, pod: str) -> None:
        self.api.delete("pods", pod, namespace)

    def set_node_capacity(self, node: str, **resources: Any) -> None:
        """Change a node's capacity, e.g. ``set_node_capacity("sandbox-node-0", cpu="1", gpus=0)``."""
        spec = self.nodes[node]
        for name, value in resources.items():
            setattr(spec, name, value)
        self._node_status(spec)
