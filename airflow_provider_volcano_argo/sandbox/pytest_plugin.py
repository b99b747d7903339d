"""pytest plugin (entry point ``pytest11``): a session-wide ``sandbox`` and a fresh ``sandbox_namespace`` per test.

Options: ``--sandbox-components=emulated|upstream`` with ``--sandbox-profile=newest|oldest`` (the released Argo and
Volcano of a profile, ``$VOLCANO_ARGO_SANDBOX_COMPONENTS`` / ``$VOLCANO_ARGO_SANDBOX_PROFILE``),
``--sandbox-crds=sandbox|upstream`` and ``--sandbox-upstream-dir=DIR`` (a copy of the upstream files, e.g.
``shared/upstream``; also ``$VOLCANO_ARGO_UPSTREAM_DIR``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_volcano_argo.sandbox.controlplane.binaries import PROFILES


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("volcano-argo-sandbox")
    group.addoption(
        "--sandbox-crds",
        choices=("sandbox", "upstream"),
        default=os.environ.get("VOLCANO_ARGO_SANDBOX_CRDS", "sandbox"),
        help="load the sandbox's own CRDs or upstream's (default: sandbox)",
    )
    group.addoption(
        "--sandbox-components",
        choices=("emulated", "upstream"),
        default=os.environ.get("VOLCANO_ARGO_SANDBOX_COMPONENTS", "emulated"),
        help="the sandbox's own Argo and Volcano, or the released ones built from their modules",
    )
    group.addoption(
        "--sandbox-profile",
        choices=tuple(PROFILES),
        default=os.environ.get("VOLCANO_ARGO_SANDBOX_PROFILE", "newest"),
        help="which released versions --sandbox-components=upstream runs (default: newest)",
    )
    group.addoption(
        "--sandbox-airflow-role",
        default=os.environ.get("VOLCANO_ARGO_SANDBOX_AIRFLOW_ROLE"),
        help="Role manifest whose rules the sandbox's Airflow identity gets",
    )
    group.addoption(
        "--sandbox-upstream-dir",
        default=os.environ.get("VOLCANO_ARGO_UPSTREAM_DIR"),
        help="folder holding the upstream reference files (needed with --sandbox-crds=upstream)",
    )


def upstream_dir(config: pytest.Config) -> Path | None:
    """Return the upstream reference folder: the option, else ``shared/upstream`` beside the checkout, if present."""
    given = config.getoption("--sandbox-upstream-dir")
    if given:
        return Path(given)
    guess = Path(str(config.rootpath)).parent / "shared" / "upstream"
    return guess if guess.is_dir() else None


@pytest.fixture(scope="session")
def sandbox(request: pytest.FixtureRequest) -> Iterator:
    """One running Sandbox for the whole test session."""
    from airflow_provider_volcano_argo.sandbox import Sandbox, SandboxOptions

    crds = request.config.getoption("--sandbox-crds")
    upstream = upstream_dir(request.config)
    if crds == "upstream" and upstream is None:
        pytest.fail("--sandbox-crds=upstream needs --sandbox-upstream-dir (or $VOLCANO_ARGO_UPSTREAM_DIR)")
    # the environment is read again here: a conftest may set it after the options were parsed
    role = request.config.getoption("--sandbox-airflow-role") or os.environ.get("VOLCANO_ARGO_SANDBOX_AIRFLOW_ROLE")
    options = SandboxOptions(
        crds=crds,
        upstream_dir=upstream,
        airflow_role_file=Path(role) if role else None,
        components=request.config.getoption("--sandbox-components"),
        profile=request.config.getoption("--sandbox-profile"),
    )
    with Sandbox(options) as running:
        yield running


@pytest.fixture
def sandbox_namespace(sandbox) -> Iterator[str]:
    """Give one test a namespace of its own (the Airflow identity's Role bound; no service account ``argo``)."""
    name = sandbox.create_namespace(f"t-{uuid.uuid4().hex[:10]}")
    yield name
    sandbox.delete_namespace(name)
