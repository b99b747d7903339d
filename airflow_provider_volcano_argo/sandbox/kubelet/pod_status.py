"""The status of an emulated pod: its containers' runs as the kubelet reports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.sandbox.emulation.cluster import now_rfc3339
from airflow_provider_volcano_argo.sandbox.kubelet.pod_setup import POD_IP

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.kubelet.backoff import CrashLoopBackOff
    from airflow_provider_volcano_argo.sandbox.kubelet.pods import PodRunner
    from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext


@dataclass
class ContainerRun:
    """The state of one container across its restarts."""

    spec: dict
    restart_count: int = 0
    state: dict = field(default_factory=lambda: {"waiting": {"reason": "PodInitializing"}})
    last_state: dict = field(default_factory=dict)
    ready: bool = False
    started_at: float = 0.0
    finished_at: float = 0.0
    context: ContainerContext | None = None
    backoff: CrashLoopBackOff | None = None


def pod_status(runner: PodRunner) -> dict:
    """Return the status the kubelet reports for ``runner``'s pod (``kubelet_pods.go: generateAPIPodStatus``)."""
    now = now_rfc3339()
    with runner.lock:
        phase = runner.phase
        # kubelet_pods.go getPhase: a container never started (waiting, no lastState) keeps the pod Pending
        if phase == "Running" and any("waiting" in r.state and not r.last_state for r in runner.main):
            phase = "Pending"
        ready = phase == "Running" and all(r.ready for r in runner.main)

        def cond(kind: str, ok: bool) -> dict:
            return {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": now}

        def container(run: ContainerRun) -> dict:
            return {
                "name": run.spec["name"],
                "image": run.spec.get("image", ""),
                "imageID": "",
                "ready": run.ready,
                "restartCount": run.restart_count,
                "state": run.state,
                "lastState": run.last_state,
                "started": "running" in run.state,
                "containerID": runner._container_id(run),
            }

        status = {
            "phase": phase,
            "conditions": [
                cond("Initialized", runner.initialized),
                cond("Ready", ready),
                cond("ContainersReady", ready),
                cond("PodScheduled", True),
            ],
            "hostIP": POD_IP,
            "podIP": POD_IP,
            "podIPs": [{"ip": POD_IP}],
            "startTime": runner.start_time,
            "containerStatuses": [container(r) for r in runner.main],
            # the API server sets the class at creation and refuses a change; the kubelet reports the pod's own
            # (pkg/apis/core/helper/qos/qos.go: GetPodQOS reads status.qosClass first)
            "qosClass": (runner.pod.get("status") or {}).get("qosClass") or "BestEffort",
        }
        if runner.init:
            status["initContainerStatuses"] = [container(r) for r in runner.init]
        if runner.reason:
            status["reason"], status["message"] = runner.reason, runner.message
    return status
