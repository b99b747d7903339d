"""``Sandbox``: a local control plane with Argo, Volcano and the kubelet emulated, ready for MPI DAGs."""

from __future__ import annotations

import base64
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from airflow_provider_volcano_argo.sandbox.controlplane import binaries as binaries_module
from airflow_provider_volcano_argo.sandbox.controlplane.crds import apply_crds, sandbox_crds, upstream_crds
from airflow_provider_volcano_argo.sandbox.controlplane.processes import ControlPlane
from airflow_provider_volcano_argo.sandbox.emulation.cluster import Cluster
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, KubeApi

log = logging.getLogger(__name__)

#: the wrapper modules whose binaries the sandbox runs (Argo and Volcano are still emulated)
CONTROL_PLANE_BUILDS = ("kubernetes", "etcd")

AIRFLOW_NAMESPACE = "argo"
AIRFLOW_SERVICE_ACCOUNT = "airflow"
AIRFLOW_ROLE = "volcano-argo-airflow"

# The Airflow identity's rules when no role file is given: what an Airflow DAG author's tests may need to read
# (the sandbox never imports the provider, so it cannot bind the provider's Role by itself; pass `--airflow-role`).
_DEFAULT_AIRFLOW_RULES = [
    {
        "apiGroups": ["argoproj.io"],
        "resources": ["workflows"],
        "verbs": ["create", "get", "list", "watch", "patch", "delete"],
    },
    {"apiGroups": ["argoproj.io"], "resources": ["workflowtemplates"], "verbs": ["get", "list"]},
    {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["pods", "pods/log", "events"], "verbs": ["get", "list", "watch"]},
]


def _rules_from(role_file: Path | None) -> list[dict]:
    """Return the rules of the first Role in ``role_file`` (e.g. the provider's least-privilege Role), else defaults."""
    if role_file is None:
        return _DEFAULT_AIRFLOW_RULES
    for doc in yaml.safe_load_all(Path(role_file).read_text()):
        if doc and doc.get("kind") == "Role":
            return doc["rules"]
    raise ValueError(f"no Role in {role_file}")


@dataclass
class NodeCapacity:
    """One emulated node: its capacity, labels and taints.

    ``labels`` are added to the well-known ``kubernetes.io/hostname`` label (the node's name); ``taints`` are
    Kubernetes Node taints, ``{"key", "value", "effect"}`` with effect ``NoSchedule``, ``PreferNoSchedule`` or
    ``NoExecute``. The schedulers place a pod only where its node selector / required affinity matches the labels
    and its tolerations tolerate every NoSchedule and NoExecute taint (``volcano/placement.py``).
    """

    name: str
    cpu: str = "8"
    memory: str = "32Gi"
    gpus: int = 0
    rdma: int = 0
    pods: int = 110
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict] = field(default_factory=list)

    @classmethod
    def gpu_node(cls, name: str = "gpu-node-0", gpus: int = 4, **kwargs) -> NodeCapacity:
        """Return a GPU node as clusters commonly set one up.

        ``nvidia.com/gpu`` capacity, the label ``accelerator=nvidia`` and the taint
        ``nvidia.com/gpu=present:NoSchedule``, so only pods that tolerate it (and select it) land there.
        """
        labels = {"accelerator": "nvidia", **kwargs.pop("labels", {})}
        taints = kwargs.pop("taints", [{"key": GPU_TAINT_KEY, "value": "present", "effect": "NoSchedule"}])
        return cls(name, gpus=gpus, labels=labels, taints=taints, **kwargs)


#: the GPU node's taint key (the device plugin's resource name, as GPU node pools commonly taint)
GPU_TAINT_KEY = "nvidia.com/gpu"


@dataclass
class SandboxOptions:
    """How to build a sandbox; the defaults give one 8-core node, the sandbox's own CRDs, fast probes."""

    nodes: list[NodeCapacity] = field(default_factory=lambda: [NodeCapacity("sandbox-node-0")])
    crds: str = "sandbox"  # or "upstream" (then upstream_dir is required)
    upstream_dir: Path | None = None
    time_scale: float = 0.1  # multiplies probe delays, back-offs and the resource-template poll interval
    airflow_rules: list[dict] | None = None
    airflow_role_file: Path | None = None  # a Role manifest whose rules the Airflow identity gets
    audit_log: bool = False
    container_log_max_size: int | None = 10 * 1024 * 1024  # the kubelet's containerLogMaxSize; None: no rotation
    container_creating_seconds: float = 0.0  # image pull / ContainerCreating time of every pod (not scaled)
    volcano_counts_retained_pods: bool = False  # Volcano <= v1.10's counts of a finished Job (default: v1.11+)
    # "emulated": the sandbox's own Argo and Volcano; "upstream": the released ones of ``profile``
    components: str = "emulated"
    profile: str = "newest"  # a key of binaries.PROFILES


class Sandbox:
    """A running sandbox; use as a context manager or call ``start()`` / ``stop()``."""

    def __init__(self, options: SandboxOptions | None = None, **kwargs):
        self.options = options or SandboxOptions(**kwargs)
        self.control_plane: ControlPlane | None = None
        self.cluster: Cluster | None = None
        self.components: list = []
        self.kubelet = None
        self.airflow_kubeconfig: Path | None = None
        self.airflow_token: str | None = None
        self._airflow_rules: list[dict] = self.options.airflow_rules or _rules_from(self.options.airflow_role_file)

    # ------------------------------------------------------------------ life cycle
    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def upstream(self) -> bool:
        return self.options.components == "upstream"

    def start(self) -> Sandbox:
        started = time.monotonic()
        names = binaries_module.PROFILES[self.options.profile] if self.upstream else CONTROL_PLANE_BUILDS
        self.binaries = binaries_module.install(names, progress=log.info)
        self.control_plane = ControlPlane(self.binaries, audit_log=self.options.audit_log)
        self.control_plane.start()
        log.info("control plane up in %.1f s", time.monotonic() - started)
        try:
            self.api = KubeApi.from_kubeconfig(str(self.control_plane.admin_kubeconfig))
            self.cluster = Cluster(self.api)
            if self.upstream:
                self._start_upstream(names)
            else:
                crds = upstream_crds(self.options.upstream_dir) if self.options.crds == "upstream" else sandbox_crds()
                apply_crds(self.api, crds)
                self._start_emulators()
            self._bootstrap()
        except BaseException:
            self.stop()
            raise
        log.info("sandbox ready at %s in %.1f s", self.server, time.monotonic() - started)
        return self

    def _start_upstream(self, names: tuple[str, ...]) -> None:
        """Start the kubelet, then Volcano and Argo from their modules' install manifests (``sandbox/upstream/``)."""
        from airflow_provider_volcano_argo.sandbox.upstream.argo import Argo
        from airflow_provider_volcano_argo.sandbox.upstream.volcano import Volcano

        assert self.cluster and self.control_plane
        builds = {b.module: b for b in binaries_module.builds(names)}
        self.kubelet = self._kubelet({"argoexec": self.binaries["argoexec"]})
        self.kubelet.start()
        self.components = [self.kubelet]
        volcano_build = builds["volcano.sh/volcano"]
        argo_build = next(b for m, b in builds.items() if m.startswith("github.com/argoproj/argo-workflows"))
        self.volcano = Volcano(volcano_build, self.binaries, self.control_plane, self.api)
        self.components.append(self.volcano)
        self.volcano.start(self._kubeconfig_for)
        log.info("Volcano %s up", volcano_build.version)
        interval = 5.0 * self.options.time_scale if self.options.time_scale < 1 else None
        self.argo = Argo(argo_build, self.binaries, self.control_plane, self.api, resource_interval=interval)
        self.components.append(self.argo)
        self.argo.start(self._kubeconfig_for)
        log.info("Argo %s up", argo_build.version)

    def _kubelet(self, executables: dict[str, Path]):
        """Return the emulated kubelet of the options' nodes, running ``executables`` as real processes."""
        from airflow_provider_volcano_argo.sandbox.kubelet import Kubelet

        assert self.cluster and self.control_plane
        return Kubelet(
            self.cluster,
            nodes=self.options.nodes,
            pki=self.control_plane.pki,
            workdir=self.control_plane.dir / "kubelet",
            time_scale=self.options.time_scale,
            container_log_max_size=self.options.container_log_max_size,
            container_creating_seconds=self.options.container_creating_seconds,
            executables=executables,
        )

    def _kubeconfig_for(self, namespace: str, service_account: str) -> Path:
        """Write a kubeconfig with a token of ``namespace/service_account`` (an upstream component's identity)."""
        assert self.control_plane
        token = self.service_account_token(namespace, service_account)
        return self.control_plane.write_kubeconfig(f"{namespace}-{service_account}", token, namespace)

    def _start_emulators(self) -> None:
        from airflow_provider_volcano_argo.sandbox.argo.controller import WorkflowController
        from airflow_provider_volcano_argo.sandbox.volcano.controller import VolcanoJobController
        from airflow_provider_volcano_argo.sandbox.volcano.garbagecollector import VolcanoJobGarbageCollector
        from airflow_provider_volcano_argo.sandbox.volcano.scheduler import VolcanoScheduler

        assert self.cluster and self.control_plane
        self.kubelet = self._kubelet({})
        self.components = [
            self.kubelet,
            VolcanoScheduler(self.cluster, time_scale=self.options.time_scale),
            VolcanoJobController(
                self.cluster,
                time_scale=self.options.time_scale,
                counts_retained_pods=self.options.volcano_counts_retained_pods,
            ),
            VolcanoJobGarbageCollector(self.cluster, time_scale=self.options.time_scale),
            WorkflowController(self.cluster, time_scale=self.options.time_scale),
        ]
        for component in self.components:
            component.start()

    def _bootstrap(self) -> None:
        """Create what Argo's quick start and Volcano's installer leave behind, plus the Airflow identity."""
        if self.upstream:  # they did it themselves
            self._bind_airflow_identity()
            return
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argo"}})
        self.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "argo", "namespace": "argo"}})
        self.apply(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": "default"},
                "spec": {"weight": 1, "reclaimable": True},
            }
        )
        self.api.patch("queues", "default", {"status": {"state": "Open"}}, subresource="status")
        self._bind_airflow_identity()

    def _bind_airflow_identity(self) -> None:
        assert self.control_plane
        self.set_airflow_rules(self._airflow_rules)
        self.airflow_token = self.service_account_token(AIRFLOW_NAMESPACE, AIRFLOW_SERVICE_ACCOUNT)
        self.airflow_kubeconfig = self.control_plane.write_kubeconfig("airflow", self.airflow_token, AIRFLOW_NAMESPACE)

    def stop(self) -> None:
        if self.cluster:
            self.cluster.shutdown()
        for component in reversed(self.components):
            try:
                component.stop()
            except Exception:
                log.exception("stopping %s failed", component)
        self.components = []
        if self.control_plane:
            self.control_plane.stop()
            self.control_plane = None

    # ------------------------------------------------------------------ access
    @property
    def server(self) -> str:
        assert self.control_plane
        return self.control_plane.server

    @property
    def admin_kubeconfig(self) -> Path:
        assert self.control_plane
        return self.control_plane.admin_kubeconfig

    def airflow_connection(self) -> str:
        """``AIRFLOW_CONN_KUBERNETES_DEFAULT`` value (Airflow's JSON form) for the least-privilege identity."""
        extra = {"kube_config_path": str(self.airflow_kubeconfig), "namespace": AIRFLOW_NAMESPACE}
        return json.dumps({"conn_type": "kubernetes", "extra": extra})

    def environment(self, admin: bool = False) -> dict[str, str]:
        """Variables that point ``kubectl``-style tools and Airflow at this sandbox."""
        kubeconfig = self.admin_kubeconfig if admin else self.airflow_kubeconfig
        conn = self.airflow_connection()
        if admin:
            conn = json.dumps({"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}})
        return {"KUBECONFIG": str(kubeconfig), "AIRFLOW_CONN_KUBERNETES_DEFAULT": conn}

    def create_namespace(self, name: str, airflow_access: bool = True) -> str:
        """Create a namespace with the Airflow identity's Role bound in it.

        No ``argo`` service account: Argo's quick start creates it in namespace ``argo`` only.
        """
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if self.upstream:  # what its Workflows' pods need to report results (the quick start's namespaced RBAC)
            from airflow_provider_volcano_argo.sandbox.upstream.install import server_side_apply

            for doc in self.argo.namespace_rbac():
                server_side_apply(self.api, doc, name)
        if airflow_access:
            self._bind_airflow(name, self._airflow_rules)
        return name

    def delete_namespace(self, name: str) -> None:
        self.api.delete("namespaces", name)

    def apply(self, manifest: dict) -> dict:
        """Create ``manifest``, or replace it if it exists (``kubectl apply`` without the three-way merge)."""
        from airflow_provider_volcano_argo.sandbox.controlplane.manifests import apply_manifest

        return apply_manifest(self.api, manifest)

    def apply_file(self, path: Path | str) -> list[dict]:
        """Apply every document of a YAML file, in order."""
        return [self.apply(doc) for doc in yaml.safe_load_all(Path(path).read_text()) if doc]

    def service_account_token(self, namespace: str, name: str, timeout: float = 30) -> str:
        """Return a long-lived token of a service account (created if missing).

        Since Kubernetes 1.24 no token Secret is made for a service account by itself; a Secret of type
        ``kubernetes.io/service-account-token`` that names it is filled by the token controller
        (``pkg/controller/serviceaccount/tokens_controller.go``), as ``kubectl create token`` users do for CI.
        """
        for resource, body in (
            ("serviceaccounts", {"metadata": {"name": name, "namespace": namespace}}),
            (
                "secrets",
                {
                    "metadata": {
                        "name": f"{name}-token",
                        "namespace": namespace,
                        "annotations": {"kubernetes.io/service-account.name": name},
                    },
                    "type": "kubernetes.io/service-account-token",
                },
            ),
        ):
            try:
                self.api.create(resource, body, namespace)
            except ApiException as exc:
                if exc.status != 409:
                    raise
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            secret = self.api.get_or_none("secrets", f"{name}-token", namespace) or {}
            token = (secret.get("data") or {}).get("token")
            if token:
                return base64.b64decode(token).decode()
            time.sleep(0.2)
        raise TimeoutError(f"no token for service account {namespace}/{name} after {timeout:.0f} s")

    def set_airflow_rules(self, rules: list[dict], namespace: str = AIRFLOW_NAMESPACE) -> None:
        """Bind the Airflow service account to exactly ``rules`` in ``namespace`` (used to prove least privilege)."""
        if namespace == AIRFLOW_NAMESPACE:
            self._airflow_rules = rules
        self._bind_airflow(namespace, rules)

    def _bind_airflow(self, namespace: str, rules: list[dict]) -> None:
        self.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": AIRFLOW_ROLE, "namespace": namespace},
                "rules": rules,
            }
        )
        self.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": AIRFLOW_ROLE, "namespace": namespace},
                "subjects": [
                    {"kind": "ServiceAccount", "name": AIRFLOW_SERVICE_ACCOUNT, "namespace": AIRFLOW_NAMESPACE}
                ],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": AIRFLOW_ROLE},
            }
        )
