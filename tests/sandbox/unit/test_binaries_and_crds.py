"""Pure parts of the sandbox ground: which upstream binaries are pinned and where they come from, and the CRDs."""

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


def test_each_wrapper_names_its_upstream_module_release_and_commands():
    found = {b.name: (b.module, b.version, sorted(b.commands)) for b in binaries.builds()}
    assert found["kubernetes"] == (
        "k8s.io/kubernetes",
        "v1.35.3",
        ["kube-apiserver", "kube-controller-manager", "kube-scheduler"],
    )
    assert found["etcd"] == ("go.etcd.io/etcd/server/v3", "v3.6.16", ["etcd"])
    assert found["volcano-v1.14.1"] == (
        "volcano.sh/volcano",
        "v1.14.1",
        ["vc-controller-manager", "vc-scheduler", "vc-webhook-manager"],
    )
    assert found["argo-v4.0.5"] == (
        "github.com/argoproj/argo-workflows/v4",
        "v4.0.5",
        ["argoexec", "workflow-controller"],
    )
    assert binaries.load_build(binaries.BUILDS_DIR / "argo-v4.0.5").symlinks() == {
        "workflow/executor/osspecific/signal_linux.go": "signal_darwin.go"
    }
    every_profile = {name for profile in binaries.PROFILES.values() for name in profile}
    assert every_profile == set(found)


def test_a_wrapper_go_mod_as_go_mod_tidy_writes_it_is_parsed():
    text = """module volcano-argo-sandbox/x

go 1.25.0

require (
\tcel.dev/expr v0.24.0 // indirect
\tvolcano.sh/apis v0.0.0 // indirect
\tvolcano.sh/volcano v1.14.1 // indirect
)

tool (
\tvolcano.sh/volcano/cmd/controller-manager
\tvolcano.sh/volcano/cmd/scheduler
)

replace volcano.sh/apis => volcano.sh/apis v1.14.0
"""
    assert binaries.parse_go_mod(text) == (
        "volcano.sh/volcano",
        "v1.14.1",
        ["volcano.sh/volcano/cmd/controller-manager", "volcano.sh/volcano/cmd/scheduler"],
    )
    single = "module m\n\nrequire go.etcd.io/etcd/server/v3 v3.6.16\n\ntool go.etcd.io/etcd/server/v3\n"
    assert binaries.parse_go_mod(single) == ("go.etcd.io/etcd/server/v3", "v3.6.16", ["go.etcd.io/etcd/server/v3"])
    with pytest.raises(ValueError, match="no requirement owns"):
        binaries.parse_go_mod("module m\n\nrequire a.io/x v1.0.0\n\ntool b.io/y/cmd/z\n")


def test_binary_names_follow_go_build_and_upstream_makefiles():
    assert binaries.go_output_name("go.etcd.io/etcd/server/v3") == "server"
    assert binaries.go_output_name("k8s.io/kubernetes/cmd/kube-apiserver") == "kube-apiserver"
    assert binaries.binary_name("go.etcd.io/etcd/server/v3") == "etcd"
    assert binaries.binary_name("volcano.sh/volcano/cmd/scheduler") == "vc-scheduler"
    assert binaries.binary_name("github.com/argoproj/argo-workflows/v4/cmd/workflow-controller") == (
        "workflow-controller"
    )


def test_kubernetes_is_stamped_with_its_release_as_its_own_build_does():
    kubernetes = binaries.builds(["kubernetes"])[0]
    flags = kubernetes.ldflags()
    assert "-X k8s.io/component-base/version.gitVersion=v1.35.3" in flags
    assert "-X k8s.io/component-base/version.gitMinor=35" in flags


def test_prebuilt_folder_then_envtest_assets_then_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("VOLCANO_ARGO_SANDBOX_BIN", raising=False)
    kubernetes = binaries.builds(["kubernetes"])[0]
    cached = binaries.cached(kubernetes, "kube-apiserver")
    _fake_binaries(cached.parent, ["kube-apiserver", "kube-scheduler"])
    assets, own = tmp_path / "assets", tmp_path / "own"
    _fake_binaries(assets, ["kube-apiserver", "kube-scheduler"])
    _fake_binaries(own, ["kube-apiserver"])
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(assets))
    assert binaries.find(kubernetes, "kube-apiserver") == assets / "kube-apiserver"
    # envtest's folder serves only what envtest ships
    assert binaries.find(kubernetes, "kube-scheduler") == cached.parent / "kube-scheduler"
    assert binaries.find(kubernetes, "kube-controller-manager") is None
    monkeypatch.setenv("VOLCANO_ARGO_SANDBOX_BIN", str(own))
    assert binaries.find(kubernetes, "kube-apiserver") == own / "kube-apiserver"


def test_a_new_pin_is_cached_apart_from_the_old_one(tmp_path):
    folder = tmp_path / "etcd"
    folder.mkdir()
    (folder / "go.sum").write_text("")
    (folder / "go.mod").write_text(
        "module m\n\nrequire go.etcd.io/etcd/server/v3 v3.6.16\n\ntool go.etcd.io/etcd/server/v3\n"
    )
    old = binaries.load_build(folder).cache_key()
    (folder / "go.mod").write_text(
        "module m\n\nrequire go.etcd.io/etcd/server/v3 v3.6.17\n\ntool go.etcd.io/etcd/server/v3\n"
    )
    assert binaries.load_build(folder).cache_key() != old


def test_versions_name_module_release_and_path(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    own = tmp_path / "own"
    _fake_binaries(own, ["etcd"])
    monkeypatch.setenv("VOLCANO_ARGO_SANDBOX_BIN", str(own))
    assert binaries.versions(["etcd"]) == [f"etcd go.etcd.io/etcd/server/v3@v3.6.16 {own / 'etcd'}"]
    monkeypatch.delenv("VOLCANO_ARGO_SANDBOX_BIN")
    assert binaries.versions(["etcd"]) == ["etcd go.etcd.io/etcd/server/v3@v3.6.16 not built"]


def test_no_go_toolchain_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("VOLCANO_ARGO_SANDBOX_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(binaries, "GO_FALLBACK", tmp_path / "no-go")
    with pytest.raises(binaries.BinariesUnavailable) as err:
        binaries.install(["etcd"], progress=lambda _: None)
    assert "no Go toolchain" in str(err.value) and "VOLCANO_ARGO_SANDBOX_BIN" in str(err.value)


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


def test_symlinks_lines_keep_the_target_as_the_link_reads_and_skip_comments():
    text = "# a comment\nworkflow/x/signal_linux.go -> signal_darwin.go  # why\n\n"
    assert binaries.parse_symlinks(text) == {"workflow/x/signal_linux.go": "signal_darwin.go"}


def test_a_wrapper_with_symlinks_is_cached_apart_when_its_list_changes(tmp_path):
    folder = tmp_path / "argo-vX"
    folder.mkdir()
    (folder / "go.mod").write_text("module x\n\nrequire example.com/m v1.0.0\n\ntool example.com/m/cmd/a\n")
    (folder / "go.sum").write_text("")
    before = binaries.load_build(folder).cache_key()
    (folder / "symlinks").write_text("a.go -> b.go\n")
    assert binaries.load_build(folder).cache_key() != before
