"""Local control plane for tests, demos and DAG authors.

Real etcd, kube-apiserver and kube-controller-manager, with the Argo workflow-controller, the Volcano
controllers/scheduler and the kubelet emulated.

Never imported by the provider's runtime modules; it does not import them either.
"""

from airflow_provider_volcano_argo.sandbox.assembly import NodeCapacity, Sandbox, SandboxOptions

__all__ = ["NodeCapacity", "Sandbox", "SandboxOptions"]
