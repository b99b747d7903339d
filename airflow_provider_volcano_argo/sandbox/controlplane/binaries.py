"""Find or build the control-plane binaries: etcd, kube-apiserver, kube-controller-manager.

Order of preference:

1. ``$KUBEBUILDER_ASSETS`` (the envtest convention; ``setup-envtest`` users get a current Kubernetes this way);
2. the cache ``${XDG_CACHE_HOME:-~/.cache}/volcano-argo-sandbox/``, filled by an earlier build;
3. a build from Debian's ``kubernetes`` source package (1.20.2) with Debian's ``golang-go``; ``etcd`` comes
   from Debian's ``etcd-server``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager")
DEBIAN_BUILD_PACKAGES = ("golang-go", "rsync", "dpkg-dev", "etcd-server", "golang-github-modern-go-reflect2-dev")
# Kubernetes 1.20 vendors modern-go/reflect2 1.0.1, whose map iteration segfaults under Go >= 1.18
# ("fatal error: fault" in mapiternext on the first custom resource); 1.0.2 fixes it and is API-compatible.
REFLECT2_FROM_DEBIAN = Path("/usr/share/gocode/src/github.com/modern-go/reflect2")
SOURCE_PACKAGE = "kubernetes"
OS_RELEASE = Path("/etc/os-release")
SOURCES_ENTRY = Path("/etc/apt/sources.list.d/volcano-argo-sandbox-src.sources")

Progress = Callable[[str], None]


class BinariesUnavailable(RuntimeError):
    """Raised when the binaries can neither be found nor built; the message names the missing piece and the fix."""


@dataclass(frozen=True)
class ControlPlaneBinaries:
    """Paths of the three executables a sandbox runs."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path


def cache_dir() -> Path:
    """Where built binaries are kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "volcano-argo-sandbox"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _from_assets(name: str) -> Path | None:
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and _executable(Path(assets) / name):
        return Path(assets) / name
    return None


def _etcd() -> Path | None:
    found = _from_assets("etcd")
    if found:
        return found
    on_path = shutil.which("etcd")
    return Path(on_path) if on_path else None


def find() -> ControlPlaneBinaries | None:
    """Return the binaries if all three are available without building, else None."""
    etcd = _etcd()
    kube = {name: _from_assets(name) or _cached(name) for name in KUBE_COMMANDS}
    if etcd is None or None in kube.values():
        return None
    return ControlPlaneBinaries(etcd, kube["kube-apiserver"], kube["kube-controller-manager"])  # type: ignore[arg-type]


def _cached(name: str) -> Path | None:
    path = cache_dir() / "bin" / name
    return path if _executable(path) else None


def install(progress: Progress = _stderr) -> ControlPlaneBinaries:
    """Find the binaries, building what is missing; print where they are."""
    found = find()
    if found is None:
        missing = [name for name in KUBE_COMMANDS if not (_from_assets(name) or _cached(name))]
        if missing:
            _build(missing, progress)
        if _etcd() is None:
            _apt_install(["etcd-server"], progress)
        found = find()
    if found is None:
        raise BinariesUnavailable(
            "etcd was not found after installing etcd-server; put etcd on PATH or in $KUBEBUILDER_ASSETS"
        )
    for path in (found.etcd, found.kube_apiserver, found.kube_controller_manager):
        progress(f"using {path}")
    return found


def _debian_suite() -> str:
    try:
        fields = dict(line.split("=", 1) for line in OS_RELEASE.read_text().splitlines() if "=" in line)
    except OSError:
        fields = {}
    if fields.get("ID") != "debian" and "debian" not in fields.get("ID_LIKE", ""):
        raise BinariesUnavailable(
            "kube-apiserver and kube-controller-manager are not in $KUBEBUILDER_ASSETS and this machine is not Debian, "
            "so they cannot be built from Debian's kubernetes source package. Fix: install envtest binaries "
            "(`setup-envtest use -p path`) and export KUBEBUILDER_ASSETS to that folder."
        )
    return fields.get("VERSION_CODENAME", "").strip('"') or "stable"


def _run(cmd: list[str], progress: Progress, **kwargs) -> None:
    """Run a build step, printing a heartbeat every 20 s and the output's tail if it fails."""
    progress("$ " + " ".join(cmd))
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, **kwargs)
        while True:
            try:
                proc.wait(timeout=20)
                break
            except subprocess.TimeoutExpired:
                progress(f"  ... {cmd[0]} {cmd[1]} running for {time.monotonic() - started:.0f} s")
        if proc.returncode != 0:
            log.seek(0)
            tail = "\n".join(log.read().splitlines()[-30:])
            raise BinariesUnavailable(f"`{' '.join(cmd)}` failed with exit code {proc.returncode}:\n{tail}")


def _apt_install(packages: list[str], progress: Progress) -> None:
    missing = [p for p in packages if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    if not missing:
        return
    if os.geteuid() != 0:
        raise BinariesUnavailable(
            f"missing Debian packages {', '.join(missing)}; fix: sudo apt-get install -y {' '.join(missing)}"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-qq"], progress, env=env)
    _run(["apt-get", "install", "-y", "-qq", *missing], progress, env=env)


def _ensure_deb_src(suite: str, progress: Progress) -> None:
    probe = subprocess.run(["apt-cache", "showsrc", SOURCE_PACKAGE], capture_output=True, text=True)
    if probe.returncode == 0 and "Package:" in probe.stdout:
        return
    if os.geteuid() != 0:
        raise BinariesUnavailable(
            "apt has no deb-src entry for the kubernetes source package; fix (as root): add a 'Types: deb-src' "
            f"entry for suite {suite} under /etc/apt/sources.list.d/ and run apt-get update"
        )
    SOURCES_ENTRY.write_text(
        f"Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: {suite}\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )
    progress(f"added {SOURCES_ENTRY}")
    _run(["apt-get", "update", "-qq"], progress)


def _version_ldflags(version: str) -> str:
    """Stamp the version as Kubernetes' release build does (``hack/lib/version.sh``), so /version reports it."""
    major, minor = version.split(".")[:2]
    flags = []
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        vendored = f"k8s.io/kubernetes/vendor/{package}"  # GOPATH mode sees vendored packages under this path
        flags += [
            f"-X {vendored}.gitVersion=v{version}",
            f"-X {vendored}.gitMajor={major}",
            f"-X {vendored}.gitMinor={minor}",
            f"-X {vendored}.gitTreeState=clean",
        ]
    return " ".join(flags)


def _build(commands: list[str], progress: Progress) -> None:
    suite = _debian_suite()
    _apt_install(list(DEBIAN_BUILD_PACKAGES), progress)
    _ensure_deb_src(suite, progress)
    work = cache_dir() / "build"
    shutil.rmtree(work, ignore_errors=True)
    (work / "src").mkdir(parents=True)
    started = time.monotonic()
    progress(f"building {', '.join(commands)} from Debian's {SOURCE_PACKAGE} source package (takes about 6 minutes)")
    _run(["apt-get", "source", "-qq", SOURCE_PACKAGE], progress, cwd=work / "src")
    unpacked = next(p for p in (work / "src").iterdir() if p.is_dir() and p.name.startswith(SOURCE_PACKAGE))
    # Debian names the upstream 1.20.2 tree "1.20.5+really1.20.2" (a version bump it had to undo)
    version = unpacked.name.removeprefix(f"{SOURCE_PACKAGE}-").split("really")[-1]
    gopath = work / "gopath"
    tree = gopath / "src" / "k8s.io" / "kubernetes"
    tree.parent.mkdir(parents=True)
    unpacked.rename(tree)
    env = {
        **os.environ,
        "GOPATH": str(gopath),
        "GO111MODULE": "off",
        "GOFLAGS": "",
        "GOCACHE": str(cache_dir() / "gocache"),
    }
    vendored = tree / "vendor" / "github.com" / "modern-go" / "reflect2"
    shutil.rmtree(vendored)
    shutil.copytree(REFLECT2_FROM_DEBIAN, vendored, ignore=shutil.ignore_patterns("*_test.go", "test*"))
    progress(f"replaced vendored modern-go/reflect2 with Debian's {REFLECT2_FROM_DEBIAN} (Go >= 1.18 fix)")
    progress("make generated_files (about 80 s)")
    _run(["make", "generated_files"], progress, cwd=tree, env=env)
    out = cache_dir() / "bin"
    out.mkdir(parents=True, exist_ok=True)
    for name in commands:
        progress(f"go build {name} ({time.monotonic() - started:.0f} s so far)")
        target = out / (name + ".tmp")
        ldflags = f"-s -w {_version_ldflags(version)}"
        _run(["go", "build", "-ldflags", ldflags, "-o", str(target), f"./cmd/{name}"], progress, cwd=tree, env=env)
        target.rename(out / name)
    shutil.rmtree(work, ignore_errors=True)
    progress(f"built {', '.join(commands)} in {time.monotonic() - started:.0f} s into {out}")
