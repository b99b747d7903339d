"""The pure parts of running upstream's own binaries: a container as a process, installers' manifests."""

from __future__ import annotations

import base64
import shutil
import signal
import threading
from pathlib import Path

import pytest

from airflow_provider_volcano_argo.sandbox.argo.emissary import inner_command
from airflow_provider_volcano_argo.sandbox.kubelet import process
from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext
from airflow_provider_volcano_argo.sandbox.kubelet.volumes import PodVolumes
from airflow_provider_volcano_argo.sandbox.upstream.argo import controller_config
from airflow_provider_volcano_argo.sandbox.upstream.install import container_args, service_account_of
from airflow_provider_volcano_argo.sandbox.upstream.volcano import webhook_by_url


def test_the_kubernetes_service_variables_point_at_the_api_server():
    env = process.service_environment("https://127.0.0.1:6443")
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert env["KUBERNETES_SERVICE_PORT"] == "6443"
    assert env["KUBERNETES_PORT_443_TCP"] == "tcp://127.0.0.1:6443"


def test_a_signalled_process_exits_128_plus_the_signal_as_runc_reports():
    assert process.exit_code(-signal.SIGKILL) == 137
    assert process.exit_code(-signal.SIGTERM) == 143
    assert process.exit_code(64) == 64


def test_mounts_are_bound_outermost_first_read_only_where_the_kubelet_mounts_so(tmp_path: Path):
    volumes = PodVolumes({"spec": {}}, tmp_path / "pod", tmp_path / "node", lambda *_: None, lambda _: b"")
    volumes.mounted = {
        "var-run-argo": tmp_path / "pod/volumes/kubernetes.io~empty-dir/var-run-argo",
        "token": tmp_path / "pod/volumes/kubernetes.io~projected/token",
    }
    container = {
        "volumeMounts": [
            {"name": "var-run-argo", "mountPath": "/var/run/argo/sub", "subPath": "s"},
            {"name": "token", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
            {"name": "var-run-argo", "mountPath": "/var/run/argo"},
            {"name": "missing", "mountPath": "/x"},
        ]
    }
    mounts = process.container_mounts(container, volumes)
    assert [(target, ro) for _, target, ro in mounts] == [
        ("/var/run/argo", False),
        ("/var/run/argo/sub", False),
        ("/var/run/secrets/kubernetes.io/serviceaccount", True),
    ]
    assert mounts[1][0] == volumes.mounted["var-run-argo"] / "s"
    assert mounts[1][0].is_dir()  # a missing subPath is made before the container starts


def test_bwrap_runs_the_command_as_pid_1_with_the_binary_on_path_and_the_mounts(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(process.shutil, "which", lambda _: "/usr/bin/bwrap")
    argv = process.bwrap_argv(
        Path("/cache/argoexec"), [(tmp_path, "/var/run/argo", False)], tmp_path / "t", ["argoexec", "init"], 7
    )
    assert argv[:3] == ["/usr/bin/bwrap", "--unshare-pid", "--as-pid-1"]
    assert argv[argv.index("--info-fd") + 1] == "7"
    assert "--ro-bind /cache/argoexec /usr/local/bin/argoexec" in " ".join(argv)
    assert f"--bind {tmp_path} /var/run/argo" in " ".join(argv)
    assert argv[argv.index("--") :] == ["--", "argoexec", "init"]


def _run_real(tmp_path: Path, script: str, stop_on: str | None = None, mounts: dict[str, Path] | None = None):
    """Run ``script`` as a real container process with ``mounts`` (path: source); SIGTERM on ``stop_on``."""
    binary = tmp_path / "prog"
    binary.write_text("#!/bin/sh\n" + script)
    binary.chmod(0o755)
    volumes = PodVolumes({"spec": {}}, tmp_path / "pod", tmp_path / "node", lambda *_: None, lambda _: b"")
    volumes.mounted = {f"v{i}": source for i, source in enumerate((mounts or {}).values())}
    lines: list[str] = []
    ctx: ContainerContext

    def write(text: str, stamp_ns: int | None = None) -> None:
        lines.append(text)
        if text == stop_on:
            ctx.sigterm()

    ctx = ContainerContext(
        pod={"metadata": {"name": "p", "namespace": "ns"}, "spec": {}},
        container={
            "name": "main",
            "command": ["prog"],
            "args": ["a b"],
            "volumeMounts": [{"name": f"v{i}", "mountPath": path} for i, path in enumerate(mounts or {})],
        },
        write=write,
        stopped=threading.Event(),
        api=None,  # type: ignore[arg-type]
        environment={"GREETING": "hi"},
        volumes=volumes,
    )
    return process.HostProcess(binary, "https://127.0.0.1:6443").run(ctx), lines, ctx


needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


@needs_bwrap
def test_a_real_process_runs_as_pid_1_with_the_pod_env_and_reports_its_exit_code_and_message(tmp_path: Path):
    code, lines, ctx = _run_real(
        tmp_path, 'echo "$$ $GREETING $1 $KUBERNETES_SERVICE_PORT"; echo bye > /dev/termination-log; exit 3\n'
    )
    assert (code, lines, ctx.termination_message) == (3, ["1 hi a b 6443"], "bye\n")


@needs_bwrap
def test_sigterm_reaches_a_real_process_that_traps_it(tmp_path: Path):
    script = 'trap "echo term; exit 7" TERM\necho up\nwhile :; do sleep 0.05; done\n'
    code, lines, _ = _run_real(tmp_path, script, stop_on="up")
    assert (code, lines) == (7, ["up", "term"])


@needs_bwrap
def test_a_failed_sandbox_set_up_is_the_container_log_and_exit_code(tmp_path: Path):
    code, lines, _ = _run_real(tmp_path, "echo never\n", mounts={"/usr/read-only-here": tmp_path})
    assert code == 1
    assert lines[0].startswith("bwrap: Can't mkdir /usr/read-only-here")


def test_no_bwrap_is_an_error_that_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(process.shutil, "which", lambda _: None)
    with pytest.raises(process.RuntimeUnavailable, match="apt-get install bubblewrap"):
        process.bwrap()


def test_emissary_runs_what_follows_the_double_dash_of_argoexec_emissary_only():
    wrapped = ["/var/run/argo/argoexec", "emissary", "--loglevel", "info", "--", "bash", "-c", "echo hi"]
    assert inner_command(wrapped) == ["bash", "-c", "echo hi"]
    assert inner_command(["argoexec", "init"]) is None
    assert inner_command(["bash", "-c", "--", "x"]) is None


def test_webhooks_call_the_loopback_url_with_the_sandbox_ca():
    doc = {
        "kind": "MutatingWebhookConfiguration",
        "webhooks": [{"name": "w", "clientConfig": {"service": {"name": "svc", "path": "/jobs/mutate"}}}],
    }
    config = webhook_by_url(doc, "https://127.0.0.1:9443", b"CA")["webhooks"][0]["clientConfig"]
    assert config == {"url": "https://127.0.0.1:9443/jobs/mutate", "caBundle": base64.b64encode(b"CA").decode()}
    assert "url" not in doc["webhooks"][0]["clientConfig"]


def test_deployment_args_keep_upstream_flags_and_set_the_sandbox_ones():
    deployment = {
        "spec": {
            "template": {
                "spec": {
                    "serviceAccount": "volcano-scheduler",
                    "containers": [{"args": ["--scheduler-conf=/etc/conf", "--leader-elect=false", "-v=3", "2>&1"]}],
                }
            }
        }
    }
    args = container_args(deployment, {"--scheduler-conf": "/tmp/conf", "--kubeconfig": "/k", "-v": None})
    assert args == ["--scheduler-conf=/tmp/conf", "--leader-elect=false", "--kubeconfig=/k"]
    assert service_account_of(deployment) == "volcano-scheduler"


def test_the_controller_config_drops_the_minio_repository_and_fixed_ports_and_may_poll_faster():
    data = {"artifactRepository": "archiveLogs: true\n", "executor": "resources: {}\n", "retentionPolicy": "x"}
    config = controller_config(data, resource_interval=0.5)
    assert "artifactRepository" not in config
    assert config["metricsConfig"] == config["telemetryConfig"] == "enabled: false\n"
    assert "RESOURCE_STATE_CHECK_INTERVAL" in config["executor"] and "500ms" in config["executor"]
    assert "resources" in config["executor"] and config["retentionPolicy"] == "x"
    assert "env" not in controller_config(data, resource_interval=None)["executor"]
