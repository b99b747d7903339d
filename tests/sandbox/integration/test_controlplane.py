"""The real control plane the sandbox starts: etcd + kube-apiserver + kube-controller-manager."""

from __future__ import annotations

import json
import os

import pytest

from airflow_provider_volcano_argo.sandbox.assembly import CONTROL_PLANE_BUILDS
from airflow_provider_volcano_argo.sandbox.controlplane import binaries
from airflow_provider_volcano_argo.sandbox.controlplane.processes import ControlPlane
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, KubeApi
from tests.integration.helpers import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def two_planes():
    found = binaries.install(CONTROL_PLANE_BUILDS, progress=lambda _: None)
    planes = [ControlPlane(found), ControlPlane(found)]
    try:
        for plane in planes:
            plane.start()
        yield planes
    finally:
        for plane in planes:
            plane.stop()


def test_two_control_planes_run_side_by_side(two_planes):
    first, second = two_planes
    assert first.port != second.port and first.etcd_port != second.etcd_port
    apis = [KubeApi.from_kubeconfig(str(p.admin_kubeconfig)) for p in two_planes]
    apis[0].create("configmaps", {"metadata": {"name": "only-here"}, "data": {"a": "1"}}, "default")
    assert apis[0].get_or_none("configmaps", "only-here", "default") is not None
    assert apis[1].get_or_none("configmaps", "only-here", "default") is None
    assert apis[0].request("GET", "/version")["gitVersion"] == "v1.35.3"


def test_rbac_refuses_an_unbound_service_account(two_planes):
    plane = two_planes[0]
    admin = KubeApi.from_kubeconfig(str(plane.admin_kubeconfig))
    admin.create("serviceaccounts", {"metadata": {"name": "nobody"}}, "default")
    nobody = admin.impersonating("system:serviceaccount:default:nobody", ["system:serviceaccounts"])
    with pytest.raises(ApiException) as err:
        nobody.list("pods", "default")
    assert err.value.status == 403
    message = json.loads(err.value.body)["message"]
    assert message.startswith('pods is forbidden: User "system:serviceaccount:default:nobody" cannot list resource')


def test_service_account_tokens_are_issued(two_planes):
    # Since Kubernetes 1.24 a token Secret is filled only when one names the account (tokens_controller.go)
    admin = KubeApi.from_kubeconfig(str(two_planes[0].admin_kubeconfig))
    admin.create("serviceaccounts", {"metadata": {"name": "with-token"}}, "default")
    secret = {
        "metadata": {"name": "with-token", "annotations": {"kubernetes.io/service-account.name": "with-token"}},
        "type": "kubernetes.io/service-account-token",
    }
    admin.create("secrets", secret, "default")
    assert wait_for(lambda: (admin.get("secrets", "with-token", "default").get("data") or {}).get("token"))


def test_garbage_collector_deletes_dependents(two_planes):
    admin = KubeApi.from_kubeconfig(str(two_planes[1].admin_kubeconfig))
    owner = admin.create("configmaps", {"metadata": {"name": "owner"}}, "default")
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    admin.create("configmaps", {"metadata": {"name": "dependent", "ownerReferences": [ref]}}, "default")
    admin.delete("configmaps", "owner", "default")
    wait_for(lambda: admin.get_or_none("configmaps", "dependent", "default") is None, timeout=60)


def test_api_server_restart_keeps_data_and_port(two_planes):
    plane = two_planes[1]
    admin = KubeApi.from_kubeconfig(str(plane.admin_kubeconfig))
    admin.create("configmaps", {"metadata": {"name": "survives"}, "data": {"k": "v"}}, "default")
    port = plane.port
    plane.restart_apiserver(downtime=0.5)
    assert plane.port == port
    assert admin.get("configmaps", "survives", "default")["data"] == {"k": "v"}


def test_stop_leaves_no_process_and_no_files():
    plane = ControlPlane(binaries.install(CONTROL_PLANE_BUILDS, progress=lambda _: None))
    plane.start()
    pids = [p.proc.pid for p in (plane._etcd, plane._apiserver, plane._kcm, plane._scheduler)]
    plane.stop()
    assert plane.processes_alive() == {
        "etcd": False,
        "kube-apiserver": False,
        "kube-controller-manager": False,
        "kube-scheduler": False,
    }
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not plane.dir.exists()
