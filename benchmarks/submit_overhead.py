"""Submit overhead: from ``VolcanoMPIJobOperator.execute(context)`` starting to the deferral (``TaskDeferred``).

Against creating the same Workflow with one raw API call.

    .venv/bin/python benchmarks/submit_overhead.py [--small] [--runs N]
"""

from __future__ import annotations

import datetime
import json
import statistics
import time
from collections import Counter

import benchlib  # first: it sets AIRFLOW_HOME before anything imports Airflow
from benchlib import percentile, say

DAG_ID = "bench_submit"
TASK_ID = "mpi"


class MinimalTI:
    """What ``execute`` reads from ``context["ti"]`` (RuntimeTaskInstance's attributes and ``xcom_push``)."""

    def __init__(self, run_id: str):
        self.dag_id, self.task_id, self.run_id = DAG_ID, TASK_ID, run_id
        self.map_index, self.try_number = -1, 1
        self.start_date = datetime.datetime.now(datetime.timezone.utc)
        self.xcom: dict = {}

    def xcom_push(self, key: str, value) -> None:
        self.xcom[key] = json.loads(json.dumps(value))  # serialized, as the supervisor would


class MemoryStateStore:
    """``task_state_store`` (Airflow >= 3.3) kept in memory."""

    def __init__(self):
        self.data: dict = {}

    def get(self, key: str, default=None):
        return self.data.get(key, default)

    def set(self, key: str, value) -> None:
        self.data[key] = value


class Phases:
    """Exclusive time spent in a few hook methods during one ``execute()`` (nested calls are subtracted)."""

    def __init__(self):
        self.totals: Counter = Counter()
        self.stack: list[list] = []

    def wrap(self, owner, attribute: str, label: str) -> None:
        original = owner.__dict__[attribute]
        is_classmethod = isinstance(original, classmethod)
        function = original.__func__ if is_classmethod else original
        phases = self

        def timed(*a, **k):
            phases.stack.append([label, time.perf_counter(), 0.0])
            try:
                return function(*a, **k)
            finally:
                name, started, children = phases.stack.pop()
                spent = time.perf_counter() - started
                phases.totals[name] += spent - children
                if phases.stack:
                    phases.stack[-1][2] += spent

        setattr(owner, attribute, classmethod(timed) if is_classmethod else timed)

    def take(self) -> Counter:
        taken, self.totals = self.totals, Counter()
        return taken


def audit_counts(path, user: str, since: float, until: float) -> Counter:
    counts: Counter = Counter()
    seen: set[str] = set()
    with open(path) as audit:
        for line in audit:
            entry = json.loads(line)
            if (entry.get("user") or {}).get("username") != user or entry["auditID"] in seen:
                continue
            at = datetime.datetime.fromisoformat(entry["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
            if since <= at <= until:
                seen.add(entry["auditID"])
                ref = entry.get("objectRef") or {}
                counts[f"{entry['verb']} {ref.get('resource', '')}"] += 1
    return counts


def main() -> None:
    args = benchlib.arguments(
        __doc__.split("\n\n")[0],
        lambda p: p.add_argument("--runs", type=int, default=None, help="runs (default 50, --small 5)"),
    )
    runs = args.runs or (5 if args.small else 50)

    from airflow.exceptions import TaskDeferred
    from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook
    from kubernetes import client, config

    from airflow_provider_volcano_argo.hooks.volcano_argo import VolcanoArgoHook
    from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator
    from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram

    phases = Phases()
    phases.wrap(KubernetesHook, "get_connection", "connection lookup")
    phases.wrap(KubernetesHook, "get_conn", "kubeconfig + API client")
    phases.wrap(VolcanoArgoHook, "list_objects", "list Workflows (reattach check)")
    phases.wrap(VolcanoArgoHook, "get_object", "get WorkflowTemplate")
    phases.wrap(VolcanoArgoHook, "create_object", "create Workflow")
    breakdown: list[Counter] = []
    ours: list[float] = []
    raw_warm: list[float] = []
    raw_cold: list[float] = []
    with benchlib.sandbox(audit_log=True) as sb:
        ns = benchlib.prepare_namespace(sb, "bench-submit")
        sb.kubelet.programs.script(ScriptedProgram(lines=["done"]), namespace=ns, container="mpimaster")
        operator_kwargs = dict(
            task_id=TASK_ID, namespace=ns, workers=1, cpu_per_worker="10m", memory_per_worker="16Mi", max_retry=1
        )
        created: list[str] = []

        def ours_once(i: int) -> tuple[float, dict]:
            op = VolcanoMPIJobOperator(**operator_kwargs)  # a fresh operator per run, as a worker deserializes one
            context = {"ti": MinimalTI(f"manual__bench-{i:03d}"), "task_state_store": MemoryStateStore()}
            phases.take()
            started = time.perf_counter()
            try:
                op.execute(context)
            except TaskDeferred as deferred:
                elapsed = time.perf_counter() - started
                spent = phases.take()
                spent["everything else (validation, names, XCom, defer)"] = elapsed - sum(spent.values())
                breakdown.append(spent)
                created.append(deferred.trigger.spec["workflow_name"])
                return elapsed, context
            raise RuntimeError("execute() returned without deferring")

        # warm-up (imports, first connection lookup): not counted
        ours_once(999)
        breakdown.clear()
        body_source = VolcanoMPIJobOperator(**operator_kwargs)
        window_start = time.time()
        for i in range(runs):
            elapsed, _ = ours_once(i)
            ours.append(elapsed)
        window_end = time.time()
        say(f"ours: median {statistics.median(ours) * 1000:.1f} ms over {runs} runs")

        # the same Workflow (what build_workflow makes for a run) created with one call
        def body(i: int, kind: str) -> dict:
            ti = MinimalTI(f"manual__bench-{kind}-{i:03d}")
            context = {"ti": ti}
            parameters = body_source.workflow_parameters(context)
            name = f"bench-{kind}-{i:03d}"
            return body_source.build_workflow(context, name, parameters)

        sb.api.create("workflows", body(999, "warm"), ns)  # warm-up
        created.append(body(999, "warm")["metadata"]["name"])
        for i in range(runs):
            manifest = body(i, "warm")
            started = time.perf_counter()
            sb.api.create("workflows", manifest, ns)
            raw_warm.append(time.perf_counter() - started)
            created.append(manifest["metadata"]["name"])
        for i in range(runs):
            manifest = body(i, "cold")
            started = time.perf_counter()
            configuration = client.Configuration()
            config.load_kube_config(config_file=str(sb.airflow_kubeconfig), client_configuration=configuration)
            with client.ApiClient(configuration) as api_client:
                client.CustomObjectsApi(api_client).create_namespaced_custom_object(
                    "argoproj.io", "v1alpha1", ns, "workflows", manifest
                )
            raw_cold.append(time.perf_counter() - started)
            created.append(manifest["metadata"]["name"])
        say(
            f"raw: warm median {statistics.median(raw_warm) * 1000:.1f} ms, "
            f"new client median {statistics.median(raw_cold) * 1000:.1f} ms"
        )
        time.sleep(1.0)
        requests = audit_counts(sb.control_plane.audit_log_file, benchlib.airflow_username(), window_start, window_end)
        for name in created:
            sb.api.delete("workflows", name, ns)

    def ms(values: list[float], q: float) -> str:
        return f"{percentile(values, q) * 1000:.1f} ms"

    rows = [
        [f"p{q}", ms(ours, q), ms(raw_warm, q), ms(raw_cold, q), "", ""] for q in (50, 95)
    ]  # no goal was set for this one
    rows[0][4], rows[0][5] = "(none set)", "n/a"
    rows.append(["max", ms(ours, 100), ms(raw_warm, 100), ms(raw_cold, 100), "", ""])
    labels = list(dict.fromkeys(k for spent in breakdown for k in spent))
    for label in labels:
        rows.append([f"of which: {label} (median)", f"{statistics.median(s[label] for s in breakdown) * 1000:.1f} ms",
                     "", "", "", ""])  # fmt: skip
    per_run = ", ".join(f"{v / runs:g} {k}" for k, v in sorted(requests.items()))
    notes = [
        "method: `VolcanoMPIJobOperator(...).execute(context)` called directly, timed from the call to the "
        "`TaskDeferred` it raises (`time.perf_counter`); `context` is minimal: `ti` (dag_id, task_id, run_id, "
        "map_index, try_number, start_date, `xcom_push` into a dict) and an in-memory `task_state_store`, so "
        "Airflow's own XCom / state-store round trips to the supervisor are NOT included; a fresh operator and "
        "run_id per run; the connection comes from `AIRFLOW_CONN_KUBERNETES_DEFAULT` (least-privilege kubeconfig)",
        f"{runs} runs each, after one uncounted warm-up; raw (warm client) = `sb.api.create('workflows', body)` with "
        "the body `build_workflow()` makes, on the sandbox's admin client whose connection is already open; raw "
        "(new client) = load the same least-privilege kubeconfig, new `kubernetes` ApiClient, one "
        "`create_namespaced_custom_object` (TLS handshake included)",
        f"API requests per `execute()` (audit log, Airflow identity): {per_run}",
        "of which: exclusive time inside `KubernetesHook.get_connection` / `get_conn` and `VolcanoArgoHook."
        "list_objects` / `get_object` / `create_object` (wrapped by the benchmark); the first request of a run "
        "also pays the TLS handshake of the new client",
    ]
    benchlib.report(
        "Submit overhead (execute() start -> TaskDeferred)",
        [f"command: `.venv/bin/python benchmarks/submit_overhead.py{' --small' if args.small else ''}`"],
        ["submit", "ours: execute() -> deferral", "raw create (warm client)", "raw create (new client)", "goal",
         "met?"],
        rows,
        notes,
    )  # fmt: skip


if __name__ == "__main__":
    main()
