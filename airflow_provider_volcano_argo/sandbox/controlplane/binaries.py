"""Find or build the upstream binaries a sandbox runs, from their released Go modules.

Each folder of ``sandbox/builds/`` is a wrapper module that requires one upstream module at its release and names
the commands to build as ``tool`` lines (``go.mod``/``go.sum`` are all the project keeps of upstream). A build runs
``go build -trimpath`` on those commands into the cache ``${XDG_CACHE_HOME:-~/.cache}/volcano-argo-sandbox/bin/``,
one folder per wrapper and hash of its ``go.mod``/``go.sum``, so a new pin builds anew and an old one stays cached.

Order of preference for each binary:

1. ``$VOLCANO_ARGO_SANDBOX_BIN/<name>`` (binaries built elsewhere, taken as they are);
2. ``$KUBEBUILDER_ASSETS/<name>`` for etcd and kube-apiserver (the envtest convention);
3. the cache, built on first use.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

#: a wrapper's list of the upstream tree's symlinks (module zips keep none: cmd/go's modzip skips them)
SYMLINKS_FILE = "symlinks"
BUILDS_DIR = Path(__file__).resolve().parent.parent / "builds"
GO_FALLBACK = Path("/usr/local/go/bin/go")
#: binaries taken from $KUBEBUILDER_ASSETS when it has them (envtest ships these two, and kubectl)
ENVTEST_NAMES = ("etcd", "kube-apiserver")
#: the name each upstream Makefile gives a command whose package folder is named otherwise
_BINARY_NAMES = {
    "volcano.sh/volcano/cmd/scheduler": "vc-scheduler",
    "volcano.sh/volcano/cmd/controller-manager": "vc-controller-manager",
    "volcano.sh/volcano/cmd/webhook-manager": "vc-webhook-manager",
    "go.etcd.io/etcd/server/v3": "etcd",
}
#: the version variables each upstream's release build stamps (hack/lib/version.sh, Makefiles)
_VERSION_FLAGS = {
    "k8s.io/kubernetes": (
        "k8s.io/component-base/version.gitVersion={v}",
        "k8s.io/component-base/version.gitMajor={major}",
        "k8s.io/component-base/version.gitMinor={minor}",
        "k8s.io/component-base/version.gitTreeState=clean",
        "k8s.io/client-go/pkg/version.gitVersion={v}",
        "k8s.io/client-go/pkg/version.gitMajor={major}",
        "k8s.io/client-go/pkg/version.gitMinor={minor}",
    ),
    "volcano.sh/volcano": ("volcano.sh/volcano/pkg/version.Version={v}",),
    "github.com/argoproj/argo-workflows/v3": ("github.com/argoproj/argo-workflows/v3.version={v}",),
    "github.com/argoproj/argo-workflows/v4": ("github.com/argoproj/argo-workflows/v4.version={v}",),
}

#: the components of each pass of the suite: the newest releases, and the oldest the README claims
PROFILES = {
    "newest": ("kubernetes", "etcd", "argo-v4.0.5", "volcano-v1.14.1"),
    "oldest": ("kubernetes", "etcd", "argo-v3.7.9", "volcano-v1.10.0"),
}

Progress = Callable[[str], None]


class BinariesUnavailable(RuntimeError):
    """Raised when a binary can neither be found nor built; the message names the missing piece and the fix."""


@dataclass(frozen=True)
class Build:
    """One wrapper module: the upstream module at its release and the commands built from it."""

    folder: Path
    module: str
    version: str
    commands: dict[str, str]  # binary name -> package

    @property
    def name(self) -> str:
        return self.folder.name

    def ldflags(self) -> str:
        major, minor = self.version.lstrip("v").split(".")[:2]
        stamps = _VERSION_FLAGS.get(self.module, ())
        return " ".join(["-s", "-w", *(f"-X {s.format(v=self.version, major=major, minor=minor)}" for s in stamps)])

    def cache_key(self) -> str:
        digest = hashlib.sha256()
        for file in ("go.mod", "go.sum", SYMLINKS_FILE):
            if (self.folder / file).is_file():
                digest.update((self.folder / file).read_bytes())
        return f"{self.name}-{digest.hexdigest()[:12]}"

    def symlinks(self) -> dict[str, str]:
        """Return the module's symlinks its zip dropped (path -> target, module-relative), from ``symlinks``."""
        file = self.folder / SYMLINKS_FILE
        return parse_symlinks(file.read_text()) if file.is_file() else {}


def parse_symlinks(text: str) -> dict[str, str]:
    """Return the ``PATH -> TARGET`` lines as path -> target (module-relative path, target as the link reads)."""
    links = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            path, target = (part.strip() for part in line.split("->"))
            links[path] = target
    return links


def parse_go_mod(text: str) -> tuple[str, str, list[str]]:
    """Return (module, version, tool packages) of a wrapper's ``go.mod``.

    The module is the requirement the ``tool`` packages belong to (``go mod tidy`` marks every requirement of a
    module with no code of its own ``// indirect``, so that mark cannot tell it).
    """
    text = re.sub(r"//.*", "", text)
    blocks = {
        kind: "\n".join(re.findall(rf"^{kind}\s*\((.*?)^\)", text, re.MULTILINE | re.DOTALL))
        for kind in ("require", "tool")
    }
    requires = re.findall(r"^require\s+([^\s(]\S*\s+\S+)\s*$", text, re.MULTILINE) + blocks["require"].splitlines()
    required = dict(line.split() for line in requires if line.strip())
    tools = re.findall(r"^tool\s+([^\s(]\S*)\s*$", text, re.MULTILINE) + blocks["tool"].split()
    owners = {m for m in required if tools and all(t == m or t.startswith(m + "/") for t in tools)}
    if not owners:
        raise ValueError(f"no requirement owns every tool package {tools}")
    module = max(owners, key=len)
    return module, required[module], tools


def binary_name(package: str) -> str:
    """Return the file name upstream's own build gives the command built from ``package``."""
    return _BINARY_NAMES.get(package, package.rsplit("/", 1)[-1])


def go_output_name(package: str) -> str:
    """Return the file name ``go build -o DIR/`` gives ``package``: its last element, or the one before a ``/vN``."""
    parts = package.split("/")
    return parts[-2] if len(parts) > 1 and re.fullmatch(r"v[0-9]+", parts[-1]) else parts[-1]


def load_build(folder: Path) -> Build:
    """Read the wrapper module in ``folder``."""
    module, version, tools = parse_go_mod((folder / "go.mod").read_text())
    return Build(folder, module, version, {binary_name(p): p for p in tools})


def builds(names: Iterable[str] | None = None) -> list[Build]:
    """Return the wrapper modules named (all of them by default), in the order given."""
    if names is None:  # the profiles' order: Kubernetes first, whose compiled packages Volcano's build reuses
        order = list(dict.fromkeys(n for profile in PROFILES.values() for n in profile))
        names = sorted(
            (p.name for p in BUILDS_DIR.iterdir() if p.is_dir()),
            key=lambda n: (order.index(n) if n in order else len(order), n),
        )
    folders = [BUILDS_DIR / n for n in names]
    missing = [f.name for f in folders if not (f / "go.mod").is_file()]
    if missing:
        raise BinariesUnavailable(f"no wrapper module {', '.join(missing)} in {BUILDS_DIR}")
    return [load_build(f) for f in folders]


def cache_dir() -> Path:
    """Where built binaries are kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "volcano-argo-sandbox"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def prebuilt(name: str) -> Path | None:
    """Return ``name`` from ``$VOLCANO_ARGO_SANDBOX_BIN``, or from ``$KUBEBUILDER_ASSETS`` for envtest's binaries."""
    folders = [os.environ.get("VOLCANO_ARGO_SANDBOX_BIN")]
    if name in ENVTEST_NAMES:
        folders.append(os.environ.get("KUBEBUILDER_ASSETS"))
    for folder in folders:
        if folder and _executable(Path(folder) / name):
            return Path(folder) / name
    return None


def cached(build: Build, name: str) -> Path:
    """Return where the cache keeps binary ``name`` of ``build``."""
    return cache_dir() / "bin" / build.cache_key() / name


def find(build: Build, name: str) -> Path | None:
    """Return where binary ``name`` of ``build`` is, without building; None when it must be built."""
    found = prebuilt(name)
    if found:
        return found
    path = cached(build, name)
    return path if _executable(path) else None


def _go() -> str:
    found = shutil.which("go") or (str(GO_FALLBACK) if _executable(GO_FALLBACK) else None)
    if not found:
        raise BinariesUnavailable(
            "no Go toolchain: install Go 1.26 or newer (`go` on PATH or /usr/local/go), or point "
            "VOLCANO_ARGO_SANDBOX_BIN at a folder of prebuilt binaries"
        )
    return found


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build(target: Build, progress: Progress = _stderr) -> float:
    """Build the commands of ``target`` that are not found into the cache; return the seconds it took."""
    missing = {name: package for name, package in target.commands.items() if find(target, name) is None}
    if not missing:
        return 0.0
    started = time.monotonic()
    out = cached(target, "x").parent
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=out.parent))
    cmd = [_go(), "build", "-trimpath", "-ldflags", target.ldflags(), "-o", f"{staging}/", *missing.values()]
    progress(f"building {', '.join(missing)} from {target.module}@{target.version}")
    env = {**os.environ, "GOFLAGS": "-mod=readonly", "CGO_ENABLED": "0"}
    if target.symlinks():
        cmd[2:2] = [f"-modfile={_with_symlinks(target, staging, env)}"]
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, cwd=target.folder, stdout=log, stderr=subprocess.STDOUT, text=True, env=env)
        while True:
            try:
                proc.wait(timeout=30)
                break
            except subprocess.TimeoutExpired:
                progress(f"  ... {target.name} building for {time.monotonic() - started:.0f} s")
        if proc.returncode != 0:
            log.seek(0)
            tail = "\n".join(log.read().splitlines()[-30:])
            shutil.rmtree(staging, ignore_errors=True)
            raise BinariesUnavailable(f"building {target.name} failed (exit {proc.returncode}):\n{tail}")
    out.mkdir(exist_ok=True)
    for package in missing.values():
        os.replace(staging / go_output_name(package), out / binary_name(package))
    shutil.rmtree(staging, ignore_errors=True)
    seconds = time.monotonic() - started
    progress(f"built {target.name} in {seconds:.0f} s into {out}")
    return seconds


def module_dir(target: Build, env: dict[str, str] | None = None) -> Path:
    """Return where the Go module cache holds ``target``'s upstream module (downloaded first if need be).

    Upstream's install manifests come from there too, so a clone without a copy of them has them after a build.
    """
    downloaded = subprocess.run(
        [_go(), "mod", "download", "-json", f"{target.module}@{target.version}"],
        cwd=target.folder,
        env=env or {**os.environ, "GOFLAGS": "-mod=readonly"},
        capture_output=True,
        text=True,
    )
    if downloaded.returncode != 0:
        raise BinariesUnavailable(f"downloading {target.module}@{target.version} failed: {downloaded.stderr.strip()}")
    return Path(json.loads(downloaded.stdout)["Dir"])


def _with_symlinks(target: Build, staging: Path, env: dict[str, str]) -> Path:
    """Copy ``target``'s module with its dropped symlinks put back; return a go.mod that builds from the copy.

    ``go build -overlay`` may not touch the module cache, so the copy (kept in the cache, per version) stands in
    for the module through a ``replace`` in a go.mod of the build's own (``-modfile``), beside the wrapper's go.sum.
    """
    source = cache_dir() / "src" / f"{target.module.replace('/', '+')}@{target.version}"
    if not source.is_dir():
        partial = Path(tempfile.mkdtemp(prefix=".copy-", dir=staging))
        shutil.copytree(module_dir(target, env), partial / "m", symlinks=True)
        for path, link in target.symlinks().items():
            (partial / "m" / path).symlink_to(link)
        source.parent.mkdir(parents=True, exist_ok=True)
        os.replace(partial / "m", source)
    modfile = staging / "go.mod"
    text = (target.folder / "go.mod").read_text()
    modfile.write_text(f"{text}\nreplace {target.module} => {source}\n")
    shutil.copy(target.folder / "go.sum", staging / "go.sum")
    return modfile


def install(names: Iterable[str] | None = None, progress: Progress = _stderr, parallel: int = 2) -> dict[str, Path]:
    """Find or build every binary of the wrapper modules named; return binary name -> path.

    Builds run ``parallel`` at a time (each ``go build`` uses every core too; two keep both busy through the link
    steps, and the Kubernetes build comes first, since Volcano's reuses its compiled packages).
    """
    targets = builds(names)
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        for future in [pool.submit(build, t, progress) for t in targets]:
            future.result()
    return paths(targets)


def paths(targets: Iterable[Build]) -> dict[str, Path]:
    """Return binary name -> path of every command of ``targets`` (prebuilt first); raise if one is missing."""
    found: dict[str, Path] = {}
    for target in targets:
        for name in target.commands:
            path = find(target, name)
            if path is None:
                raise BinariesUnavailable(f"{name} is not built: run `volcano-argo-sandbox install`")
            found[name] = path
    return found


def versions(names: Iterable[str] | None = None) -> list[str]:
    """Return one line per binary: ``NAME MODULE@VERSION PATH`` (the path, or 'not built')."""
    lines = []
    for target in builds(names):
        for name in target.commands:
            path = find(target, name)
            lines.append(f"{name} {target.module}@{target.version} {path or 'not built'}")
    return lines
