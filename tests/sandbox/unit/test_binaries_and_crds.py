"""Pure parts of the sandbox ground: where binaries come from, and adapting upstream CRDs to an old API server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airflow_provider_volcano_argo.sandbox.controlplane import binaries, crds


def _fake_binaries(folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = folder / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)


def test_kubebuilder_assets_are_preferred(tmp_path, monkeypatch):
    assets = tmp_path / "assets"
    _fake_binaries(assets, ["etcd", "kube-apiserver", "kube-controller-manager"])
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(assets))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    found = binaries.find()
    assert found == binaries.ControlPlaneBinaries(
        assets / "etcd", assets / "kube-apiserver", assets / "kube-controller-manager"
    )


def test_cache_fills_what_envtest_assets_lack(tmp_path, monkeypatch):
    # setup-envtest ships etcd and kube-apiserver but no kube-controller-manager
    assets = tmp_path / "assets"
    _fake_binaries(assets, ["etcd", "kube-apiserver"])
    _fake_binaries(tmp_path / "cache" / "volcano-argo-sandbox" / "bin", ["kube-controller-manager"])
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(assets))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    found = binaries.find()
    assert found is not None
    assert found.kube_apiserver == assets / "kube-apiserver"
    assert (
        found.kube_controller_manager == tmp_path / "cache" / "volcano-argo-sandbox" / "bin" / "kube-controller-manager"
    )


def test_not_debian_without_assets_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    os_release = tmp_path / "os-release"
    os_release.write_text('ID=fedora\nVERSION_CODENAME=""\n')
    monkeypatch.setattr(binaries, "OS_RELEASE", os_release)
    with pytest.raises(binaries.BinariesUnavailable) as err:
        binaries.install(progress=lambda _: None)
    message = str(err.value)
    assert "not Debian" in message and "KUBEBUILDER_ASSETS" in message and "setup-envtest" in message


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert binaries.cache_dir() == tmp_path / "volcano-argo-sandbox"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert binaries.cache_dir() == Path(os.path.expanduser("~")) / ".cache" / "volcano-argo-sandbox"


def test_sandbox_crds_cover_argo_and_volcano():
    names = {c["metadata"]["name"] for c in crds.sandbox_crds()}
    assert names >= {
        "workflows.argoproj.io",
        "workflowtemplates.argoproj.io",
        "workflowtaskresults.argoproj.io",
        "clusterworkflowtemplates.argoproj.io",
        "cronworkflows.argoproj.io",
        "jobs.batch.volcano.sh",
        "podgroups.scheduling.volcano.sh",
        "queues.scheduling.volcano.sh",
        "commands.bus.volcano.sh",
    }
    by_name = {c["metadata"]["name"]: c for c in crds.sandbox_crds()}
    # status subresources exactly where upstream has them
    assert by_name["jobs.batch.volcano.sh"]["spec"]["versions"][0]["subresources"] == {"status": {}}
    assert "subresources" not in by_name["podgroups.scheduling.volcano.sh"]["spec"]["versions"][0]
    assert "subresources" not in by_name["workflows.argoproj.io"]["spec"]["versions"][0]


def test_upstream_job_crd_adapted_for_old_server(upstream_dir):
    job = next(c for c in crds.upstream_crds(upstream_dir) if c["metadata"]["name"] == "jobs.batch.volcano.sh")
    adapted, defaults, keys = crds.adapt_for_server(job)
    assert (defaults, keys) == (33, 1)
    assert '"default": ""' not in str(adapted).replace("'", '"')
    again, more_defaults, more_keys = crds.adapt_for_server(adapted)
    assert (more_defaults, more_keys) == (0, 0) and again == adapted
