"""Node placement and Job clean-up on a sandbox with a tainted GPU node.

The session sandbox has one untainted node, so this module starts its own (about 7 s): the GPU node first, so
that a scheduler ignoring taints would put every pod there.
"""

from __future__ import annotations

import time
import uuid

import pytest

from airflow_provider_volcano_argo.sandbox import NodeCapacity, Sandbox, SandboxOptions
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.integration.helpers import phase_of, volcano_job, wait_for

pytestmark = pytest.mark.integration

GPU_NODE, CPU_NODE = "gpu-node-0", "cpu-node-0"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def gpu_sandbox():
    nodes = [NodeCapacity.gpu_node(GPU_NODE, gpus=2), NodeCapacity(CPU_NODE)]
    with Sandbox(SandboxOptions(nodes=nodes, time_scale=0.1)) as sb:
        yield sb


@pytest.fixture
def ns(gpu_sandbox):
    name = gpu_sandbox.create_namespace(f"t-{uuid.uuid4().hex[:10]}")
    yield name
    gpu_sandbox.kubelet.programs.clear()
    gpu_sandbox.delete_namespace(name)


def _gpu_job(name: str, tolerate: bool, gpus: bool = True) -> dict:
    """Two workers that select the GPU label (asking for a GPU each or not; tolerating the GPU taint or not)."""
    job = volcano_job(name, workers=2)
    worker = job["spec"]["tasks"][1]["template"]["spec"]
    worker["nodeSelector"] = {"accelerator": "nvidia"}
    if gpus:
        worker["containers"][0]["resources"] = {"requests": {"cpu": "100m"}, "limits": {"nvidia.com/gpu": "1"}}
    if tolerate:
        worker["tolerations"] = [GPU_TOLERATION]
    return job


def _pods(sb, ns: str, job: str) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in sb.api.list("pods", ns, f"volcano.sh/job-name={job}")["items"]}


def _conditions(pod: dict) -> list[dict]:
    return (pod.get("status") or {}).get("conditions") or []


def _events(sb, ns: str, name: str) -> list[dict]:
    query = {"fieldSelector": f"involvedObject.name={name}"}
    return sb.api.request("GET", f"/api/v1/namespaces/{ns}/events", query=query)["items"]


def test_workers_that_tolerate_and_select_the_gpu_node_land_there_and_the_master_does_not(gpu_sandbox, ns):
    sb = gpu_sandbox
    node = sb.api.get("nodes", GPU_NODE)
    assert node["metadata"]["labels"] == {"accelerator": "nvidia", "kubernetes.io/hostname": GPU_NODE}
    assert node["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    sb.kubelet.programs.script(ScriptedProgram(lines=["waiting"], duration=3600), namespace=ns, container="mpimaster")
    sb.api.create("vcjobs", _gpu_job("gpu", tolerate=True), ns)
    wait_for(lambda: phase_of(sb.api, "vcjobs", "gpu", ns) == "Running", 30, what="job Running")
    placed = {name: p["spec"].get("nodeName") for name, p in _pods(sb, ns, "gpu").items()}
    # the master neither tolerates the taint nor asks for the GPU node: the scheduler passes over it
    assert placed == {"gpu-mpimaster-0": CPU_NODE, "gpu-mpiworker-0": GPU_NODE, "gpu-mpiworker-1": GPU_NODE}
    # a pod of the default scheduler (as Argo's step pods) is kept off the tainted node too
    plain = {
        "metadata": {"name": "plain"},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "sleep 60"]}]},
    }
    sb.api.create("pods", plain, ns)
    assert wait_for(lambda: sb.api.get("pods", "plain", ns)["spec"].get("nodeName"), 30, what="bound") == CPU_NODE


def test_a_worker_selecting_the_gpu_node_without_tolerating_its_taint_stays_pending_and_so_does_its_gang(
    gpu_sandbox, ns
):
    sb = gpu_sandbox
    # no GPU asked: on the CPU node a GPU request would fail first, as "Insufficient nvidia.com/gpu" (allocate.go
    # checks resources before the predicates plugin)
    job = sb.api.create("vcjobs", _gpu_job("untolerated", tolerate=False, gpus=False), ns)
    expected = (
        "0/2 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {nvidia.com/gpu: present}."
    )

    def failed_scheduling():
        events = _events(sb, ns, "untolerated-mpiworker-0")
        return next((e for e in events if e["reason"] == "FailedScheduling"), None)

    event = wait_for(failed_scheduling, 30, what="FailedScheduling event")
    assert (event["type"], event["message"]) == ("Warning", expected)
    assert event["involvedObject"]["kind"] == "Pod"

    group_name = f"untolerated-{job['metadata']['uid']}"

    def scheduling_told():  # the event, each pod's condition and the PodGroup's are separate writes
        pods = _pods(sb, ns, "untolerated")
        told = all(any(c["type"] == "PodScheduled" for c in _conditions(p)) for p in pods.values())
        group = sb.api.get("podgroups", group_name, ns)
        return pods if len(pods) == 3 and told and _conditions(group) else None

    pods = wait_for(scheduling_told, 30, what="every pod's PodScheduled condition and the PodGroup's")
    assert set(pods) == {"untolerated-mpimaster-0", "untolerated-mpiworker-0", "untolerated-mpiworker-1"}
    for name in ("untolerated-mpiworker-0", "untolerated-mpiworker-1"):
        [condition] = [c for c in pods[name]["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert (condition["status"], condition["reason"], condition["message"]) == ("False", "Unschedulable", expected)
    # the master fits a node, but the gang is bound only as a whole (minAvailable 3)
    [master] = [c for c in pods["untolerated-mpimaster-0"]["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert master["reason"] == "Schedulable"
    assert (
        master["message"]
        == f"Pod {ns}/untolerated-mpimaster-0 can possibly be assigned to {CPU_NODE}, once minAvailable is satisfied"
    )
    assert not any(p["spec"].get("nodeName") for p in pods.values())
    assert all(p["status"]["phase"] == "Pending" for p in pods.values())
    [condition] = _conditions(sb.api.get("podgroups", group_name, ns))
    assert (condition["type"], condition["reason"]) == ("Unschedulable", "NotEnoughResources")
    assert condition["message"].endswith(
        f"Pending: 1 Schedulable, 2 Unschedulable. Origin reason is untolerated-mpiworker-0: {expected}"
    )
    assert phase_of(sb.api, "vcjobs", "untolerated", ns) == "Pending"


def test_a_finished_job_is_deleted_with_its_pods_after_its_ttl_but_an_aborted_one_is_kept(gpu_sandbox, ns):
    sb = gpu_sandbox
    done = volcano_job("done", workers=1)
    done["spec"]["ttlSecondsAfterFinished"] = 20  # x time_scale 0.1: 2 s
    created = sb.api.create("vcjobs", done, ns)
    assert created["spec"]["ttlSecondsAfterFinished"] == 20  # the CRD keeps the field
    wait_for(lambda: phase_of(sb.api, "vcjobs", "done", ns) == "Completed", 30, what="job Completed")
    assert "done-mpimaster-0" in _pods(sb, ns, "done")  # the finished master is retained until the TTL
    wait_for(lambda: sb.api.get_or_none("vcjobs", "done", ns) is None, 30, what="job deleted after its TTL")
    wait_for(lambda: not _pods(sb, ns, "done"), 30, what="its pods deleted by the garbage collector")
    wait_for(lambda: not sb.api.list("podgroups", ns)["items"], 30, what="its PodGroup deleted")

    sb.kubelet.programs.script(ScriptedProgram(duration=3600), namespace=ns, container="mpimaster")
    aborted = volcano_job("aborted", workers=1)
    aborted["spec"]["ttlSecondsAfterFinished"] = 0
    job = sb.api.create("vcjobs", aborted, ns)
    wait_for(lambda: phase_of(sb.api, "vcjobs", "aborted", ns) == "Running", 30, what="Running")
    ref = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "aborted", "uid": job["metadata"]["uid"]}
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": "aborted-"},
        "action": "AbortJob",
        "target": ref,
    }
    sb.api.create("commands", command, ns)
    wait_for(lambda: phase_of(sb.api, "vcjobs", "aborted", ns) == "Aborted", 30, what="Aborted")
    time.sleep(3)  # far past a TTL of 0: Aborted is not a finished phase for the garbage collector
    kept = sb.api.get_or_none("vcjobs", "aborted", ns)
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")
