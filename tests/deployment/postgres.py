"""A throw-away PostgreSQL server for the deployment tests: Debian's ``postgresql`` binaries, a cluster in a
temporary folder, loopback only, trust authentication, gone when the session ends.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def postgres_bin() -> Path:
    """Return the newest ``/usr/lib/postgresql/<version>/bin`` holding ``postgres`` (Debian's layout)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise RuntimeError("PostgreSQL server not installed: apt-get install postgresql (scripts/setup-env does)")
    return Path(found[-1]).parent


def free_port() -> int:
    """Return a TCP port free on loopback now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def postgres_server(user: str = "airflow", database: str = "airflow") -> Iterator[str]:
    """Run a PostgreSQL server for as long as the context lasts; yield its SQLAlchemy URL (psycopg2)."""
    binaries = postgres_bin()
    root = Path(tempfile.mkdtemp(prefix="volcano-argo-pg-"))
    data = root / "data"
    # PostgreSQL refuses to run as root: as root, the cluster belongs to Debian's ``postgres`` user
    as_owner: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        as_owner = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run(
        [*as_owner, str(binaries / "initdb"), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    server = subprocess.Popen(
        [
            *as_owner,
            str(binaries / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-k",
            str(root),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "max_connections=200",
            "-c",
            "fsync=off",
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=open(root / "postgres.log", "wb"),
    )
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(
            [str(binaries / "pg_isready"), "-h", "127.0.0.1", "-p", str(port)], capture_output=True
        ).returncode:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL did not start: {(root / 'postgres.log').read_text()[-2000:]}")
            time.sleep(0.2)
        subprocess.run(
            [str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", user, database],
            check=True,
            capture_output=True,
        )
        yield f"postgresql+psycopg2://{user}@127.0.0.1:{port}/{database}"
    finally:
        server.terminate()  # SIGTERM: PostgreSQL's "smart" shutdown
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(root, ignore_errors=True)
