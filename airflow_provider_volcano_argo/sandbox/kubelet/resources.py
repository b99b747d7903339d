"""Resource quantities and fitting, shared by the default scheduler and the Volcano gang scheduler.

Quantities follow ``k8s.io/apimachinery/pkg/api/resource`` (decimal and binary suffixes, ``m`` for milli).
"""

from __future__ import annotations

from typing import Any

GPU, RDMA = "nvidia.com/gpu", "rdma/ib"
_SUFFIX = {
    "m": 1e-3,
    "": 1,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def quantity(value: Any) -> float:
    """Return the numeric value of a quantity string (``500m`` -> 0.5, ``4Gi`` -> 4294967296)."""
    text = str(value).strip()
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if suffix and text.endswith(suffix):
            return float(text[: -len(suffix)]) * _SUFFIX[suffix]
    return float(text)


def node_capacity(spec: Any) -> dict[str, str]:
    """Capacity of an emulated node (a ``NodeCapacity``) as Node status shows it."""
    capacity = {"cpu": str(spec.cpu), "memory": str(spec.memory), "pods": str(spec.pods)}
    if int(spec.gpus):
        capacity[GPU] = str(spec.gpus)
    if int(spec.rdma):
        capacity[RDMA] = str(spec.rdma)
    return capacity


def node_capacity_from_status(node: dict) -> dict[str, str]:
    """Allocatable resources of a Node object."""
    status = node.get("status") or {}
    return dict(status.get("allocatable") or status.get("capacity") or {})


def pod_requests(pod: dict) -> dict[str, float]:
    """Return what a pod asks for, plus one pod slot.

    That is the sum over containers, or the largest init container if larger (as the scheduler computes it).
    """

    def total(containers: list[dict]) -> dict[str, float]:
        summed: dict[str, float] = {}
        for container in containers or []:
            resources = container.get("resources") or {}
            asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
            for name, value in asked.items():
                summed[name] = summed.get(name, 0.0) + quantity(value)
        return summed

    spec = pod.get("spec") or {}
    result = total(spec.get("containers", []))
    for init in spec.get("initContainers", []) or []:
        for name, value in total([init]).items():
            result[name] = max(result.get(name, 0.0), value)
    result["pods"] = 1.0
    return result


def fits(asked: dict[str, float], capacity: dict[str, str], used: list[dict[str, float]]) -> bool:
    """Whether ``asked`` fits in what ``capacity`` has left after ``used``."""
    return not shortfall(asked, capacity, used)


def shortfall(asked: dict[str, float], capacity: dict[str, str], used: list[dict[str, float]]) -> list[str]:
    """Return the resources that do not fit, e.g. ``["Insufficient nvidia.com/gpu"]`` (kube-scheduler's wording)."""
    missing = []
    for name, value in sorted(asked.items()):
        if value <= 0:
            continue
        free = quantity(capacity.get(name, 0)) - sum(u.get(name, 0.0) for u in used)
        if value > free + 1e-9:
            missing.append("Too many pods" if name == "pods" else f"Insufficient {name}")
    return missing
