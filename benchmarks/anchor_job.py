"""Beside the real anchor: completion latency and API load of ours and of cncf-kubernetes' own Job operator.

The same work (one pod that prints a line a second and exits after S seconds) as a Volcano MPI Job through our
``VolcanoMPIJobOperator`` (shipped ``volcano-mpi`` template, 1 worker) and as a batch/v1 Job through
``KubernetesJobOperator(deferrable=True, wait_until_job_complete=True)`` (its trigger, ``KubernetesJobTrigger``,
reads the Job's status every ``poll_interval`` = 10 s by default), both in a real Airflow deployment on the sandbox
(kube-controller-manager runs its real ``job`` controller). Each operator runs as its own identity, so the API
server's audit log tells their requests apart.

    .venv/bin/python benchmarks/anchor_job.py [--small] [--runs N] [--seconds S]
"""

from __future__ import annotations

import contextlib
import datetime
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import benchlib  # first: it sets AIRFLOW_HOME before anything imports Airflow
import deploylib
from api_load import audit_requests
from benchlib import JOB_TERMINAL, JobPhaseWatch, percentile, say

DAGS = benchlib.REPO / "benchmarks" / "dags" / "anchor_job"
OURS, ANCHOR = ("bench_ours", "mpi"), ("bench_anchor", "job")
ANCHOR_IDENTITY = "bench-anchor"
#: S varies by up to this much from pair to pair (the same S for both), so that the anchor's 10 s polls meet the
#: Job's end at every point of their period, not always at the same one
SPREAD_SECONDS = 10.0
STEADY_AFTER_SECONDS = 20.0
RUN_TIMEOUT = 600.0
VERBS = ("create", "get", "list", "watch", "patch", "delete", "log")
#: What KubernetesJobOperator(deferrable=True) needs (cncf-kubernetes 10.25: operators/job.py, operators/pod.py,
#: triggers/job.py): create the Job, list its pods by label, read the Job's status (the trigger), read a pod and its
#: log, delete the pod (on_finish_action) or label it (patch_already_checked), delete the Job (on_kill), events on
#: failure. The provider's shipped Role stays as it is.
ANCHOR_RULES = [
    {"apiGroups": ["batch"], "resources": ["jobs", "jobs/status"], "verbs": ["create", "get", "list", "delete"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/log", "events"], "verbs": ["get", "list"]},
]


def batch_job_phase(job: dict | None) -> str:
    """Return ``Complete`` or ``Failed`` once the batch/v1 Job has that condition true, else ``Active`` or ``""``."""
    status = (job or {}).get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return condition["type"]
    return "Active" if status.get("active") else ""


def fired_at(home: Path, dag_id: str, run_id: str, task_id: str) -> float | None:
    """Return when the run's trigger fired its event: the "Trigger fired event" record of the trigger's own log.

    The triggerer writes it (``triggerer_job_runner.py``) into the task instance's trigger log file, JSON lines,
    ``<home>/logs/dag_id=../run_id=../task_id=../attempt=1.log.trigger.<id>.log``.
    """
    folder = home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
    for path in sorted(folder.glob("attempt=*.log.trigger.*.log")):
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict) and record.get("event") == "Trigger fired event":
                    return stamp(record.get("timestamp"))
    return None


def stamp(text: str | None) -> float | None:
    """Return an API timestamp (ISO 8601, ``Z`` or an offset) as epoch seconds."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None


@dataclass
class Run:
    """One DAG run: when it started and ended, when its Job ended, and how."""

    dag_id: str
    run_id: str
    state: str = ""
    job_name: str = ""
    job_phase: str = ""
    job_end: float | None = None  # the benchmark's watch first saw the Job terminal (time.time())
    started: float | None = None  # the DAG run's start_date
    fired: float | None = None  # the triggerer logged the trigger's event
    queued: float | None = None  # the task instance's queued_when (after the trigger's event: the resume)
    ended: float | None = None  # the task instance's end_date
    problems: list[str] = field(default_factory=list)

    @property
    def latency(self) -> float | None:
        return self.ended - self.job_end if self.state == "success" and self.ended and self.job_end else None


def script_work(sb, ns: str, seconds: float) -> None:
    """Script both pods' work: a line a second, exit 0 after ``seconds`` (the newest rule wins)."""
    from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram

    work = ScriptedProgram(count=int(seconds), line_template="step {i}", rate=1.0, duration=seconds)
    sb.kubelet.programs.script(work, namespace=ns, container="mpimaster")
    sb.kubelet.programs.script(work, namespace=ns, container="base")


def finish(airflow, watches: dict, ns: str, run: Run) -> Run:
    """Wait for ``run`` to end; read its task instance, its Job's name and when the Job ended."""
    task_id = OURS[1] if run.dag_id == OURS[0] else ANCHOR[1]
    run.state = airflow.wait_run(run.dag_id, run.run_id, RUN_TIMEOUT)
    ti = airflow.task_instance(run.dag_id, run.run_id, task_id)
    dag_run = airflow.api("GET", f"/dags/{run.dag_id}/dagRuns/{run.run_id}")
    run.started, run.queued, run.ended = stamp(dag_run["start_date"]), stamp(ti["queued_when"]), stamp(ti["end_date"])
    if run.state != "success":
        log = airflow.task_log(run.dag_id, run.run_id, task_id)
        run.problems.append(f"{run.dag_id} {run.run_id}: {run.state}; task log ends: {log[-600:]}")
        return run
    if run.dag_id == OURS[0]:
        run.job_name = airflow.xcom(run.dag_id, run.run_id, task_id)["job_name"]
        terminal = JOB_TERMINAL
    else:
        run.job_name = airflow.xcom(run.dag_id, run.run_id, task_id, key="job_name")
        terminal = ("Complete", "Failed")
    watch = watches[run.dag_id]
    run.job_end = watch.wait_phase(ns, run.job_name, terminal, 60)
    run.fired = fired_at(airflow.home, run.dag_id, run.run_id, task_id)
    run.job_phase = next(p for p in terminal if p in watch.seen.get((ns, run.job_name), {}))
    return run


def run_pair(deployed, watches: dict, seconds: float) -> tuple[Run, Run]:
    """Start one run of each DAG at the same time, both pods working ``seconds``; wait for both."""
    sb, airflow, ns = deployed
    script_work(sb, ns, seconds)
    runs = [Run(dag_id, airflow.trigger(dag_id, {"namespace": ns})) for dag_id, _ in (OURS, ANCHOR)]
    ours, anchor = (finish(airflow, watches, ns, run) for run in runs)
    return ours, anchor


def anchor_environment(sb, ns: str) -> dict[str, str]:
    """Make the anchor's own identity (a Role with ``ANCHOR_RULES`` in ``ns``); return its Airflow connection."""
    conn, _ = benchlib.extra_identity(sb, ANCHOR_IDENTITY, [ns], rules=ANCHOR_RULES)
    return {"AIRFLOW_CONN_BENCH_ANCHOR": conn}


def identity_of(name: str) -> str:
    from airflow_provider_volcano_argo.sandbox.assembly import AIRFLOW_NAMESPACE

    return f"system:serviceaccount:{AIRFLOW_NAMESPACE}:{name}"


# ---------------------------------------------------------------------------------------------------- figures
@dataclass
class Load:
    """One identity's requests over its counted runs."""

    runs: int
    run_minutes: float
    by_verb: Counter
    steady: int  # requests (no log) from STEADY_AFTER_SECONDS after each run's start to its Job's end
    steady_minutes: float

    @property
    def without_log(self) -> int:
        return sum(n for verb, n in self.by_verb.items() if verb != "log")


def load_of(requests: list[dict], runs: list[Run]) -> Load:
    """Count the requests received during ``runs`` (from a run's start to 2 s after its task ended)."""
    spans = [(r.started, r.ended) for r in runs if r.started and r.ended]
    inside = [q for q in requests if any(start <= q["at"] <= end + 2.0 for start, end in spans)]
    by_verb = Counter("log" if q["kind"] == "log" else q["verb"] for q in inside)
    windows = [(r.started + STEADY_AFTER_SECONDS, r.job_end) for r in runs if r.started and r.job_end]
    windows = [(a, b) for a, b in windows if b > a]
    steady = sum(1 for q in inside if q["kind"] != "log" and any(a <= q["at"] <= b for a, b in windows))
    return Load(
        runs=len(spans),
        run_minutes=sum(end - start for start, end in spans) / 60,
        by_verb=by_verb,
        steady=steady,
        steady_minutes=sum(b - a for a, b in windows) / 60,
    )


def ratio(ours: float, anchor: float) -> str:
    return f"{ours / anchor:.2f}" if anchor else "-"


def latency_rows(ours: list[Run], anchor: list[Run]) -> list[list[str]]:
    """Rows: job end -> task success (p50, p95, max) and job end -> task queued again (p50)."""
    rows = []
    ends = [r.latency for r in ours if r.latency is not None], [r.latency for r in anchor if r.latency is not None]
    for label, pick in (("p50", lambda v: percentile(v, 50)), ("p95", lambda v: percentile(v, 95)), ("max", max)):
        mine, theirs = (pick(v) if v else float("nan") for v in ends)
        goal = "none set (issue 18: beside the anchor)" if label == "p50" else ""
        rows.append([f"job end -> task success, {label}", f"{mine:.2f} s", f"{theirs:.2f} s", ratio(mine, theirs),
                     goal, "n/a" if goal else ""])  # fmt: skip
    spans = (
        ("job end -> the trigger's event (triggerer log), p50", lambda r: r.fired and r.fired - r.job_end),
        ("job end -> task queued to resume, p50", lambda r: r.queued and r.queued - r.job_end),
        ("the trigger's event -> task success (Airflow's resume path), p50", lambda r: r.fired and r.ended - r.fired),
    )
    for label, span in spans:
        values = [[span(r) for r in runs if r.latency is not None and span(r) is not None] for runs in (ours, anchor)]
        mine, theirs = (percentile(v, 50) if v else float("nan") for v in values)
        rows.append([label, f"{mine:.2f} s", f"{theirs:.2f} s", ratio(mine, theirs), "", ""])
    return rows


def load_rows(ours: Load, anchor: Load) -> list[list[str]]:
    """Rows: requests per run-minute and per run (without the log), log reads, steady state, by verb."""
    per_minute = [x.without_log / x.run_minutes for x in (ours, anchor)]
    steady = [x.steady / x.steady_minutes if x.steady_minutes else float("nan") for x in (ours, anchor)]
    per_run = [x.without_log / x.runs for x in (ours, anchor)]
    logs = [x.by_verb["log"] / x.runs for x in (ours, anchor)]
    rows = [
        ["**API requests per run-minute, without log**", f"**{per_minute[0]:.2f}**", f"**{per_minute[1]:.2f}**",
         ratio(*per_minute), "none set; cf. api_load.py <= 2 + log stream (5-min job)", "n/a"],
        ["per minute in steady state (20 s after the run's start to the Job's end), without log",
         f"{steady[0]:.2f}", f"{steady[1]:.2f}", ratio(*steady), "", ""],
        ["requests per run, without log", f"{per_run[0]:.1f}", f"{per_run[1]:.1f}", ratio(*per_run), "", ""],
        ["`pods/log` requests per run", f"{logs[0]:.1f}", f"{logs[1]:.1f}", "", "", ""],
    ]  # fmt: skip
    for verb in VERBS[:-1]:
        rows.append([f"  {verb} per run", f"{ours.by_verb[verb] / ours.runs:.1f}",
                     f"{anchor.by_verb[verb] / anchor.runs:.1f}", "", "", ""])  # fmt: skip
    return rows


def lines_shown(log: str, marker: str) -> int:
    """Count the task log's lines holding one of the pod's ``step N`` lines."""
    return sum(1 for line in log.splitlines() if marker in line)


def versions() -> str:
    from importlib.metadata import version

    return (
        f"apache-airflow {version('apache-airflow')}, "
        f"apache-airflow-providers-cncf-kubernetes {version('apache-airflow-providers-cncf-kubernetes')}"
    )


def measure(runs: int, base: float) -> tuple[list[Run], list[Run], Load, Load, dict]:
    """Run a warm-up pair, then ``runs`` pairs; return the runs, each identity's load, and what the notes need."""
    rng = random.Random(18)
    ours: list[Run] = []
    anchor: list[Run] = []
    seen: dict = {"seconds": []}
    deployment = deploylib.deployment(DAGS, namespace="bench-anchor", audit_log=True, prepare=anchor_environment)
    with deployment as deployed, JobPhaseWatch(deployed.sandbox) as vc:
        with JobPhaseWatch(deployed.sandbox, kind="jobs", phase=batch_job_phase) as batch:
            watches = {OURS[0]: vc, ANCHOR[0]: batch}
            say("warm-up pair (not counted) ...")
            warm_up = run_pair(deployed, watches, min(base, 20.0))  # warms imports and caches: its length is moot
            seen["warm-up"] = [p for run in warm_up for p in run.problems]
            for i in range(runs):
                seconds = base + rng.uniform(0, SPREAD_SECONDS)
                seen["seconds"].append(seconds)
                mine, theirs = run_pair(deployed, watches, seconds)
                ours.append(mine)
                anchor.append(theirs)
                say(f"pair {i + 1}/{runs} (S = {seconds:.1f} s): ours {mine.state} {mine.latency}, "
                    f"anchor {theirs.state} {theirs.latency}")  # fmt: skip
            airflow = deployed.airflow
            seen["ours_lines"] = lines_shown(airflow.task_log(OURS[0], ours[-1].run_id, OURS[1]), "step ")
            seen["anchor_lines"] = lines_shown(airflow.task_log(ANCHOR[0], anchor[-1].run_id, ANCHOR[1]), "step ")
            seen["last_seconds"] = seen["seconds"][-1]
            seen["phases"] = Counter(r.job_phase for r in ours + anchor)
            time.sleep(2.0)  # let the audit backend write the last entries
            users = [identity_of("airflow"), identity_of(ANCHOR_IDENTITY)]
            requests = audit_requests(deployed.sandbox.control_plane.audit_log_file, users)
            say(f"audit log: {', '.join(f'{u} {len(requests[u])}' for u in users)} requests")
    return ours, anchor, load_of(requests[users[0]], ours), load_of(requests[users[1]], anchor), seen


def main() -> None:
    def extra(parser):
        parser.add_argument("--runs", type=int, default=None, help="pairs of runs (default 20, --small 5)")
        parser.add_argument("--seconds", type=float, default=None, help="S: work per pod (default 30, --small 20)")

    args = benchlib.arguments(__doc__.split("\n\n")[0], extra)
    runs = args.runs or (5 if args.small else 20)
    base = args.seconds or (20.0 if args.small else 30.0)
    ours, anchor, ours_load, anchor_load, seen = measure(runs, base)
    rows = latency_rows(ours, anchor) + load_rows(ours_load, anchor_load)
    seconds = seen["seconds"]
    notes = [
        f"{runs} pairs after one uncounted warm-up pair, one pair after another; in a pair both DAGs are started "
        f"through the REST API at the same time and their pods work the same S seconds (a line a second, then exit "
        f"0), S = {base:g} s + uniform [0, {SPREAD_SECONDS:g}) s per pair ({min(seconds):.1f}-{max(seconds):.1f} s)",
        "ours: `VolcanoMPIJobOperator(namespace=..., workers=1)` (shipped `volcano-mpi` template; the MPI master "
        "does the work, the worker runs sshd); anchor: `KubernetesJobOperator(namespace=..., image=..., "
        "wait_until_job_complete=True, deferrable=True)`, otherwise defaults: `job_poll_interval` = "
        "`KubernetesJobTrigger.poll_interval` = 10 s, `get_logs=True` (the whole log read once in "
        "`execute_complete`), `on_finish_action='delete_pod'`",
        "job end = when the benchmark's admin watch first saw the Volcano Job `Completed` / the batch/v1 Job's "
        "`Complete` condition (the API objects carry second-precision times only); task success = the task "
        "instance's `end_date` from the REST API; queued to resume = its `queued_when` (the trigger's event seen, "
        'the scheduler queued the resumed task); the trigger\'s event = the record "Trigger fired event" the '
        "triggerer writes into the task's trigger log (its timestamp; the same machine's clock as the watch's)",
        f"one real Airflow deployment ({versions()}; `tests/deployment` harness via `benchmarks/deploylib.py`: API "
        "server, scheduler with LocalExecutor, DAG processor, 1 triggerer, on PostgreSQL, the harness's 1 s "
        "heartbeats), the sandbox on the same 2 cores; kube-controller-manager's real `job` controller runs the "
        "batch/v1 Job, the emulated kubelet its pod",
        f"requests from the API server's audit log (level Metadata), one per `auditID`, by identity: ours "
        f"`{identity_of('airflow')}` (the shipped least-privilege Role), anchor `{identity_of(ANCHOR_IDENTITY)}` "
        "(a Role of its own: batch jobs and jobs/status, pods, pods/log, events); each run counts what its identity "
        "sent from the DAG run's start to 2 s after the task ended (task execute, trigger, resumed task); run-minutes "
        "= the sum of those spans",
        f"job end phases: {dict(seen['phases'])}; task log of the last pair (S = {seen['last_seconds']:.1f} s): ours "
        f"shows {seen['ours_lines']} `step` lines (streamed while it ran), the anchor {seen['anchor_lines']} (read "
        "after the end)",
    ]
    notes += seen["warm-up"][:2] + [p for r in ours + anchor for p in r.problems][:5]
    benchlib.report(
        "Beside the real anchor: KubernetesJobOperator(deferrable=True) and ours in a real deployment",
        [f"command: `.venv/bin/python benchmarks/anchor_job.py{''.join(' ' + a for a in sys.argv[1:])}`"],
        ["measure", "ours (VolcanoMPIJobOperator)", "anchor (KubernetesJobOperator, deferrable)", "ours / anchor",
         "goal", "met?"],
        rows,
        notes,
    )  # fmt: skip


if __name__ == "__main__":
    main()
