"""Real MPI workloads: data, secrets, placement and launcher settings reach the pods, as the program sees them.

The emulated kubelet resolves env from Secrets and ConfigMaps as the node (Node authorizer), mounts what the
volumes name, and runs ``mpi_echo``, which prints its argv, the env it was asked about, files and its cwd.
"""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import pytest
import yaml

from airflow_provider_volcano_argo.sandbox import NodeCapacity, Sandbox, SandboxOptions
from airflow_provider_volcano_argo.sandbox.kubelet.shell import ShellProgram
from tests.integration.helpers import (
    bound_claim,
    create_secret,
    install_mpi_templates,
    run_dag,
    wait_for,
    xcom_result,
)
from tests.integration.reliability import leftovers

pytestmark = pytest.mark.integration

#: carried as data: every one reaches mpiexec's argv as it is
HOSTILE_ARGS = ["a b", "$(id)", "`id`", "{{workflow.name}}", "{{=sprig.upper('x')}}", "it's", '--opt="a b"', ";", "*"]


def settings(annotation: str) -> dict:
    """The operator's arguments (as run conf: plain JSON) of the data, secrets and launcher test."""
    return {
        "mpi_command": "mpi_echo --mesh /data/mesh.h5",
        "mpi_args": HOSTILE_ARGS,
        "mpi_launcher_flags": ["--bind-to", "core", "-x", "OMP_NUM_THREADS"],
        "volumes": [{"name": "mesh", "configMap": {"name": "mesh"}}, {"name": "scratch", "emptyDir": {}}],
        "volume_mounts": [
            {"name": "mesh", "mountPath": "/data", "readOnly": True},
            {"name": "scratch", "mountPath": "/scratch"},
        ],
        "env_vars": [
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "solver-creds", "key": "token"}}},
            {"name": "OMP_NUM_THREADS", "value": "4"},
            {"name": "MPI_ECHO_ENV", "value": "TOKEN,OMP_NUM_THREADS,S_LEVEL"},
            {"name": "MPI_ECHO_FILES", "value": "/data/mesh.h5"},
        ],
        "env_from": [{"configMapRef": {"name": "solver-settings"}, "prefix": "S_"}],
        "working_dir": "/scratch",
        "image_pull_secrets": "registry-creds",
        "master_resources": {"requests": {"cpu": "200m", "memory": "64Mi"}},
        "worker_resources": {"limits": {"memory": "256Mi"}},
        "init_image": "mirror.example.com/kubectl:v1.30.0",
        "pod_overrides": {
            "mpiworker": {
                "metadata": {"annotations": {"note": annotation}},
                "spec": {"containers": [{"name": "mpiworker", "securityContext": {"runAsUser": 1000}}]},
            }
        },
        "on_finish_action": "keep_workflow",
    }


def test_data_secrets_and_launcher_settings_reach_the_pods_and_the_program(sandbox, mpi_namespace, caplog, capfd):
    from tests.dags.mpi_test_dags import mpi_overrides

    secret_value = f"from-the-secret-{uuid.uuid4().hex[:6]}"
    create_secret(sandbox, mpi_namespace, "solver-creds", {"token": secret_value})
    create_secret(sandbox, mpi_namespace, "mesh", {"mesh.h5": "MESH v1"}, "configmaps")
    create_secret(sandbox, mpi_namespace, "solver-settings", {"LEVEL": "3"}, "configmaps")
    annotation = "line one\nline two: {{workflow.name}} $(id)"
    states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides=settings(annotation))
    assert states == {"mpi": "success"}, log[-3000:]

    # what the program got: argv exactly, env from the Secret and the ConfigMap, the mounted file, the cwd
    argv = ["--mesh", "/data/mesh.h5", *HOSTILE_ARGS]
    for rank in range(2):
        assert f"rank {rank} of 2 on " in log
    assert f": argv {json.dumps(argv, separators=(',', ':'), ensure_ascii=False)}" in log
    assert f"env TOKEN={secret_value}" in log
    assert "env OMP_NUM_THREADS=4" in log and "env S_LEVEL=3" in log
    assert "file /data/mesh.h5: MESH v1" in log and "cwd /scratch" in log

    # the pods as Volcano creates them: the Job's templates, and the master pod itself
    job_name = xcom_result(mpi_overrides.dag_id, "mpi")["job_name"]
    job = sandbox.api.get("vcjobs", job_name, mpi_namespace)
    master_pod = sandbox.api.get("pods", f"{job_name}-mpimaster-0", mpi_namespace)
    templates = {task["name"]: task["template"] for task in job["spec"]["tasks"]}
    for role, spec in (("mpimaster", master_pod["spec"]), ("mpiworker", templates["mpiworker"]["spec"])):
        container = next(c for c in spec["containers"] if c["name"] == role)
        assert [v["name"] for v in spec["volumes"] if v["name"] in ("mesh", "scratch")] == ["mesh", "scratch"]
        assert spec["imagePullSecrets"] == [{"name": "registry-creds"}]
        assert container["workingDir"] == "/scratch"
        assert container["env"][0] == {
            "name": "TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "solver-creds", "key": "token"}},
        }
        assert container["envFrom"] == [{"configMapRef": {"name": "solver-settings"}, "prefix": "S_"}]
    assert master_pod["spec"]["initContainers"][0]["image"] == "mirror.example.com/kubectl:v1.30.0"
    master = next(c for c in master_pod["spec"]["containers"] if c["name"] == "mpimaster")
    assert master["args"] == ["--bind-to", "core", "-x", "OMP_NUM_THREADS", "mpi_echo", *argv]
    assert master["resources"]["requests"] == {"cpu": "200m", "memory": "64Mi"}
    worker = templates["mpiworker"]
    assert worker["metadata"]["annotations"] == {"note": annotation}
    assert worker["spec"]["containers"][0]["securityContext"] == {"runAsUser": 1000}
    assert worker["spec"]["containers"][0]["resources"]["limits"]["memory"] == "256Mi"
    assert worker["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"
    # the secret's value never passed through Argo: the Workflow holds only its name
    workflow = sandbox.api.list("workflows", mpi_namespace)["items"][0]
    assert secret_value not in json.dumps(workflow) and secret_value not in json.dumps(job)
    sandbox.api.delete("workflows", workflow["metadata"]["name"], mpi_namespace)
    assert leftovers(sandbox, mpi_namespace)[0] == 0


# -- node placement: a sandbox of its own, with a tainted GPU node ------------------------------------------
GPU_NODE, CPU_NODE = "gpu-node-0", "cpu-node-0"


@pytest.fixture(scope="module")
def gpu_sandbox():
    # the GPU node first: a scheduler that ignored taints would put every pod there
    nodes = [NodeCapacity.gpu_node(GPU_NODE, gpus=2), NodeCapacity(CPU_NODE)]
    with Sandbox(SandboxOptions(nodes=nodes, time_scale=0.1)) as sb:
        yield sb


@pytest.fixture
def gpu_namespace(gpu_sandbox, airflow_db, monkeypatch):
    namespace = gpu_sandbox.create_namespace(f"t-{uuid.uuid4().hex[:10]}")
    install_mpi_templates(gpu_sandbox, namespace)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", gpu_sandbox.airflow_connection())
    yield namespace
    gpu_sandbox.delete_namespace(namespace)


class NodeRecorder(threading.Thread):
    """Record the node of every pod of a namespace while a run goes on (finished workers are deleted)."""

    def __init__(self, sandbox, namespace: str) -> None:
        super().__init__(daemon=True)
        self.sandbox, self.namespace, self.nodes = sandbox, namespace, {}
        self.specs: dict[str, dict] = {}  # each pod's spec, as first seen
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            for pod in self.sandbox.api.list("pods", self.namespace)["items"]:
                task = (pod["metadata"].get("labels") or {}).get("volcano.sh/task-spec")
                if task and pod["spec"].get("nodeName"):
                    self.nodes[pod["metadata"]["name"]] = (task, pod["spec"]["nodeName"])
                if task:
                    self.specs.setdefault(pod["metadata"]["name"], pod["spec"])

    def __enter__(self) -> NodeRecorder:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.join()


GPU_WORKERS = {
    "workers": 2,
    "gpus_per_worker": 1,
    "pod_overrides": {
        "mpiworker": {
            "spec": {
                "nodeSelector": {"accelerator": "nvidia"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            }
        }
    },
}


def test_gpu_workers_land_only_on_the_tainted_gpu_node_with_the_toleration(gpu_sandbox, gpu_namespace, caplog, capfd):
    from tests.dags.mpi_test_dags import mpi_overrides

    with NodeRecorder(gpu_sandbox, gpu_namespace) as recorder:
        states, log = run_dag(mpi_overrides, caplog, capfd, namespace=gpu_namespace, overrides=GPU_WORKERS)
    assert states == {"mpi": "success"}, log[-3000:]
    placed = sorted(recorder.nodes.values())
    assert placed == [("mpimaster", CPU_NODE), ("mpiworker", GPU_NODE), ("mpiworker", GPU_NODE)], placed

    # without the toleration the workers fit no node: the gang is never admitted, and the task says why
    caplog.clear()
    untolerated = {
        **GPU_WORKERS,
        "pod_overrides": {"mpiworker": {"spec": {"nodeSelector": {"accelerator": "nvidia"}}}},
        "schedule_timeout": 5,
    }
    states, log = run_dag(mpi_overrides, caplog, capfd, namespace=gpu_namespace, overrides=untolerated)
    assert states == {"mpi": "failed"}
    assert "untolerated taint {nvidia.com/gpu: present}" in log, log[-3000:]
    assert leftovers(gpu_sandbox, gpu_namespace)[0] == 0


def _pod_reader_account(sandbox, ns: str, name: str) -> None:
    """Create service account ``name`` with what the master's init container needs (get, list, watch pods)."""
    rbac = "rbac.authorization.k8s.io"
    sandbox.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}})
    sandbox.apply(
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": ns},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
        }
    )
    sandbox.apply({"apiVersion": f"{rbac}/v1", "kind": "RoleBinding", "metadata": {"name": name, "namespace": ns},
                   "roleRef": {"apiGroup": rbac, "kind": "Role", "name": name},
                   "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]})  # fmt: skip


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
ON_THE_GPU_NODE = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [GPU_NODE]}]}]}}}  # fmt: skip


def test_placement_and_account_apply_to_master_and_workers_and_the_ttl_removes_the_job(
    gpu_sandbox, gpu_namespace, caplog, capfd
):
    """``node_selector``, ``tolerations``, ``affinity`` and ``service_account_name`` as operator arguments: every
    pod of the gang lands on the tainted GPU node under the account; ``ttl_seconds_after_finished`` has Volcano's
    garbage collector delete the finished Job while the kept Workflow stays.
    """
    from tests.dags.mpi_test_dags import mpi_overrides

    ns = gpu_namespace
    _pod_reader_account(gpu_sandbox, ns, "mpi-runner")
    overrides = {
        "workers": 2,
        "node_selector": {"accelerator": "nvidia"},
        "tolerations": [GPU_TOLERATION],
        "affinity": ON_THE_GPU_NODE,
        "service_account_name": "mpi-runner",
        "ttl_seconds_after_finished": 5,  # x the sandbox's time_scale 0.1
        "on_finish_action": "keep_workflow",
    }
    with NodeRecorder(gpu_sandbox, ns) as recorder:
        states, log = run_dag(mpi_overrides, caplog, capfd, namespace=ns, overrides=overrides)
    assert states == {"mpi": "success"}, log[-3000:]
    placed = sorted(recorder.nodes.values())
    assert placed == [("mpimaster", GPU_NODE), ("mpiworker", GPU_NODE), ("mpiworker", GPU_NODE)], placed

    job_name = xcom_result(mpi_overrides.dag_id, "mpi")["job_name"]
    workflow = gpu_sandbox.api.list("workflows", ns)["items"][0]
    for name, spec in recorder.specs.items():  # as the pods were created, master and workers alike
        assert spec["serviceAccountName"] == "mpi-runner", name
        assert spec["nodeSelector"] == {"accelerator": "nvidia"}, name
        assert GPU_TOLERATION in spec["tolerations"], name
        assert spec["affinity"] == ON_THE_GPU_NODE, name
    wait_for(lambda: gpu_sandbox.api.get_or_none("vcjobs", job_name, ns) is None, 30, what="the Job's ttl deletion")
    assert gpu_sandbox.api.get_or_none("workflows", workflow["metadata"]["name"], ns) is not None  # kept
    gpu_sandbox.api.delete("workflows", workflow["metadata"]["name"], ns)
    assert leftovers(gpu_sandbox, ns)[0] == 0


# -- the README's example, as written -----------------------------------------------------------------------
def test_the_readmes_example_runs_as_written(sandbox, mpi_namespace, caplog, capfd):
    from tests.dags import readme_dags

    assert readme_dags.readme_example().count('namespace="argo"') == 1  # the one line the DAG file changes
    ns = mpi_namespace
    volume = bound_claim(sandbox, ns, "mesh-data", {"mesh.h5": "MESH v1\n"})
    try:
        create_secret(sandbox, ns, "solver-credentials", {"token": "t0ken"})
        create_secret(sandbox, ns, "registry-credentials", {"note": "the sandbox pulls no image"})
        sandbox.kubelet.programs.script(
            ShellProgram(mpi_programs={"solver": "mpi_echo"}), namespace=ns, image="registry.example.com/hpc/*"
        )
        states, log = run_dag(readme_dags.dag, caplog, capfd, namespace=ns)
    finally:
        sandbox.kubelet.programs.clear()
        sandbox.api.delete("persistentvolumes", volume, None)
    assert states == {"plan": "success", "simulate": "success"}, log[-3000:]
    assert 'argv ["--mesh","/data/mesh.h5","--steps","1000"]' in log
    assert "rank 7 of 8 on " in log  # 2 workers from plan's XCom, 4 slots each
    assert sandbox.api.get("persistentvolumeclaims", "mesh-data", ns)["status"]["phase"] == "Bound"


def test_a_template_that_is_not_ours_runs_under_the_contract(sandbox, mpi_namespace, caplog, capfd):
    """docs/examples/mpi-launcher-template.yaml: steps instead of a DAG, tasks `launcher` and `worker`, its own
    parameter, and of the parameters always sent only those it wants (undeclared ones are Argo globals).
    """
    from tests.dags.mpi_test_dags import mpi_overrides

    template = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "docs/examples/mpi-launcher-template.yaml").read_text()
    )
    sandbox.api.create("workflowtemplates", template, mpi_namespace)
    overrides = {
        "workflow_template": "mpi-launcher",
        "log_task": "launcher",
        "parameters": {"hosts-file": "/etc/volcano/worker.host"},
        "workers": 2,
        "mpi_command": "mpi_echo",
        "mpi_args": ["a b", "{{workflow.name}}"],
        "worker_resources": {"requests": {"cpu": "50m"}},
        "on_finish_action": "keep_workflow",
    }
    states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides=overrides)
    assert states == {"mpi": "success"}, log[-3000:]
    assert "rank 1 of 2 on " in log and ': argv ["a b","{{workflow.name}}"]' in log
    result = xcom_result(mpi_overrides.dag_id, "mpi")
    job = sandbox.api.get("vcjobs", result["job_name"], mpi_namespace)
    assert job["metadata"]["ownerReferences"][0]["kind"] == "Workflow"
    worker = next(t for t in job["spec"]["tasks"] if t["name"] == "worker")["template"]["spec"]["containers"][0]
    assert worker["resources"]["requests"]["cpu"] == "50m"  # the mpiworker-container parameter, merged as data
    workflow = sandbox.api.list("workflows", mpi_namespace)["items"][0]
    sandbox.api.delete("workflows", workflow["metadata"]["name"], mpi_namespace)
    assert leftovers(sandbox, mpi_namespace)[0] == 0
