"""What the emulated kubelet gives a container before it starts, as harsh as a v1.31 kubelet.

Env from Secrets (``CreateContainerConfigError`` until the Secret exists), ConfigMap volumes (``FailedMount`` until
the ConfigMap exists), read as the node under the API server's Node authorizer; and an MPI launcher's argv kept
verbatim through ``sh -c ... "$@"`` and ``mpiexec``.
"""

from __future__ import annotations

import base64
import json

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet.programs import Program
from tests.integration.helpers import phase_of, pod_log, volcano_job, wait_for

pytestmark = pytest.mark.integration

IMAGE = "volcanosh/example-mpi:0.0.3"


def _pod(name: str, container: dict, **spec) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": IMAGE, **container}], "restartPolicy": "Never", **spec},
    }


def _state(sandbox, ns: str, pod: str) -> dict:
    statuses = ((sandbox.api.get_or_none("pods", pod, ns) or {}).get("status") or {}).get("containerStatuses") or [{}]
    return statuses[0].get("state") or {}


def _events(sandbox, ns: str, pod: str, reason: str) -> list[dict]:
    items = sandbox.api.list("events", ns)["items"]
    return [e for e in items if e["involvedObject"]["name"] == pod and e["reason"] == reason]


def test_a_pod_naming_a_scheduler_that_does_not_run_is_never_bound(sandbox, sandbox_namespace):
    """kube-scheduler binds only pods of its own profile (``eventhandlers.go: responsibleForPod``)."""
    ns = sandbox_namespace
    echo = {"command": ["/bin/sh", "-c", "echo hi"]}
    sandbox.api.create("pods", _pod("theirs", echo, schedulerName="their-scheduler"), ns)
    sandbox.api.create("pods", _pod("ours", echo), ns)
    # the pass that bound "ours", created after "theirs", saw "theirs" too
    wait_for(lambda: phase_of(sandbox.api, "pods", "ours", ns) == "Succeeded", 20, what="the default one ran")
    theirs = sandbox.api.get("pods", "theirs", ns)
    assert "nodeName" not in theirs["spec"] and theirs["status"]["phase"] == "Pending"


def test_kube_scheduler_binds_a_default_pod_and_says_why_it_cannot_place_another(sandbox, sandbox_namespace):
    """The real kube-scheduler binds the default profile's pods (its ``Scheduled`` event) and refuses one that no
    node accepts with its ``FailedScheduling`` text; the kubelet binds nothing itself.
    """
    ns = sandbox_namespace
    echo = {"command": ["/bin/sh", "-c", "echo hi"]}
    sandbox.api.create("pods", _pod("placed", echo), ns)
    sandbox.api.create("pods", _pod("nowhere", echo, nodeSelector={"disk": "none-has-it"}), ns)
    wait_for(lambda: phase_of(sandbox.api, "pods", "placed", ns) == "Succeeded", 30, what="the placed one ran")
    scheduled = _events(sandbox, ns, "placed", "Scheduled")
    assert scheduled and scheduled[0]["message"].startswith(f"Successfully assigned {ns}/placed to sandbox-node-0")
    refused = wait_for(lambda: _events(sandbox, ns, "nowhere", "FailedScheduling"), 30, what="FailedScheduling")
    assert "didn't match Pod's node affinity/selector" in refused[0]["message"]
    assert "nodeName" not in sandbox.api.get("pods", "nowhere", ns)["spec"]


def test_env_from_a_secret_not_created_yet_waits_then_the_program_sees_its_value(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    container = {
        "command": ["/bin/sh", "-c", 'echo "token=$TOKEN" "node=$NODE" "$LABEL"'],
        "env": [
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "LABEL", "value": "[$(NODE)] $$(NODE)"},
        ],
    }
    sandbox.api.create("pods", _pod("needs-secret", container), ns)

    def waiting() -> dict:
        return _state(sandbox, ns, "needs-secret").get("waiting") or {}

    wait_for(lambda: waiting().get("reason") == "CreateContainerConfigError", 20, what="CreateContainerConfigError")
    assert waiting()["message"] == 'secret "creds" not found'
    assert phase_of(sandbox.api, "pods", "needs-secret", ns) == "Pending"
    failed = _events(sandbox, ns, "needs-secret", "Failed")
    assert [e["message"] for e in failed] == ['Error: secret "creds" not found']
    assert failed[0]["type"] == "Warning" and failed[0]["involvedObject"]["fieldPath"] == "spec.containers{main}"

    # the key missing is its own error
    secret = {"metadata": {"name": "creds"}, "data": {"other": base64.b64encode(b"x").decode()}}
    sandbox.api.create("secrets", secret, ns)
    wait_for(lambda: waiting().get("message", "").startswith("couldn't"), 20, what="the missing key's error")
    assert waiting()["message"] == f"couldn't find key token in Secret {ns}/creds"

    secret["data"]["token"] = base64.b64encode(b"s3 cr$t").decode()
    sandbox.api.replace("secrets", {**secret, "metadata": {"name": "creds", "namespace": ns}})
    wait_for(lambda: phase_of(sandbox.api, "pods", "needs-secret", ns) == "Succeeded", 20, what="pod Succeeded")
    node = sandbox.api.get("pods", "needs-secret", ns)["spec"]["nodeName"]
    assert pod_log(sandbox.api, ns, "needs-secret", "main").splitlines() == [
        f"token=s3 cr$t node={node} [{node}] $(NODE)"
    ]


def test_the_node_reads_only_secrets_its_pods_reference(sandbox, sandbox_namespace):
    """The API server's Node authorizer: system:node:<n> may get a Secret only once a pod bound to <n> uses it."""
    ns = sandbox_namespace
    node = next(iter(sandbox.kubelet.nodes))
    for name in ("referenced", "unreferenced"):
        sandbox.api.create("secrets", {"metadata": {"name": name}, "stringData": {"k": "v"}}, ns)

    def allowed(name: str) -> bool:
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": f"system:node:{node}",
                "groups": ["system:nodes"],
                "resourceAttributes": {"namespace": ns, "verb": "get", "resource": "secrets", "name": name},
            },
        }
        answer = sandbox.api.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=review)
        return answer["status"].get("allowed") is True

    assert not allowed("referenced")
    env = [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "referenced", "key": "k"}}}]
    sandbox.api.create("pods", _pod("user", {"command": ["/bin/sh", "-c", "echo $K"], "env": env}, nodeName=node), ns)
    wait_for(lambda: allowed("referenced"), 10, what="the node allowed the referenced Secret")
    assert not allowed("unreferenced")
    wait_for(lambda: phase_of(sandbox.api, "pods", "user", ns) == "Succeeded", 20, what="pod Succeeded")
    assert pod_log(sandbox.api, ns, "user", "main") == "v\n"


def test_a_missing_config_map_volume_fails_the_mount_until_it_appears(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    container = {
        "command": ["/bin/sh", "-c", 'CFG=$(cat /etc/app/mode.conf | tr "\\n" " ")\necho "mode: $CFG"'],
        "volumeMounts": [{"name": "settings", "mountPath": "/etc/app"}],
    }
    volumes = [
        {"name": "settings", "configMap": {"name": "app-settings", "items": [{"key": "mode", "path": "mode.conf"}]}}
    ]
    sandbox.api.create("pods", _pod("needs-config", container, volumes=volumes), ns)

    def mount_failures() -> list[str]:
        return [e["message"] for e in _events(sandbox, ns, "needs-config", "FailedMount")]

    wait_for(lambda: mount_failures(), 20, what="FailedMount")
    assert mount_failures()[0] == 'MountVolume.SetUp failed for volume "settings" : configmap "app-settings" not found'
    assert _state(sandbox, ns, "needs-config")["waiting"]["reason"] == "ContainerCreating"
    assert phase_of(sandbox.api, "pods", "needs-config", ns) == "Pending"

    sandbox.api.create("configmaps", {"metadata": {"name": "app-settings"}, "data": {"other": "x"}}, ns)
    wanted = 'MountVolume.SetUp failed for volume "settings" : configmap references non-existent config key: mode'
    wait_for(lambda: wanted in mount_failures(), 30, what="the missing key's FailedMount")

    sandbox.api.patch("configmaps", "app-settings", {"data": {"mode": "fast\nsafe"}}, ns)
    wait_for(lambda: phase_of(sandbox.api, "pods", "needs-config", ns) == "Succeeded", 30, what="pod Succeeded")
    assert pod_log(sandbox.api, ns, "needs-config", "main").splitlines() == ["mode: fast safe"]


class _Writer(Program):
    def run(self, ctx) -> int:
        return 0 if ctx.write_file("/scratch/out.txt", f"from {ctx.container['name']}") else 1


def test_an_empty_dir_is_shared_by_a_pods_containers_and_a_host_path_is_the_nodes(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    node = next(iter(sandbox.kubelet.nodes))
    (sandbox.kubelet.node_root(node) / "datasets").mkdir(exist_ok=True)
    (sandbox.kubelet.node_root(node) / "datasets" / "in.csv").write_text("a,b")
    sandbox.kubelet.programs.script(_Writer(), namespace=ns, pod="shared", container="writer")
    spec = {
        "nodeName": node,
        "initContainers": [
            {"name": "writer", "image": IMAGE, "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}
        ],
        "containers": [
            {
                "name": "main",
                "image": IMAGE,
                "command": ["/bin/sh", "-c", 'A=$(cat /in/out.txt)\nB=$(cat /data/in.csv)\necho "$A|$B"'],
                "volumeMounts": [
                    {"name": "scratch", "mountPath": "/in"},
                    {"name": "data", "mountPath": "/data"},
                ],
            }
        ],
        "volumes": [
            {"name": "scratch", "emptyDir": {}},
            {"name": "data", "hostPath": {"path": "/datasets", "type": "Directory"}},
        ],
        "restartPolicy": "Never",
    }
    sandbox.api.create("pods", {"metadata": {"name": "shared"}, "spec": spec}, ns)
    wait_for(lambda: phase_of(sandbox.api, "pods", "shared", ns) == "Succeeded", 20, what="pod Succeeded")
    assert pod_log(sandbox.api, ns, "shared", "main").splitlines() == ["from writer|a,b"]

    missing = {
        **spec,
        "initContainers": [],
        "volumes": [{"name": "data", "hostPath": {"path": "/nope", "type": "Directory"}}],
    }
    missing["containers"] = [{**spec["containers"][0], "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]
    sandbox.api.create("pods", {"metadata": {"name": "no-dir"}, "spec": missing}, ns)
    wanted = 'MountVolume.SetUp failed for volume "data" : hostPath type check failed: /nope is not a directory'
    wait_for(
        lambda: [e["message"] for e in _events(sandbox, ns, "no-dir", "FailedMount")][:1] == [wanted],
        20,
        what="FailedMount",
    )


HOSTILE = ["--in", "/data/a b", "$(id)", '--opt="a b"', "{{workflow.name}}", "it's", "$HOME", ""]


def test_an_mpi_echo_master_prints_hostile_arguments_verbatim(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    hostile = HOSTILE
    job = volcano_job("echo", workers=2)
    master = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    master["command"] = [
        "/bin/sh",
        "-c",
        'MPI_HOST=$(cat /etc/volcano/mpiworker.host | tr "\\n" ",")\n'
        'exec mpiexec --allow-run-as-root --host ${MPI_HOST} -np 2 --mca btl tcp -x MODE=fast mpi_echo "$@"',
        "mpi",
    ]
    master["args"] = hostile
    master["env"] = [
        {"name": "MPI_ECHO_ENV", "value": "MODE"},
        {"name": "MPI_ECHO_FILES", "value": "/etc/volcano/mpiworker.host"},
    ]
    sandbox.api.create("vcjobs", job, ns)
    wait_for(lambda: phase_of(sandbox.api, "vcjobs", "echo", ns) == "Completed", 30, what="job Completed")
    argv = json.dumps(hostile, separators=(",", ":"))
    assert pod_log(sandbox.api, ns, "echo-mpimaster-0", "mpimaster").splitlines() == [
        f"rank 0 of 2 on echo-mpiworker-0: argv {argv}",
        f"rank 1 of 2 on echo-mpiworker-1: argv {argv}",
        "env MODE=fast",
        "file /etc/volcano/mpiworker.host: echo-mpiworker-0.echo",
        "echo-mpiworker-1.echo",
        "cwd /",
    ]
