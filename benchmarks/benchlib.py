"""What every benchmark shares: an isolated Airflow home, a sandbox, Workflow submission, percentiles, the report.

The sandbox gets the shipped template and RBAC in a namespace of its own. Import this module before anything that
imports Airflow: it points ``AIRFLOW_HOME`` at a temporary folder.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import datetime
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROLE_FILE = REPO / "airflow_provider_volcano_argo" / "templates" / "airflow-role.yaml"
RESULTS = REPO / "benchmarks" / "results"

# Airflow reads its configuration at import time: isolate it first (as tests/conftest.py does).
if "VOLCANO_ARGO_BENCH_AIRFLOW_HOME" not in os.environ:
    _home = tempfile.mkdtemp(prefix="volcano-argo-bench-airflow-")
    os.environ["VOLCANO_ARGO_BENCH_AIRFLOW_HOME"] = _home
    atexit.register(shutil.rmtree, _home, True)
os.environ["AIRFLOW_HOME"] = os.environ["VOLCANO_ARGO_BENCH_AIRFLOW_HOME"]
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "False")
os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "ERROR")

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

JOB_TERMINAL = ("Completed", "Failed", "Terminated", "Aborted")


def _product_version() -> str:
    """Return the checkout's commit when the benchmark started, and whether the provider's code had local changes."""
    import subprocess

    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "airflow_provider_volcano_argo"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}{' + uncommitted changes in airflow_provider_volcano_argo/' if dirty else ''}" or "unknown"


PRODUCT_VERSION = _product_version()


# ---------------------------------------------------------------------------------------------------- CLI
def arguments(description: str, extra=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--small", action="store_true", help="a quick pass (fewer runs, shorter jobs)")
    if extra:
        extra(parser)
    return parser.parse_args()


def say(*parts) -> None:
    """Progress on stderr, so that stdout holds the report only."""
    print(*parts, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------- sandbox
@contextlib.contextmanager
def sandbox(audit_log: bool = False, nodes: list | None = None, time_scale: float | None = None) -> Iterator:
    """Run a sandbox whose Airflow identity has exactly the provider's least-privilege Role.

    It stops on exit (also on errors, Ctrl-C and SIGTERM). ``time_scale``: 1.0 for upstream's timings (the sandbox's
    default is 0.1).
    """
    from airflow_provider_volcano_argo.sandbox.assembly import Sandbox, SandboxOptions

    options = SandboxOptions(audit_log=audit_log, airflow_role_file=ROLE_FILE)
    if nodes:
        options.nodes = nodes
    if time_scale is not None:
        options.time_scale = time_scale
    say(f"starting sandbox (audit_log={audit_log}) ...")
    started = time.monotonic()
    with _exit_on_sigterm(), Sandbox(options) as sb:
        say(f"sandbox up at {sb.server} in {time.monotonic() - started:.1f} s")
        try:
            yield sb
        finally:
            say("stopping sandbox ...")


@contextlib.contextmanager
def _exit_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM into ``SystemExit`` while inside, so that a terminated benchmark stops what it started.

    By default SIGTERM ends Python at once, leaving etcd, kube-apiserver, Airflow's processes and PostgreSQL behind.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def prepare_namespace(sb, name: str) -> str:
    """Make a namespace with the shipped WorkflowTemplates and the Argo-side RBAC.

    The Airflow connection (least privilege) goes into ``AIRFLOW_CONN_KUBERNETES_DEFAULT``.
    """
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.integration.helpers import install_mpi_templates

    ns = install_mpi_templates(sb, sb.create_namespace(name))
    os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = sb.airflow_connection()
    return ns


def extra_identity(sb, name: str, namespaces: list[str], rules: list[dict] | None = None) -> tuple[str, str]:
    """Make another service account in ``argo``, bound to the same least-privilege rules in ``namespaces``.

    A baseline's requests can then be told apart in the audit log. ``rules``: a Role of its own with these rules
    instead (what another operator needs; the provider's shipped Role stays as it is). Returns (connection JSON,
    username).
    """
    from airflow_provider_volcano_argo.sandbox.assembly import AIRFLOW_NAMESPACE, AIRFLOW_ROLE

    token = sb.service_account_token(AIRFLOW_NAMESPACE, name)
    role = AIRFLOW_ROLE if rules is None else f"bench-{name}"
    for ns in namespaces:
        if rules is not None:
            sb.apply(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "Role",
                    "metadata": {"name": role, "namespace": ns},
                    "rules": rules,
                }
            )
        sb.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": f"{role}-{name}", "namespace": ns},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": AIRFLOW_NAMESPACE}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            }
        )
    kubeconfig = sb.control_plane.write_kubeconfig(name, token, AIRFLOW_NAMESPACE)
    conn = json.dumps({"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig), "namespace": "argo"}})
    return conn, f"system:serviceaccount:{AIRFLOW_NAMESPACE}:{name}"


def airflow_username() -> str:
    from airflow_provider_volcano_argo.sandbox.assembly import AIRFLOW_NAMESPACE, AIRFLOW_SERVICE_ACCOUNT

    return f"system:serviceaccount:{AIRFLOW_NAMESPACE}:{AIRFLOW_SERVICE_ACCOUNT}"


def submit(
    sb,
    ns: str,
    job_name: str,
    workers: int = 1,
    cpu: str = "10m",
    memory: str = "16Mi",
    template: str = "volcano-mpi",
    labels: dict[str, str] | None = None,
) -> dict:
    """Submit a Workflow from the shipped ``volcano-mpi`` template (or ``template``), with small gangs.

    As ``argo submit --from workflowtemplate/...`` does (tests/integration/helpers.py ``submit_from_template``);
    ``labels``: more labels on the Workflow (the operator's ``app.kubernetes.io/managed-by``).
    """
    parameters = {
        "job-name": job_name,
        "workers": str(workers),
        "np": str(workers),
        "min-available": str(workers + 1),
        "mpiworker-container": json.dumps({"resources": {"requests": {"cpu": cpu, "memory": memory}}}),
        "max-retry": "1",
    }
    body = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "generateName": f"{job_name}-",
            "labels": {"workflows.argoproj.io/workflow-template": template, **(labels or {})},
        },
        "spec": {
            "workflowTemplateRef": {"name": template},
            "arguments": {"parameters": [{"name": k, "value": v} for k, v in parameters.items()]},
        },
    }
    return sb.api.create("workflows", body, ns)


def follow_spec(ns: str, wf: dict, job_name: str) -> dict:
    from airflow_provider_volcano_argo.models.follow import FollowSpec

    return FollowSpec(
        namespace=ns, workflow_name=wf["metadata"]["name"], workflow_uid=wf["metadata"]["uid"], job_name=job_name
    ).to_dict()


def job_phase(job: dict | None) -> str:
    return (((job or {}).get("status") or {}).get("state") or {}).get("phase", "") or ""


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"{what}: not reached within {timeout:.0f} s")


class JobPhaseWatch:
    """Watch every Volcano Job as admin: the wall-clock time (``time.time()``) each was first seen in each phase.

    Runs in a thread until ``stop()``. ``kind`` and ``phase``: another resource and how to read its phase (e.g.
    batch/v1 ``jobs`` and their conditions).
    """

    def __init__(self, sb, kind: str = "vcjobs", phase=job_phase):
        self.api = sb.api
        self.kind, self.phase = kind, phase
        self.seen: dict[tuple[str, str], dict[str, float]] = {}
        self.cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"bench-{kind}-watch", daemon=True)

    def __enter__(self) -> JobPhaseWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()

    def _record(self, job: dict) -> None:
        now = time.time()
        meta = job["metadata"]
        phases = self.seen.setdefault((meta["namespace"], meta["name"]), {})
        phase = self.phase(job)
        if phase and phase not in phases:
            with self.cond:
                phases[phase] = now
                self.cond.notify_all()

    def _run(self) -> None:
        version = None
        while not self._stop.is_set():
            try:
                if version is None:
                    listing = self.api.list(self.kind)
                    for job in listing.get("items", []):
                        self._record(job)
                    version = listing["metadata"]["resourceVersion"]
                for event in self.api.watch(self.kind, version, timeout_seconds=30):
                    if self._stop.is_set():
                        return
                    obj = event.get("object", {})
                    if event.get("type") == "ERROR":
                        version = None
                        break
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._record(obj)
            except Exception:  # the sandbox stopping, a dropped watch: resume
                if self._stop.wait(0.2):
                    return

    def terminal_at(self, ns: str, name: str) -> tuple[str, float] | None:
        phases = self.seen.get((ns, name), {})
        for phase in JOB_TERMINAL:
            if phase in phases:
                return phase, phases[phase]
        return None

    def wait_phase(self, ns: str, name: str, phases: tuple[str, ...], timeout: float) -> float:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                seen = self.seen.get((ns, name), {})
                for phase in phases:
                    if phase in seen:
                        return seen[phase]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"job {ns}/{name} not in {phases} within {timeout:.0f} s (seen: {seen})")
                self.cond.wait(min(left, 1.0))


# ---------------------------------------------------------------------------------------------------- numbers
def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, int(-(-q * len(ordered) // 100)))  # ceil(q/100 * n)
    return ordered[min(rank, len(ordered)) - 1]


def rss_kib(pid: str = "self") -> int:
    """VmRSS of a process, KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def hwm_kib(pid: str = "self") -> int:
    """VmHWM (peak RSS) of a process, KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


# ---------------------------------------------------------------------------------------------------- report
def machine_line() -> str:
    load = os.getloadavg()
    return (
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} "
        f"{platform.release()}, {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}, "
        f"load average {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}; provider at commit {PRODUCT_VERSION} (at start)"
    )


def table(columns: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def report(title: str, method: list[str], columns: list[str], rows: list[list[str]], notes: list[str]) -> None:
    """Print the benchmark's result (a heading, how it was measured, the table, notes, the machine line) and keep it.

    The last result of each benchmark stays in ``benchmarks/results/`` with the commit it ran on (machine line).
    """
    out = [f"### {title}", ""]
    out += [f"{line}" for line in method]
    out += ["", table(columns, rows), ""]
    out += [f"- {note}" for note in notes]
    if notes:
        out.append("")
    out.append(machine_line())
    text = "\n".join(out)
    print(text, flush=True)
    keep_result(Path(sys.argv[0]).stem + ("-small" if "--small" in sys.argv else ""), text)


def keep_result(name: str, text: str) -> Path:
    """Write ``text`` to ``benchmarks/results/<name>.md`` (the last printed table of that benchmark)."""
    target = RESULTS / f"{name}.md"
    target.parent.mkdir(exist_ok=True)
    target.write_text(text.rstrip() + "\n")
    return target


def met(ok: bool | None) -> str:
    return "n/a" if ok is None else ("yes" if ok else "**no**")


class QuietLog:
    """Stands in for the trigger's logger (the task log): counts lines, prints nothing."""

    def __init__(self):
        self.lines = 0

    def info(self, msg, *args, **kwargs):
        self.lines += 1

    def warning(self, msg, *args, **kwargs):
        say("trigger warning:", msg % args if args else msg)

    debug = error = exception = critical = warning


class StreamingLog:
    """Stands in for trigger ``i``'s task log: adds ``i`` to ``streaming`` at its first "tick" line (the master's)."""

    def __init__(self, i: int, streaming: set[int]):
        self.i, self.streaming = i, streaming

    def info(self, msg, *args, **kwargs):
        if str(msg).startswith("tick "):
            self.streaming.add(self.i)

    def warning(self, msg, *args, **kwargs):
        say(f"trigger {self.i} warning:", msg % args if args else msg)

    debug = error = exception = critical = warning
