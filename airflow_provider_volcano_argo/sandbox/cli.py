"""``volcano-argo-sandbox``: install the binaries, run a sandbox in the foreground, or run a command against one."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from airflow_provider_volcano_argo.sandbox.controlplane import binaries


def _options(args: argparse.Namespace):
    from airflow_provider_volcano_argo.sandbox.assembly import SandboxOptions

    upstream = Path(args.upstream_dir) if args.upstream_dir else None
    role = Path(args.airflow_role) if args.airflow_role else None
    return SandboxOptions(crds=args.crds, upstream_dir=upstream, airflow_role_file=role)


def _install(args: argparse.Namespace) -> int:
    names = binaries.PROFILES[args.profile] if args.profile else None
    try:
        found = binaries.install(names, progress=lambda m: print(m, flush=True))
    except binaries.BinariesUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{len(found)} binaries ready (cache: {binaries.cache_dir()})")
    return 0


def _versions(args: argparse.Namespace) -> int:
    names = binaries.PROFILES[args.profile] if args.profile else None
    print("\n".join(binaries.versions(names)))
    return 0


def _up(args: argparse.Namespace) -> int:
    from airflow_provider_volcano_argo.sandbox.assembly import Sandbox

    out = Path(args.kubeconfig_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with Sandbox(_options(args)) as sandbox:
        for name, source in (("admin", sandbox.admin_kubeconfig), ("airflow", sandbox.airflow_kubeconfig)):
            shutil.copy(source, out / f"{name}.kubeconfig")
        print(f"sandbox up at {sandbox.server}")
        print(f"  admin kubeconfig:   {out / 'admin.kubeconfig'}")
        print(f"  airflow kubeconfig: {out / 'airflow.kubeconfig'} (least privilege)")
        for key, value in sandbox.environment().items():
            print(f"export {key}='{value}'")
        print("Ctrl-C stops it.", flush=True)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


def _run(args: argparse.Namespace) -> int:
    from airflow_provider_volcano_argo.sandbox.assembly import Sandbox

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print(
            "error: nothing to run; usage: volcano-argo-sandbox run [--admin] [--apply FILE]... -- CMD...",
            file=sys.stderr,
        )
        return 2
    with Sandbox(_options(args)) as sandbox:
        for path in args.apply:
            sandbox.apply_file(path)
            print(f"applied {path}", file=sys.stderr, flush=True)
        env = {**os.environ, **sandbox.environment(admin=args.admin)}
        return subprocess.call(command, env=env)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = argparse.ArgumentParser(prog="volcano-argo-sandbox", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the sandbox does")
    sub = parser.add_subparsers(dest="action", required=True)
    for name, helptext in (
        ("install", "find or build the upstream binaries (all of them, or one profile's)"),
        ("versions", "print NAME MODULE@VERSION PATH for each upstream binary"),
    ):
        command = sub.add_parser(name, help=helptext)
        command.add_argument("--profile", choices=sorted(binaries.PROFILES), help="only this pass's components")
    for name, helptext in (("up", "run a sandbox in the foreground"), ("run", "run CMD against a fresh sandbox")):
        command = sub.add_parser(name, help=helptext)
        command.add_argument("--crds", choices=("sandbox", "upstream"), default="sandbox")
        command.add_argument("--upstream-dir", help="upstream reference files (with --crds upstream)")
        command.add_argument("--airflow-role", help="Role manifest whose rules the Airflow identity gets")
        if name == "up":
            command.add_argument("--kubeconfig-dir", default=".sandbox", help="where to write the kubeconfigs")
        else:
            command.add_argument("--admin", action="store_true", help="run CMD as cluster admin")
            command.add_argument("--apply", action="append", default=[], metavar="FILE", help="apply as admin first")
            command.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(asctime)s %(message)s")
    return {"install": _install, "versions": _versions, "up": _up, "run": _run}[args.action](args)


if __name__ == "__main__":
    sys.exit(main())
