"""The emulated kubelet's volume set-up (``pkg/volume/*``) and what a container reads through its mounts."""

from __future__ import annotations

import threading

from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext
from airflow_provider_volcano_argo.sandbox.kubelet.volumes import PodVolumes


def _pod(volumes: list[dict]) -> dict:
    return {"metadata": {"name": "p", "namespace": "team", "uid": "u"}, "spec": {"volumes": volumes}}


def _volumes(tmp_path, volumes, objects=None, token=lambda source: b"") -> PodVolumes:
    return PodVolumes(
        _pod(volumes),
        tmp_path / "pod",
        tmp_path / "node",
        lambda kind, name: (objects or {}).get((kind, name)),
        token,
    )


def test_the_kube_api_access_volume_holds_a_requested_token_the_ca_and_the_namespace(tmp_path):
    # what the ServiceAccount admission plugin adds to every pod (plugin/pkg/admission/serviceaccount/admission.go)
    requested = []
    volume = {
        "name": "kube-api-access-x",
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
            ]
        },
    }
    objects = {("configmaps", "kube-root-ca.crt"): {"ca.crt": b"CA"}}
    volumes = _volumes(tmp_path, [volume], objects, lambda source: requested.append(source) or b"tok")
    assert volumes.set_up() == []
    mounted = volumes.mounted["kube-api-access-x"]
    assert {p.name: p.read_bytes() for p in mounted.iterdir()} == {
        "token": b"tok",
        "ca.crt": b"CA",
        "namespace": b"team",
    }
    assert requested == [{"expirationSeconds": 3607, "path": "token"}]


def test_missing_objects_and_keys_fail_with_the_plugins_text_until_they_appear(tmp_path):
    objects: dict = {}
    volumes = _volumes(
        tmp_path,
        [
            {"name": "cfg", "configMap": {"name": "settings"}},
            {"name": "sec", "secret": {"secretName": "creds"}},
            {"name": "picked", "configMap": {"name": "present", "items": [{"key": "nope", "path": "x"}]}},
            {"name": "opt", "secret": {"secretName": "gone", "optional": True}},
        ],
        objects,
    )
    objects["configmaps", "present"] = {"a": b"1"}
    assert [str(e) for e in volumes.set_up()] == [
        'MountVolume.SetUp failed for volume "cfg" : configmap "settings" not found',
        'MountVolume.SetUp failed for volume "sec" : secret "creds" not found',
        'MountVolume.SetUp failed for volume "picked" : configmap references non-existent config key: nope',
    ]
    objects["configmaps", "settings"] = {"mode": b"fast"}
    objects["secrets", "creds"] = {"pw": b"s3"}
    objects["configmaps", "present"] = {"nope": b"found"}
    assert volumes.set_up() == []
    assert (volumes.mounted["picked"] / "x").read_bytes() == b"found"
    assert list(volumes.mounted["opt"].iterdir()) == []


def test_host_path_types(tmp_path):
    (tmp_path / "node" / "data").mkdir(parents=True)
    (tmp_path / "node" / "data" / "in.txt").write_text("input")
    volumes = _volumes(
        tmp_path,
        [
            {"name": "dir", "hostPath": {"path": "/data", "type": "Directory"}},
            {"name": "file", "hostPath": {"path": "/data/in.txt", "type": "File"}},
            {"name": "nodir", "hostPath": {"path": "/missing", "type": "Directory"}},
            {"name": "notfile", "hostPath": {"path": "/data", "type": "File"}},
            {"name": "made", "hostPath": {"path": "/scratch/run", "type": "DirectoryOrCreate"}},
        ],
    )
    assert [str(e) for e in volumes.set_up()] == [
        'MountVolume.SetUp failed for volume "nodir" : hostPath type check failed: /missing is not a directory',
        'MountVolume.SetUp failed for volume "notfile" : hostPath type check failed: /data is not a file',
    ]
    assert (tmp_path / "node" / "scratch" / "run").is_dir()


def test_a_container_reads_its_mounts_with_sub_path_and_items_and_shares_empty_dirs(tmp_path):
    objects = {("configmaps", "cfg"): {"hosts": b"w0\nw1", "other": b"o"}, ("secrets", "s"): {"token": b"t0k"}}
    volumes = _volumes(
        tmp_path,
        [
            {"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "hosts", "path": "mpi/hostfile"}]}},
            {"name": "whole", "configMap": {"name": "cfg"}},
            {"name": "sec", "secret": {"secretName": "s"}},
            {"name": "scratch", "emptyDir": {}},
        ],
        objects,
    )
    assert volumes.set_up() == []
    pod = volumes.pod
    writer = {
        "name": "w",
        "volumeMounts": [{"name": "scratch", "mountPath": "/out"}, {"name": "cfg", "mountPath": "/etc/c"}],
    }
    reader = {
        "name": "r",
        "volumeMounts": [
            {"name": "scratch", "mountPath": "/in", "readOnly": True},
            {"name": "cfg", "mountPath": "/etc/hostfile", "subPath": "mpi/hostfile"},
            {"name": "whole", "mountPath": "/etc/whole"},
            {"name": "sec", "mountPath": "/var/run/token", "subPath": "token"},
        ],
    }

    def context(container):
        ctx = ContainerContext(pod, container, lambda line: None, threading.Event(), api=None)
        ctx.volumes = volumes
        return ctx

    w, r = context(writer), context(reader)
    assert w.write_file("/out/result.txt", "42")
    assert not w.write_file("/etc/c/mpi/hostfile", "x")  # a ConfigMap volume is read-only
    assert not r.write_file("/in/other", "x")  # a readOnly mount
    assert not w.write_file("/tmp/elsewhere", "x")  # not a volume
    assert r.read_file("/in/result.txt") == "42"
    assert r.read_file("/etc/hostfile") == "w0\nw1"
    assert w.read_file("/etc/c/mpi/hostfile") == "w0\nw1"
    assert w.read_file("/etc/c/other") is None  # items: only the listed keys
    assert r.read_file("/etc/whole/other") == "o"
    assert r.read_file("/var/run/token") == "t0k"
    assert r.read_file("/etc/whole/nope") is None
