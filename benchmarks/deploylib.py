"""A sandbox and a real Airflow deployment for a benchmark, outside pytest.

The deployment is the deployment tests' own harness (``tests/deployment``: API server, scheduler with the
LocalExecutor, DAG processor and triggerers as processes of their own, on a throw-away PostgreSQL, driven through
the REST API), pointed at the sandbox as the provider's least-privilege identity::

    with deploylib.deployment(DAGS, triggerers=1) as (sb, airflow, ns):
        run_id = airflow.trigger("my_dag", {"namespace": ns})
        airflow.wait_run("my_dag", run_id, 600)

Import ``benchlib`` (or this module) before anything that imports Airflow. The repository goes on the Airflow
processes' ``PYTHONPATH``, so DAG files and triggers can import ``benchmarks.<...>`` modules.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import benchlib  # first: it sets AIRFLOW_HOME before anything imports Airflow
from benchlib import REPO, say

from tests.deployment.deployment import AirflowDeployment
from tests.deployment.postgres import postgres_server

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Deployed(NamedTuple):
    """What ``deployment()`` yields: the sandbox, the Airflow deployment, and a namespace ready for runs."""

    sandbox: object
    airflow: AirflowDeployment
    namespace: str


@contextlib.contextmanager
def deployment(
    dags_folder: Path,
    namespace: str = "bench",
    triggerers: int = 1,
    extra_env: dict[str, str] | None = None,
    keep_home: bool = False,
    audit_log: bool = False,
    prepare: Callable[[object, str], dict[str, str]] | None = None,
) -> Iterator[Deployed]:
    """Start a sandbox, a namespace with the shipped templates, and Airflow reading DAGs from ``dags_folder``.

    Everything stops on exit (also on errors, Ctrl-C and SIGTERM); on an error, the tail of each Airflow process's
    log goes to stderr. ``extra_env``: more environment for the Airflow processes (``AIRFLOW__SECTION__KEY``
    settings).
    ``keep_home``: leave the Airflow home (process logs, task logs) in /tmp and say where. ``audit_log``: the API
    server's audit log (``sb.control_plane.audit_log_file``). ``prepare(sandbox, namespace)``: runs before Airflow
    starts and returns more environment for it (e.g. the connection of another identity).
    """
    home = Path(tempfile.mkdtemp(prefix="volcano-argo-bench-deployment-"))
    with benchlib.sandbox(audit_log=audit_log) as sb:
        ns = benchlib.prepare_namespace(sb, namespace)
        env = {
            "AIRFLOW_CONN_KUBERNETES_DEFAULT": sb.airflow_connection(),
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
            **(extra_env or {}),
            **(prepare(sb, ns) if prepare else {}),
        }
        with postgres_server() as database:
            airflow = AirflowDeployment(home, database, dags_folder, env)
            try:
                say(f"starting Airflow ({triggerers} triggerer(s)) in {home} ...")
                airflow.start(triggerers=triggerers)
                say(f"Airflow up at {airflow.url}")
                yield Deployed(sb, airflow, ns)
            except BaseException:
                say(airflow.process_logs())
                raise
            finally:
                say("stopping Airflow ...")
                airflow.stop()
                if keep_home:
                    say(f"Airflow home kept: {home}")
                else:
                    shutil.rmtree(home, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------- processes
def descendants(pid: int) -> list[int]:
    """Return ``pid`` and every process it started, recursively (from ``/proc/<pid>/task/*/children``)."""
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                found += descendants(int(child))
    return found


def cpu_seconds(pid: int) -> float:
    """Return the user + system CPU time a process has used so far (``/proc/<pid>/stat``), 0 once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state is field 3, utime 14, stime 15
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def named_processes(name: str) -> list[int]:
    """Return the pids of the processes whose command name (``/proc/<pid>/comm``) is ``name``."""
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            if comm.read_text().strip() == name:
                found.append(int(comm.parent.name))
    return found


def process_cpu(airflow: AirflowDeployment, name: str) -> dict[int, float]:
    """Return the CPU seconds of the Airflow process ``name`` and of each process it started, by pid."""
    return {pid: cpu_seconds(pid) for pid in descendants(airflow.processes[name].pid)}


def restart_triggerer(airflow: AirflowDeployment, name: str, env: dict[str, str]) -> None:
    """Restart the triggerer ``name`` with ``env`` added to its environment; wait until Airflow reports it healthy.

    SIGTERM first: the triggerer ends its triggers and its job before it exits.
    """
    process = airflow.processes.pop(name)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    process.wait(60)
    airflow.env.update(env)
    airflow.start_triggerer(name)
    airflow.wait(airflow.healthy, 120, f"{name} healthy again")
