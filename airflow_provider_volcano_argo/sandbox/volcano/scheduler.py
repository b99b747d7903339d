"""The emulated Volcano gang scheduler.

It enqueues PodGroups, binds a gang only when ``minMember`` pods fit at once, and says why not. Follows
volcano-sh/volcano ``pkg/scheduler/actions/enqueue/enqueue.go`` (Pending -> Inqueue when the queue is Open and
``plugins/overcommit/overcommit.go`` lets ``minResources`` in), ``actions/allocate`` with the ``gang`` plugin
(all-or-nothing binding, ``plugins/gang/gang.go``: the ``Unschedulable`` / ``Scheduled`` conditions and messages),
``framework/session.go: getPodGroupPhase`` and ``cache/cache.go: RecordJobStatusEvent``.
"""

from __future__ import annotations

import logging
import uuid

from airflow_provider_volcano_argo.sandbox.emulation.cluster import Cluster, bind_pod, now_rfc3339
from airflow_provider_volcano_argo.sandbox.emulation.informer import RESYNC_SECONDS, Controller
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException
from airflow_provider_volcano_argo.sandbox.kubelet.resources import (
    node_capacity_from_status,
    pod_requests,
    quantity,
    shortfall,
)
from airflow_provider_volcano_argo.sandbox.volcano.placement import POD_NUMBER_REASON, fit_errors_message, fits

log = logging.getLogger(__name__)
COMPONENT = "volcano"
#: overcommit.go defaultOverCommitFactor: how far the enqueue check lets gangs exceed the cluster's capacity.
OVERCOMMIT_FACTOR = 1.2


def _finished(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _node_reason(pod: dict, asked: dict[str, float], node: dict, used: list[dict[str, float]]) -> str | None:
    """Why ``pod`` does not fit ``node`` now (the first failing check), or None."""
    missing = shortfall(asked, node_capacity_from_status(node), used)
    resources = [m for m in missing if m != "Too many pods"]
    if resources:
        return resources[0]
    if missing:
        return POD_NUMBER_REASON
    return fits(pod, node)


class VolcanoScheduler(Controller):
    """One scheduling pass per PodGroup whenever pods, nodes or PodGroups change."""

    name = "volcano-scheduler"

    def __init__(self, cluster: Cluster, time_scale: float = 1.0):
        super().__init__(cluster.stop, resync_seconds=RESYNC_SECONDS * time_scale)
        self.cluster = cluster
        self.api = cluster.api
        self._last_message: dict[tuple[str, str], str] = {}
        # a pod's requests never change (its spec is immutable); parsing them again for every pod in every pass
        # made a pass over 1,000 pods cost more than the rest of the sandbox
        self._requests: dict[str, dict[str, float]] = {}

    def start(self) -> None:
        self.groups = self.cluster.informer("podgroups")
        self.pods = self.cluster.informer("pods")
        self.nodes = self.cluster.informer("nodes")
        self.queues = self.cluster.informer("queues")
        self.groups.subscribe(lambda k, o, old: self.enqueue((o["metadata"]["namespace"], o["metadata"]["name"])))
        self.pods.subscribe(self._on_pod)
        self.nodes.subscribe(lambda *_: [self.enqueue(k) for k in self.keys()])
        super().start()

    def keys(self) -> list:
        return [(g["metadata"]["namespace"], g["metadata"]["name"]) for g in self.groups.items()]

    def _on_pod(self, kind: str, pod: dict, old: dict | None) -> None:
        group = pod["metadata"].get("annotations", {}).get("scheduling.k8s.io/group-name")
        if group:
            self.enqueue((pod["metadata"]["namespace"], group))
        if kind == "DELETED":
            self._requests.pop(pod["metadata"]["uid"], None)
        if kind == "DELETED" or _finished(pod):  # freed capacity may admit another gang
            for key in self.keys():
                self.enqueue(key, 0.05)

    # -- capacity -----------------------------------------------------------------------------------------
    def _used(self) -> dict[str, list[dict[str, float]]]:
        used: dict[str, list[dict[str, float]]] = {}
        for pod in self.pods.items():
            node = pod["spec"].get("nodeName")
            if node and not _finished(pod):
                used.setdefault(node, []).append(self._pod_requests(pod))
        return used

    def _pod_requests(self, pod: dict) -> dict[str, float]:
        uid = pod["metadata"]["uid"]
        requests = self._requests.get(uid)
        if requests is None:
            requests = self._requests[uid] = pod_requests(pod)
        return requests

    def _ready_nodes(self) -> list[dict]:
        return [
            n
            for n in self.nodes.items()
            if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (n.get("status") or {}).get("conditions", [])
            )
        ]

    # -- one pass -----------------------------------------------------------------------------------------
    def reconcile(self, key: tuple[str, str]) -> float | None:
        group = self.groups.get(*key)
        if group is None:
            self._last_message.pop(key, None)
            return None
        status = dict(group.get("status") or {})
        phase = status.get("phase") or "Pending"
        pods = [
            p
            for p in self.pods.items(key[0])
            if p["metadata"].get("annotations", {}).get("scheduling.k8s.io/group-name") == key[1]
        ]
        min_member = int(group["spec"].get("minMember", 1))
        if phase == "Pending":
            reason = self._enqueue_refusal(group)
            if reason is None:
                phase = "Inqueue"
            else:
                # overcommit.go JobEnqueueableFn: an Event on the PodGroup, nothing more. No condition: the gang
                # plugin's OnSessionClose skips a job with no tasks, and the controller creates pods only once the
                # PodGroup is Inqueue (job_controller_actions.go syncJob)
                if reason and self._last_message.get(key) != reason:
                    self._last_message[key] = reason
                    self.cluster.record_event(group, "Normal", "Unschedulable", reason, COMPONENT)
                return 2.0
        bound = [p for p in pods if p["spec"].get("nodeName")]
        waiting = [p for p in pods if not p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]
        placement, misfits = self._place(waiting)
        started = sum(1 for p in bound if not p["metadata"].get("deletionTimestamp"))
        if waiting and started + len(placement) >= min_member:
            for pod, node in placement:
                bind_pod(self.api, pod, node)
            self._scheduled(group, status)
        elif waiting:
            # job_info.go JobInfo.FitError: the pending tasks' reasons counted, then the first misfit's FitErrors
            pending = ["Schedulable"] * len(placement) + ["Unschedulable"] * len(misfits)
            histogram = sorted(f"{pending.count(r)} {r}" for r in set(pending))
            first = min(misfits) if misfits else None
            origin = f". Origin reason is {first}: {misfits[first]}" if first else ""
            message = (
                f"{min_member - started}/{len(pods)} tasks in gang unschedulable: pod group is not ready, "
                f"{len(waiting)} Pending, {min_member} minAvailable; Pending: {', '.join(histogram)}{origin}"
            )
            self._unschedulable(group, status, message)
            if len(pods) >= min_member:  # gang.go JobValid: a gang short of pods is not allocated at all
                placed = {p["metadata"]["name"]: node for p, node in placement}
                for pod in waiting:
                    name = pod["metadata"]["name"]
                    if name in placed:  # job_info.go TaskSchedulingReason, Allocated
                        message = (
                            f"Pod {pod['metadata']['namespace']}/{name} can possibly be assigned to {placed[name]}, "
                            "once minAvailable is satisfied"
                        )
                        self._pod_unschedulable(pod, "Schedulable", message)
                    else:
                        self._pod_unschedulable(pod, "Unschedulable", misfits[name])
        running = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
        succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
        failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
        # session.go getPodGroupPhase: Running once minMember tasks are scheduled (bound, terminating ones
        # included), whether or not their containers run yet (image pull); Completed when all scheduled ones ended
        scheduled = len(bound) + (len(placement) if waiting and started + len(placement) >= min_member else 0)
        if pods and scheduled >= min_member:
            phase = "Completed" if scheduled == succeeded + failed else "Running"
            # gang.go OnSessionClose: every session sets a ready job's Scheduled condition (the one that bound it
            # may have lost its write to a newer copy); kept as it is here, since a new TransitionID each pass
            # would rewrite the PodGroup for nothing
            if not any(c.get("type") == "Scheduled" for c in status.get("conditions") or []):
                self._condition(status, "Scheduled", "tasks in gang are ready to be scheduled", "")
        self._write(group, {**status, "phase": phase, "running": running, "succeeded": succeeded, "failed": failed})
        return 2.0 if waiting else None

    def _enqueue_refusal(self, group: dict) -> str | None:
        """Why a Pending PodGroup may not be enqueued yet ("" when silently), or None to enqueue it.

        ``actions/enqueue/enqueue.go`` skips the jobs of a missing or closed queue (no event).
        ``plugins/overcommit/overcommit.go`` (JobEnqueueableFn) admits while the Inqueue gangs' ``minResources`` plus
        this one's fit the cluster's total times the overcommit factor (1.2) less what bound pods use, comparing
        only the resources this gang asks for; its refusal says which are "overused".
        """
        queue = self.queues.get("", group["spec"].get("queue", "default"))
        if queue is None or ((queue.get("status") or {}).get("state") or "Open") != "Open":
            return ""
        asked = {k: quantity(v) for k, v in (group["spec"].get("minResources") or {}).items()}
        if not asked:
            return None  # a best-effort gang (no minResources) is always permitted
        capacity: dict[str, float] = {}
        for node in self._ready_nodes():
            for name, value in node_capacity_from_status(node).items():
                capacity[name] = capacity.get(name, 0.0) + quantity(value) * OVERCOMMIT_FACTOR
        used = [r for rs in self._used().values() for r in rs]
        me = (group["metadata"]["namespace"], group["metadata"]["name"])
        inqueue = [
            {k: quantity(v) for k, v in (g["spec"].get("minResources") or {}).items()}
            for g in self.groups.items()
            if (g.get("status") or {}).get("phase") == "Inqueue"
            and (g["metadata"]["namespace"], g["metadata"]["name"]) != me
        ]
        missing = shortfall(asked, {k: str(v) for k, v in capacity.items()}, used + inqueue)
        if missing:  # util.FormatResourceNames("resource in cluster is overused", "overused", names)
            names = [m.replace("Insufficient ", "").replace("Too many pods", "pods") for m in missing]
            return "resource in cluster is overused: " + ", ".join(f"overused {n}" for n in names)
        return None

    def _place(self, waiting: list[dict]) -> tuple[list[tuple[dict, str]], dict[str, str]]:
        """First-fit every waiting pod onto Ready nodes, as one session would; returns placements and misfits.

        The misfits map a pod's name to its message (``placement.fit_errors_message``: one reason per node).
        ``actions/allocate/allocate.go`` ``Action.predicate``: resources first, only the first one short
        (``WrapInsufficientResourceReason``), then ``plugins/predicates/predicates.go``: the pod number, node
        affinity / selector and taints (``placement.fits``).
        """
        used = self._used()
        placement: list[tuple[dict, str]] = []
        misfits: dict[str, str] = {}
        nodes = self._ready_nodes()
        for pod in sorted(waiting, key=lambda p: p["metadata"]["name"]):
            asked = self._pod_requests(pod)
            reasons = []
            for node in nodes:
                name = node["metadata"]["name"]
                reason = _node_reason(pod, asked, node, used.get(name, []))
                if reason is None:
                    placement.append((pod, name))
                    used.setdefault(name, []).append(asked)
                    break
                reasons.append(reason)
            else:
                misfits[pod["metadata"]["name"]] = fit_errors_message(len(nodes), reasons)
        return placement, misfits

    # -- writes -------------------------------------------------------------------------------------------
    def _condition(self, status: dict, kind: str, reason: str, message: str) -> None:
        """Set the condition of type ``kind``, keeping those of other types (``session.go UpdatePodGroupCondition``)."""
        condition = {
            "type": kind,
            "status": "True",
            "transitionID": str(uuid.uuid4()),
            "lastTransitionTime": now_rfc3339(),
            "reason": reason,
        }
        if message:  # `json:"message,omitempty"`; an empty one in a merge patch, upstream's CRD refused (422, null)
            condition["message"] = message
        conditions = list(status.get("conditions") or [])
        index = next((i for i, c in enumerate(conditions) if c.get("type") == kind), None)
        if index is None:
            conditions.append(condition)
        else:
            conditions[index] = condition
        status["conditions"] = conditions

    def _unschedulable(self, group: dict, status: dict, message: str) -> None:
        key = (group["metadata"]["namespace"], group["metadata"]["name"])
        self._condition(status, "Unschedulable", "NotEnoughResources", message)
        if self._last_message.get(key) != message:
            self._last_message[key] = message
            self.cluster.record_event(group, "Warning", "Unschedulable", message, COMPONENT)

    def _scheduled(self, group: dict, status: dict) -> None:
        self._last_message.pop((group["metadata"]["namespace"], group["metadata"]["name"]), None)
        self.cluster.record_event(group, "Normal", "Scheduled", "pod group is ready", COMPONENT)

    def _pod_unschedulable(self, pod: dict, reason: str, message: str) -> None:
        """Set the pod's ``PodScheduled=False`` condition and, when it changes, a Warning ``FailedScheduling`` Event.

        ``cache/cache.go`` ``SchedulerCache.taskUnschedulable`` (``podConditionHaveUpdate``).
        """
        conditions = (pod.get("status") or {}).get("conditions") or []
        if any(
            c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and c.get("reason") == reason
            and c.get("message") == message
            for c in conditions
        ):
            return
        meta = pod["metadata"]
        patch = {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": reason,
                        "message": message,
                        "lastTransitionTime": now_rfc3339(),
                    }
                ]
            }
        }
        # list items carry no kind: name it, as the recorder's reference to the pod does
        self.cluster.record_event(
            {**pod, "apiVersion": "v1", "kind": "Pod"}, "Warning", "FailedScheduling", message, COMPONENT
        )
        try:
            self.api.patch("pods", meta["name"], patch, meta["namespace"], subresource="status", patch_type="strategic")
        except ApiException as exc:
            log.debug("pod condition %s: %s", meta["name"], exc)

    def _write(self, group: dict, status: dict) -> None:
        if status == (group.get("status") or {}):
            return
        meta = group["metadata"]
        try:
            # cache.go UpdatePodGroup: an Update of the whole object (PodGroups have no status subresource) from the
            # scheduler's cache, so a write from a stale copy fails with 409 rather than undo a newer one (a
            # Scheduled condition overwritten by the Unschedulable one it replaced)
            body = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": status}
            self.api.patch("podgroups", meta["name"], body, meta["namespace"])
        except ApiException as exc:
            if exc.status == 409:
                self.enqueue((meta["namespace"], meta["name"]), 0.05)
            elif exc.status != 404:
                log.debug("podgroup %s: %s", meta["name"], exc)
