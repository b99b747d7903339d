"""The whole log path in a real Airflow deployment: master log -> trigger -> triggerer -> task log -> REST API.

One deployment (``deploylib``: the deployment tests' API server, scheduler, DAG processor and one triggerer, as
processes of their own on PostgreSQL), two DAGs (``benchmarks/dags/log_path``), run one after the other:

- ours: ``VolcanoMPIJobOperator`` following a master that prints N pre-written lines and exits;
- ceiling: a deferrable task whose trigger only logs N pre-made lines (Airflow's own path, nothing read).

    .venv/bin/python benchmarks/log_path.py [--small] [--count N] [--rounds R] [--py-spy PATH]
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections import Counter
from pathlib import Path

import benchlib  # first: it sets AIRFLOW_HOME before anything imports Airflow
import deploylib
import log_path_profile
from benchlib import say

DAGS = Path(__file__).resolve().parent / "dags" / "log_path"
GOAL_RATIO = 0.8
#: the emulated kubelet's containerLogMaxSize: the whole log stays in its current file (it serves only that one)
LOG_MAX_SIZE = 256 * 1024 * 1024
RUN_TIMEOUT = 1800.0
DRAIN_WAIT = 60.0  # s the triggerer may take to write what it still holds once the run ended
TASKS = {"ours": ("bench_log_path_ours", "mpi"), "ceiling": ("bench_log_path_ceiling", "lines")}


class TriggerLogTail(threading.Thread):
    """Follow the trigger's log files of one run on disk: when its first and last lines appeared, and CPU by then.

    ``sample()`` gives the CPU figures; the files are polled every ``interval`` s.
    """

    def __init__(self, folder: Path, marker: bytes, expected: int, sample, interval: float = 0.01):
        super().__init__(name="log-path-tail", daemon=True)
        self.folder, self.marker, self.expected, self.sample = folder, marker, expected, sample
        self.interval = interval
        self.seen = 0
        self.bytes = 0  # of complete records in the files
        self.records = 0
        self.first: dict | None = None  # sample() when the first line was in the file
        self.last: dict | None = None  # sample() when the expected-th line was
        self._offsets: dict[Path, int] = {}
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(self.interval):
            self._poll()

    def stop(self) -> None:
        self._stopping.set()
        self.join(10)

    def _poll(self) -> None:
        """Count the marker in what each trigger log file got since the last poll (complete lines only)."""
        for path in self.folder.glob("*.trigger.*.log") if self.folder.is_dir() else ():
            offset = self._offsets.get(path, 0)
            with open(path, "rb") as log:
                log.seek(offset)
                data = log.read()
            end = data.rfind(b"\n") + 1
            self._offsets[path] = offset + end
            self.bytes += end
            self.records += data.count(b"\n", 0, end)
            found = data[:end].count(self.marker)
            if found and self.first is None:
                self.first = self.sample()
            self.seen += found
            if self.seen >= self.expected and self.last is None:
                self.last = self.sample()


def cpu_sample(airflow, triggerer: str = "triggerer-1") -> dict:
    """Return the time and the CPU seconds used so far by the triggerer, this process and the machine.

    The triggerer: its supervisor and its trigger runner; this benchmark's process: the sandbox's emulators, the
    kubelet's log server among them.
    """
    pid = airflow.processes[triggerer].pid
    by_pid = deploylib.process_cpu(airflow, triggerer)
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    busy = sum(int(v) for i, v in enumerate(fields[:8]) if i not in (3, 4))  # all but idle and iowait
    return {
        "t": time.monotonic(),
        "supervisor": by_pid.pop(pid, 0.0),
        "runner": sum(by_pid.values()),
        "benchmark": deploylib.cpu_seconds(os.getpid()),
        "database": sum(deploylib.cpu_seconds(pid) for pid in deploylib.named_processes("postgres")),
        "machine": busy / deploylib.CLOCK_TICKS,
    }


def count_lines(records: list | str, pattern: re.Pattern, expected: int) -> dict:
    """Count the run's lines in the task log's records: each line of a record's message that is one of the lines."""
    counts: Counter = Counter()
    for record in records if isinstance(records, list) else []:
        event = record.get("event") if isinstance(record, dict) else None
        for line in event.split("\n") if isinstance(event, str) else ():
            match = pattern.fullmatch(line)
            if match:
                counts[int(match.group(1))] += 1
    delivered = sum(1 for i in counts if 0 <= i < expected)
    return {
        "records": len(records) if isinstance(records, list) else 0,
        "delivered": delivered,
        "lost": expected - delivered,
        "repeated": sum(c - 1 for c in counts.values()),
    }


def start_run(deployed, kind: str, tag: str, count: int, per_record: int) -> str:
    """Script the master (ours) and start the run; return its run id."""
    sb, airflow, ns = deployed
    dag_id, _ = TASKS[kind]
    if kind == "ceiling":
        return airflow.trigger(dag_id, {"tag": tag, "count": count, "per_record": per_record})
    from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
    from benchmarks.dags.log_path.premade_lines import premade_line

    lines = [premade_line(tag, i) for i in range(count)]
    sb.kubelet.programs.script(ScriptedProgram(lines=lines), namespace=ns, container="mpimaster")
    return airflow.trigger(dag_id, {"namespace": ns})


def measure(deployed, kind: str, tag: str, count: int, profiler=None, per_record: int = 1) -> dict:
    """Run one DAG; return when its lines appeared on disk, the CPU used meanwhile, and what the API serves.

    ``per_record``: lines per task-log record of the ceiling's trigger (ours: the triggerer's configuration).
    """
    airflow = deployed.airflow
    dag_id, task_id = TASKS[kind]
    run_id = start_run(deployed, kind, tag, count, per_record)
    folder = airflow.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
    tail = TriggerLogTail(folder, f"{tag}-line-".encode(), count, lambda: cpu_sample(airflow))
    tail.start()
    if profiler:
        airflow.wait(lambda: tail.first is not None, 600, f"{kind}: first line")
        profiler.start(airflow)
    state = airflow.wait_run(dag_id, run_id, RUN_TIMEOUT)
    if profiler:
        profiler.stop()
    with contextlib.suppress(AssertionError):  # the triggerer may still be writing the last lines
        airflow.wait(lambda: tail.seen >= count, DRAIN_WAIT, f"{kind}: every line in the trigger's log file")
    tail.stop()
    records = airflow.task_log_records(dag_id, run_id, task_id)
    result = count_lines(records, re.compile(rf"{re.escape(tag)}-line-(\d{{7}})\."), count)
    result.update(kind=kind, state=state, count=count, on_disk=tail.seen, first=tail.first, last=tail.last,
                  per_record=per_record)  # fmt: skip
    result["record_bytes"] = tail.bytes / max(tail.records, 1)
    result["in_triggerer_log"] = (airflow.logs / "triggerer-1.log").read_bytes().count(f"{tag}-line-".encode())
    if tail.first and tail.last:
        span = tail.last["t"] - tail.first["t"]
        result["seconds"] = span
        result["rate"] = count / span if span > 0 else float("nan")
        result["cpu"] = {k: tail.last[k] - tail.first[k] for k in tail.first if k != "t"}
    say(f"{kind} ({tag}): {state}, {result.get('rate', 0):,.0f} lines/s on disk, lost {result['lost']} (in the "
        f"triggerer's own log: {result['in_triggerer_log']}), repeated {result['repeated']}, CPU {result.get('cpu')}, "
        f"{result['record_bytes']:.0f} bytes per record on disk")  # fmt: skip
    return result


def per_line_us(result: dict, *parts: str) -> str:
    """Return the CPU per line of ``parts`` (keys of the result's CPU deltas), in microseconds."""
    if "cpu" not in result:
        return "-"
    return f"{sum(result['cpu'][p] for p in parts) / result['count'] * 1e6:.0f}"


def lost(result: dict) -> str:
    """Return "lost / repeated", and where the lost lines went when the triggerer logged them as its own."""
    text = f"{result['lost']:,} / {result['repeated']:,}"
    if result["in_triggerer_log"]:
        text += f" ({result['in_triggerer_log']:,} lines in the triggerer's own log instead)"
    return text


def rows_of(rounds: list[dict[str, dict]]) -> list[list[str]]:
    """Return the report's rows: one set per round, ours beside the ceiling."""
    rows = []
    for n, pair in enumerate(rounds, 1):
        ours, ceiling = pair["ours"], pair["ceiling"]
        ratio = ours.get("rate", 0) / ceiling["rate"] if ceiling.get("rate") else float("nan")
        label = f"round {n}" if len(rounds) > 1 else f"{ours['count']:,} lines"
        if ours["per_record"] > 1:
            label = f"{ours['count']:,} lines, up to {ours['per_record']:,} per record"
        rows += [
            [f"{label}: lines/s, first to last line in the trigger's log file", f"{ours.get('rate', 0):,.0f}",
             f"{ceiling.get('rate', 0):,.0f}", f">= {GOAL_RATIO} of the ceiling", benchlib.met(ratio >= GOAL_RATIO)],
            [f"{label}: ours / ceiling", f"{ratio:.2f}", "1.00", "", ""],
            [f"{label}: lost / repeated (whole task log read through the REST API)", lost(ours), lost(ceiling),
             "0 / 0", benchlib.met(ours["lost"] == ours["repeated"] == 0)],
            [f"{label}: triggerer CPU per line, us (supervisor + trigger runner)",
             f"{per_line_us(ours, 'supervisor', 'runner')} ({per_line_us(ours, 'supervisor')} + "
             f"{per_line_us(ours, 'runner')})", f"{per_line_us(ceiling, 'supervisor', 'runner')} "
             f"({per_line_us(ceiling, 'supervisor')} + {per_line_us(ceiling, 'runner')})", "", ""],
            [f"{label}: CPU per line elsewhere, us: PostgreSQL / the sandbox's process (kubelet log server, "
             "emulators) / the whole machine",
             f"{per_line_us(ours, 'database')} / {per_line_us(ours, 'benchmark')} / {per_line_us(ours, 'machine')}",
             f"{per_line_us(ceiling, 'database')} / {per_line_us(ceiling, 'benchmark')} / "
             f"{per_line_us(ceiling, 'machine')}", "", ""],
            [f"{label}: run state; records in the task log; bytes per record in the trigger's log file",
             f"{ours['state']}; {ours['records']:,}; {ours['record_bytes']:.0f}",
             f"{ceiling['state']}; {ceiling['records']:,}; {ceiling['record_bytes']:.0f}", "", ""],
        ]  # fmt: skip
    return rows


def main() -> None:
    def extra(parser):
        parser.add_argument("--count", type=int, default=None, help="lines per run (100000; --small 10000)")
        parser.add_argument("--rounds", type=int, default=1, help="ceiling + ours pairs, measured one after another")
        parser.add_argument("--py-spy", default=None, help="py-spy binary: one more, unmeasured pair, profiled")
        parser.add_argument("--keep-home", action="store_true", help="keep the Airflow home (logs) in /tmp")
        parser.add_argument(
            "--lines-per-record", type=int, default=1000, help="one more pair with this many lines per record (0: none)"
        )

    args = benchlib.arguments(__doc__.split("\n\n")[0], extra)
    count = args.count or (10_000 if args.small else 100_000)
    rounds: list[dict[str, dict]] = []
    profiles: dict[str, list[str]] = {}
    failures: list[str] = []
    with deploylib.deployment(DAGS, namespace="bench-log-path", keep_home=args.keep_home) as deployed:
        deployed.sandbox.kubelet.logs.max_size = LOG_MAX_SIZE
        for kind in ("ceiling", "ours"):  # warm-up: DAGs parsed, the triggerer's imports done
            measure(deployed, kind, f"warm{kind[0]}", 1000)
        for n in range(args.rounds):
            rounds.append({kind: measure(deployed, kind, f"r{n}{kind[0]}", count) for kind in ("ceiling", "ours")})
        if args.py_spy:
            for kind in ("ceiling", "ours"):
                profiler = log_path_profile.Profiler(args.py_spy)
                measure(deployed, kind, f"prof{kind[0]}", count, profiler)
                profiles[kind] = profiler.summary()
        if args.lines_per_record > 1:
            try:
                rounds.append(batched(deployed, count, args.lines_per_record))
            except Exception as exc:  # the per-line rounds are still worth their report
                failures.append(f"the pair with {args.lines_per_record} lines per record failed: {exc!r}")
    report(args, count, rounds, profiles, failures)


def batched(deployed, count: int, per_record: int) -> dict[str, dict]:
    """Restart the triggerer with ``log_lines_per_record``; measure both kinds with that many lines per record."""
    env = {"AIRFLOW__VOLCANO_ARGO__LOG_LINES_PER_RECORD": str(per_record)}
    deploylib.restart_triggerer(deployed.airflow, "triggerer-1", env)
    for kind in TASKS:  # warm-up of the new triggerer
        measure(deployed, kind, f"bwarm{kind[0]}", 1000, per_record=per_record)
    return {kind: measure(deployed, kind, f"batch{kind[0]}", count, per_record=per_record) for kind in TASKS}


def report(args, count: int, rounds: list[dict[str, dict]], profiles: dict[str, list[str]], failures: list[str]):
    """Print the table (and keep it in ``benchmarks/results/``)."""
    notes = [
        "one real Airflow deployment (`benchmarks/deploylib.py`: the deployment tests' harness; API server, "
        "scheduler with the LocalExecutor, DAG processor and ONE triggerer as processes of their own, PostgreSQL), "
        "on the same 2 cores as the sandbox; each round runs the ceiling, then ours, after one uncounted 1,000-line "
        "run of each",
        f"ours: `VolcanoMPIJobOperator` (1 worker) whose master prints {count:,} pre-written lines as fast as the "
        "emulated kubelet takes them and exits; the trigger follows its log through the API server's `pods/log` "
        "proxy (the emulated kubelet's log server runs in the sandbox's process, on the same cores)",
        f"ceiling: a deferrable task whose trigger (`benchmarks/dags/log_path/premade_lines.py`) logs {count:,} "
        "lines made before it starts with `self.log.info(line)`, yielding to the event loop every 1,000 lines: "
        "Airflow's own path (trigger runner -> supervisor -> task log file) with nothing to read",
        "lines/s: from the poll (every 10 ms) that first found one of the run's lines in the trigger's task-log file "
        "on disk to the one that found the last; CPU: user + system time (`/proc/<pid>/stat`) over the same window "
        "of the triggerer's supervisor process and its trigger runner subprocess, of PostgreSQL's processes, of the "
        "benchmark's process (the sandbox's emulators) and of the machine (`/proc/stat`, all but idle and iowait)",
        "lost / repeated: the whole task log read once through `GET .../logs/1?full_content=true` (JSON records) "
        "once the trigger's log file held every line (or 60 s after the run ended); each line of a record's message "
        "that is exactly one of the run's lines counts; lines the triggerer wrote to its own process log instead "
        "are counted there",
        f"'up to {args.lines_per_record:,} per record': the triggerer restarted with `[volcano_argo] "
        f"log_lines_per_record = {args.lines_per_record}` (ours: the lines of one chunk read, at most that many, "
        "per record, joined by newlines) and the ceiling's trigger logging that many lines per record",
    ]
    notes += failures
    notes += [f"profile ({kind}, py-spy, one more run, not measured): {line}" for kind in profiles for line in
              profiles[kind]]  # fmt: skip
    benchlib.report(
        "Log path through a real Airflow deployment (master log -> task log read through the REST API)",
        [f"command: `.venv/bin/python benchmarks/log_path.py{' --small' if args.small else ''}`"],
        ["scenario", "ours (`VolcanoMPIJobOperator`)", "ceiling (trigger logging pre-made lines)", "goal", "met?"],
        rows_of(rounds),
        notes,
    )


if __name__ == "__main__":
    main()
