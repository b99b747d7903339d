"""A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager, kube-scheduler.

Every port is free-picked and every file lives in one temporary directory, so several control planes can run at
once; ``stop()`` kills the processes and removes the directory.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from airflow_provider_volcano_argo.sandbox.controlplane.pki import Pki

if TYPE_CHECKING:
    from collections.abc import Mapping

log = logging.getLogger(__name__)

ADMIN_USER = "sandbox-admin"


class ControlPlaneError(RuntimeError):
    """A component did not start; the message carries the tail of its log."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the thread that started us dies, so a crashed test leaves no strays.

    Linux ties this to the starting *thread*: start and restart components from a long-lived thread.
    """
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class Process:
    """One upstream binary, its output in ``logfile``; ``env`` is added to this process's environment."""

    def __init__(self, name: str, argv: list[str], logfile: Path, env: Mapping[str, str] | None = None):
        self.name, self.argv, self.logfile, self.env = name, argv, logfile, dict(env or {})
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.logfile, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env},
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.logfile.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class ControlPlane:
    """Start with ``start()``; ``admin_kubeconfig`` then points at the running API server as cluster admin."""

    def __init__(self, binaries: Mapping[str, Path], workdir: Path | None = None, audit_log: bool = False):
        self.binaries = binaries
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="volcano-argo-sandbox-"))
        self.audit_log = audit_log
        self.pki = Pki(self.dir)
        self.admin_token = secrets.token_urlsafe(32)
        self.etcd_port, self.etcd_peer_port, self.port = free_port(), free_port(), free_port()
        self.server = f"https://127.0.0.1:{self.port}"
        self.serving_cert, self.serving_key = self.pki.serving("kube-apiserver")
        (self.dir / "tokens.csv").write_text(f'{self.admin_token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n')
        self.admin_kubeconfig = self.write_kubeconfig("admin", self.admin_token)
        self._etcd = Process("etcd", self._etcd_argv(), self.dir / "etcd.log")
        self._apiserver = Process("kube-apiserver", self._apiserver_argv(), self.dir / "kube-apiserver.log")
        self._kcm = Process("kube-controller-manager", self._kcm_argv(), self.dir / "kube-controller-manager.log")
        self._scheduler = Process("kube-scheduler", self._scheduler_argv(), self.dir / "kube-scheduler.log")

    @property
    def audit_log_file(self) -> Path:
        return self.dir / "audit.log"

    def _etcd_argv(self) -> list[str]:
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        client = f"http://127.0.0.1:{self.etcd_port}"
        return [
            str(self.binaries["etcd"]),
            f"--data-dir={self.dir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            "--unsafe-no-fsync",  # test data only: fsync makes every write wait for the disk
            "--log-level=warn",
        ]

    def _apiserver_argv(self) -> list[str]:
        argv = [
            str(self.binaries["kube-apiserver"]),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--tls-cert-file={self.serving_cert}",
            f"--tls-private-key-file={self.serving_key}",
            f"--client-ca-file={self.pki.ca_file}",
            f"--token-auth-file={self.dir / 'tokens.csv'}",
            # Node first: the emulated kubelet reads Secrets/ConfigMaps as system:node:<name>, which the Node
            # authorizer allows only for objects referenced by pods bound to that node (as on a real cluster)
            "--authorization-mode=Node,RBAC",
            f"--service-account-key-file={self.pki.sa_pub_file}",
            f"--service-account-signing-key-file={self.pki.sa_key_file}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--kubelet-preferred-address-types=InternalIP",
            "--allow-privileged=true",
            f"--cert-dir={self.dir / 'apiserver-certs'}",
            "--profiling=false",
            "--enable-priority-and-fairness=false",
            "--v=0",
        ]
        if self.audit_log:
            policy = self.dir / "audit-policy.yaml"
            policy.write_text(
                yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Metadata"}]})
            )
            argv += [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log_file}"]
        return argv

    def _kcm_argv(self) -> list[str]:
        return [
            str(self.binaries["kube-controller-manager"]),
            f"--kubeconfig={self.admin_kubeconfig}",
            # persistentvolume-binder: claims bind to PersistentVolumes as on a cluster (the kubelet mounts bound ones);
            # job: batch/v1 Jobs run as on a cluster (pkg/controller/job: pods created from the template, the
            # Complete / Failed conditions), their pods bound by kube-scheduler and run by the emulated kubelet
            # root-ca-cert-publisher: the kube-root-ca.crt ConfigMap of every namespace, which the kube-api-access
            # volume the ServiceAccount admission plugin adds to every pod mounts
            "--controllers=garbagecollector,serviceaccount,serviceaccount-token,root-ca-cert-publisher,namespace,"
            "resourcequota,persistentvolume-binder,job",
            f"--service-account-private-key-file={self.pki.sa_key_file}",
            f"--root-ca-file={self.pki.ca_file}",
            "--leader-elect=false",
            "--secure-port=0",
            "--concurrent-gc-syncs=5",
            "--v=0",
        ]

    def _scheduler_argv(self) -> list[str]:
        # binds every pod of the default profile (Argo's step pods, batch/v1 Jobs' pods); Volcano's own scheduler
        # binds the pods that name it
        return [
            str(self.binaries["kube-scheduler"]),
            f"--kubeconfig={self.admin_kubeconfig}",
            "--leader-elect=false",
            "--secure-port=0",
            "--v=0",
        ]

    def write_kubeconfig(self, name: str, token: str, namespace: str = "default") -> Path:
        """Write a kubeconfig for ``token`` against this API server, with the CA referenced by path."""
        data = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "sandbox", "cluster": {"server": self.server, "certificate-authority": str(self.pki.ca_file)}}
            ],
            "users": [{"name": name, "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": "sandbox", "user": name, "namespace": namespace}}],
            "current-context": name,
        }
        path = self.dir / f"{name}.kubeconfig"
        path.write_text(yaml.safe_dump(data))
        path.chmod(0o600)
        return path

    def _ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.pki.ca_file))

    def _ready(self) -> bool:
        request = urllib.request.Request(
            f"{self.server}/readyz", headers={"Authorization": f"Bearer {self.admin_token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=2, context=self._ssl_context()) as response:
                return response.status == 200
        except OSError:
            return False

    def _etcd_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.etcd_port}/health", timeout=2) as response:
                return b'"true"' in response.read()
        except OSError:
            return False

    def _wait(self, process: Process, ready, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not process.alive():
                raise ControlPlaneError(f"{process.name} exited during start-up:\n{process.tail()}")
            if ready():
                return
            time.sleep(0.1)
        raise ControlPlaneError(f"{process.name} not ready after {timeout:.0f} s:\n{process.tail()}")

    def start(self, timeout: float = 90) -> None:
        try:
            self._etcd.start()
            self._wait(self._etcd, self._etcd_ready, timeout)
            self.start_apiserver(timeout)
            self._kcm.start()
            self._scheduler.start()
        except BaseException:
            self.stop()
            raise

    def start_apiserver(self, timeout: float = 90) -> None:
        self._apiserver.start()
        self._wait(self._apiserver, self._ready, timeout)

    def stop_apiserver(self) -> None:
        self._apiserver.stop()

    def restart_apiserver(self, downtime: float = 0.0) -> None:
        """Stop the API server (etcd and its data kept), wait ``downtime`` seconds, start it on the same port."""
        self.stop_apiserver()
        time.sleep(downtime)
        self.start_apiserver()

    def processes_alive(self) -> dict[str, bool]:
        return {p.name: p.alive() for p in (self._etcd, self._apiserver, self._kcm, self._scheduler)}

    def stop(self, keep_dir: bool = False) -> None:
        for process in (self._scheduler, self._kcm, self._apiserver, self._etcd):
            process.stop()
        if not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
