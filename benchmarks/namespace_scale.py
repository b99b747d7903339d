"""Namespace scale: a triggerer following N runs, in an empty namespace and beside objects that are not its own.

Foreign objects: finished pods (other teams' Volcano jobs), finished Workflows (Argo without archiving) and
completed Volcano Jobs. Ours (watches narrowed by the provider's label) against the baseline of the same run: the
same trigger with ``FollowSpec.labelled`` empty, i.e. as triggers deferred by earlier versions watch (namespace-wide).

    .venv/bin/python benchmarks/namespace_scale.py [--small] [--runs 50] [--pods 2000,10000]
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib  # first: it sets AIRFLOW_HOME before anything imports Airflow
from benchlib import say

GOAL_RSS_GROWTH_KIB = 5 * 1024
GOAL_BYTES_RATIO = 1.2
FOREIGN = "foreign"
LABELLED = ["jobs", "pods", "workflow"]
PODS_PER_FOREIGN_JOB = 8  # 1 master + 7 workers


# ---------------------------------------------------------------------------------------------------- child
def child_main(args) -> None:
    """One event loop following every run; prints one JSON result (bytes, RSS, timings, cached objects)."""
    import asyncio

    from aiohttp import client_proto, streams

    from airflow_provider_volcano_argo.engine.informer import shared_watches
    from airflow_provider_volcano_argo.engine.workflow_follower import WorkflowFollower
    from airflow_provider_volcano_argo.triggers.argo_workflow import ArgoWorkflowTrigger

    async def no_store(self, cursors: dict) -> bool:
        return False

    # no cursor PATCH in any child: periodic ones do not depend on the namespace, and the one on the way out of a
    # cancelled follower would make the next child take the log up where this one stopped
    WorkflowFollower._store_cursors = no_store
    received, decoded = [0], [0]
    data_received, feed_data = client_proto.ResponseHandler.data_received, streams.StreamReader.feed_data

    def counted(self, data: bytes) -> None:  # every byte of every API response as read from TLS (headers too)
        received[0] += len(data)
        data_received(self, data)

    def counted_body(self, data: bytes, *args) -> bool:  # response bodies once decompressed (gzip'ed lists)
        decoded[0] += len(data)
        return feed_data(self, data, *args)

    client_proto.ResponseHandler.data_received = counted
    streams.StreamReader.feed_data = counted_body
    specs = json.loads(Path(args.specs).read_text())
    if args.child == "baseline":
        specs = [{**spec, "labelled": []} for spec in specs]
    streaming: set[int] = set()
    ended: list[str] = []

    async def follow(i: int, spec: dict) -> None:
        trigger = ArgoWorkflowTrigger(spec=spec, connection={"kubernetes_conn_id": "kubernetes_default"})
        trigger._log = benchlib.StreamingLog(i, streaming)
        event = await trigger.run().__anext__()
        ended.append(f"{spec['job_name']}: {event.payload['status']} {event.payload['message']}")

    async def main() -> dict:
        rss_imports = benchlib.rss_kib()
        started_at, started = time.time(), time.monotonic()
        tasks = [asyncio.create_task(follow(i, spec)) for i, spec in enumerate(specs)]
        deadline = started + args.ramp_timeout
        while len(streaming) < len(specs) and time.monotonic() < deadline and not all(t.done() for t in tasks):  # noqa: ASYNC110 - a ramp-up deadline, polled
            await asyncio.sleep(0.2)
        all_streaming = time.monotonic() - started
        await asyncio.sleep(args.window)
        cached = {f"{key[1].plural} {key[3].label or '(none)'}": len(w.objects) for key, w in shared_watches().items()}
        result = {
            "runs": len(specs),
            "streaming": len(streaming),
            "seconds_to_all_streaming": all_streaming,
            "rss_imports_kib": rss_imports,
            "rss_end_kib": benchlib.rss_kib(),
            "bytes_received": received[0],
            "bytes_decoded": decoded[0],
            "started_at": started_at,
            "ended_at": time.time(),
            "cached": cached,
            "ended_early": ended[:5],
            "errors": [repr(t.exception()) for t in tasks if t.done() and not t.cancelled() and t.exception()][:5],
        }
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return result

    print(json.dumps(asyncio.run(main())), flush=True)


def run_child(mode: str, specs_file: str, window: float, ramp_timeout: float) -> dict:
    argv = [
        sys.executable, __file__, "--child", mode, "--specs", specs_file, "--window", str(window),
        "--ramp-timeout", str(ramp_timeout),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=ramp_timeout + window + 300, env=os.environ)
    if done.returncode != 0:
        raise RuntimeError(f"{mode} child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------------- foreign objects
def _stamp(seconds_ago: float) -> str:
    at = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds_ago)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def foreign_pod(i: int) -> tuple[dict, dict]:
    """Return (body, status) of a finished pod of another team's Volcano job, bound to a node no kubelet owns."""
    job, role = (
        f"{FOREIGN}-job-{i // PODS_PER_FOREIGN_JOB:05d}",
        "mpimaster" if i % PODS_PER_FOREIGN_JOB == 0 else "mpiworker",
    )
    name = f"{job}-{role}-{i % PODS_PER_FOREIGN_JOB}"
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"volcano.sh/job-name": job, "volcano.sh/task-spec": role, "volcano.sh/queue-name": "default",
                       "volcano.sh/job-namespace": "x", "team": "other"},
            "annotations": {"scheduling.k8s.io/group-name": f"{job}-0000", "volcano.sh/job-name": job,
                            "volcano.sh/task-spec": role, "volcano.sh/job-version": "0"},
        },
        "spec": {
            "nodeName": f"{FOREIGN}-node-{i % 16}",  # no emulated kubelet owns it, and no podgc runs
            "restartPolicy": "Never",
            "containers": [{
                "name": role, "image": "registry.example.com/team/solver:2026.11",
                "command": ["/bin/sh", "-c", "exec mpiexec --allow-run-as-root -np 8 /opt/solver --input /data/in"],
                "env": [{"name": f"SOLVER_OPTION_{k}", "value": "on"} for k in range(6)],
                "resources": {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"cpu": "4", "memory": "16Gi"}},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }  # fmt: skip
    status = {
        "phase": "Succeeded",
        "conditions": [{"type": t, "status": "False", "reason": "PodCompleted", "lastTransitionTime": _stamp(3600)}
                       for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "hostIP": "10.0.0.1", "podIP": f"10.1.{i // 250}.{i % 250}", "startTime": _stamp(7200),
        "containerStatuses": [{
            "name": role, "ready": False, "restartCount": 0, "image": "registry.example.com/team/solver:2026.11",
            "imageID": "registry.example.com/team/solver@sha256:" + "0" * 64, "containerID": "containerd://" + "1" * 64,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": _stamp(7100),
                                     "finishedAt": _stamp(3600)}},
        }],
    }  # fmt: skip
    return body, status


def foreign_workflow(i: int) -> dict:
    """Return a finished Workflow (created finished: Workflows have no status subresource; Argo leaves it alone)."""
    name = f"{FOREIGN}-wf-{i:05d}"
    nodes = {
        f"{name}-{k}": {"id": f"{name}-{k}", "name": f"{name}.step-{k}", "displayName": f"step-{k}", "type": "Pod",
                        "templateName": "step", "phase": "Succeeded", "startedAt": _stamp(7200),
                        "finishedAt": _stamp(3600), "progress": "1/1", "hostNodeName": "node-a",
                        "outputs": {"exitCode": "0"}}
        for k in range(4)
    }  # fmt: skip
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": name, "labels": {"workflows.argoproj.io/completed": "true",
                                              "workflows.argoproj.io/phase": "Succeeded", "team": "other"}},
        "spec": {"entrypoint": "main",
                 "templates": [{"name": "step", "container": {"image": "alpine", "command": ["true"]}}]},
        "status": {"phase": "Succeeded", "startedAt": _stamp(7200), "finishedAt": _stamp(3600), "progress": "4/4",
                   "nodes": nodes},
    }  # fmt: skip


def foreign_job(i: int) -> tuple[dict, dict]:
    """Return (body, status) of a completed Volcano Job of another team."""
    pod = foreign_pod(i * PODS_PER_FOREIGN_JOB)[0]
    body = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": f"{FOREIGN}-job-{i:05d}", "labels": {"team": "other"}},
        "spec": {
            "minAvailable": PODS_PER_FOREIGN_JOB, "schedulerName": "volcano", "queue": "default",
            "tasks": [
                {"name": "mpimaster", "replicas": 1, "template": {"spec": pod["spec"]}},
                {"name": "mpiworker", "replicas": PODS_PER_FOREIGN_JOB - 1, "template": {"spec": pod["spec"]}},
            ],
        },
    }  # fmt: skip
    status = {"state": {"phase": "Completed", "lastTransitionTime": _stamp(3600)}, "minAvailable": 8,
              "succeeded": 8, "version": 1, "retryCount": 0}  # fmt: skip
    return body, status


def leave_foreign_jobs_alone(sb) -> None:
    """Make the emulated Volcano job controller skip the foreign Jobs.

    A Job's status is a subresource: it is created without one, and the emulator would start it (PodGroup, pods)
    before its status says Completed. Upstream's controller does nothing more with a Completed Job.
    """
    from airflow_provider_volcano_argo.sandbox.volcano.controller import VolcanoJobController

    for component in sb.components:
        if isinstance(component, VolcanoJobController):
            reconcile = component.reconcile
            component.reconcile = lambda key, r=reconcile: None if key[1].startswith(FOREIGN) else r(key)


def add_foreign(sb, ns: str, pods: tuple[int, int], workflows: tuple[int, int], jobs: tuple[int, int]) -> None:
    """Create foreign pods, Workflows and Jobs numbered in the given [from, to) ranges, finished."""
    from concurrent.futures import ThreadPoolExecutor

    def pod(i: int) -> None:
        body, status = foreign_pod(i)
        created = sb.api.create("pods", body, ns)
        sb.api.patch("pods", created["metadata"]["name"], {"status": status}, ns, subresource="status")

    def job(i: int) -> None:
        body, status = foreign_job(i)
        created = sb.api.create("vcjobs", body, ns)
        sb.api.replace("vcjobs", {**created, "status": status}, subresource="status")

    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(job, range(*jobs)))
        list(pool.map(lambda i: sb.api.create("workflows", foreign_workflow(i), ns), range(*workflows)))
        list(pool.map(pod, range(*pods)))
    say(f"foreign objects up to {pods[1]} pods, {workflows[1]} Workflows, {jobs[1]} Jobs in "
        f"{time.monotonic() - started:.0f} s")  # fmt: skip


# ---------------------------------------------------------------------------------------------------- audit log
def audit_of(path, username: str, start: float, end: float) -> dict:
    """Count one user's requests received in [start, end] (one per ``auditID``).

    By verb, and the unnarrowed lists and watches: neither ``labelSelector`` nor ``fieldSelector`` in the URI.
    """
    seen: dict[str, dict] = {}
    with open(path) as audit:
        for line in audit:
            entry = json.loads(line)
            if (entry.get("user") or {}).get("username") != username or entry["auditID"] in seen:
                continue
            at = datetime.datetime.fromisoformat(entry["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
            if start <= at <= end:
                seen[entry["auditID"]] = entry
    verbs: dict[str, int] = {}
    unnarrowed: list[str] = []
    for entry in seen.values():
        sub = (entry.get("objectRef") or {}).get("subresource")
        verb = "log" if sub == "log" else entry.get("verb", "")
        verbs[verb] = verbs.get(verb, 0) + 1
        uri = entry.get("requestURI", "")
        if verb in ("list", "watch") and "labelSelector=" not in uri and "fieldSelector=" not in uri:
            unnarrowed.append(uri)
    return {"requests": len(seen), "verbs": verbs, "unnarrowed": unnarrowed}


# ---------------------------------------------------------------------------------------------------- parent
def measure(runs: int, pod_sizes: list[int], window: float) -> list[dict]:
    """One sandbox, N long-running followed runs; ours and the baseline with no foreign objects, then at each size."""
    from airflow_provider_volcano_argo.models.names import MANAGED_BY, MANAGED_BY_LABEL
    from airflow_provider_volcano_argo.sandbox import NodeCapacity
    from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram

    # each run: a master, a worker and the resource step's executor pod (it polls until the Job ends)
    nodes = [NodeCapacity("bench-node-0", cpu="256", memory="1024Gi", pods=3 * runs + 20)]
    results: list[dict] = []
    with benchlib.sandbox(audit_log=True, nodes=nodes, time_scale=1.0) as sb, benchlib.JobPhaseWatch(sb) as watch:
        ns = benchlib.prepare_namespace(sb, "bench-nsscale")
        leave_foreign_jobs_alone(sb)
        # one line, then quiet: each child reads the same log bytes, whenever it runs
        sb.kubelet.programs.script(
            ScriptedProgram(count=1, line_template="tick {i}", duration=24 * 3600), namespace=ns, container="mpimaster"
        )
        specs = []
        for i in range(runs):
            job = f"ns-{i:03d}"
            wf = benchlib.submit(sb, ns, job, cpu="1m", memory="1Mi", labels={MANAGED_BY_LABEL: MANAGED_BY})
            specs.append({**benchlib.follow_spec(ns, wf, job), "labelled": LABELLED})
        for spec in specs:
            watch.wait_phase(ns, spec["job_name"], ("Running",), timeout=max(120.0, 3.0 * runs))
        say(f"{runs} jobs Running")
        user = benchlib.airflow_username()
        ramp_timeout = max(90.0, 2.0 * runs)
        sizes = [(0, 0, 0)] + [(p, p // 4, p // PODS_PER_FOREIGN_JOB) for p in pod_sizes]
        done = (0, 0, 0)
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="bench-nsscale-") as specs_file:
            json.dump(specs, specs_file)
            specs_file.flush()
            for size in sizes:
                if size != done:
                    add_foreign(sb, ns, (done[0], size[0]), (done[1], size[1]), (done[2], size[2]))
                    done = size
                for mode in ("ours", "baseline"):
                    result = run_child(mode, specs_file.name, window, ramp_timeout)
                    time.sleep(1.0)  # let the audit backend write the last entries
                    result["audit"] = audit_of(sb.control_plane.audit_log_file, user, result["started_at"],
                                               result["ended_at"])  # fmt: skip
                    result.update(mode=mode, pods=size[0], workflows=size[1], jobs=size[2])
                    say(f"{mode} beside {size}: {json.dumps(result)}")
                    results.append(result)
        sb.delete_namespace(ns)
    return results


def rows_of(results: list[dict]) -> list[list[str]]:
    """Return one row per (mode, foreign size), with ratios against the same mode in the empty namespace."""
    empty = {r["mode"]: r for r in results if r["pods"] == 0}
    rows = []
    for r in results:
        base = empty[r["mode"]]
        minutes = (r["ended_at"] - r["started_at"]) / 60 * r["runs"]
        base_minutes = (base["ended_at"] - base["started_at"]) / 60 * base["runs"]
        per_minute, base_per_minute = r["audit"]["requests"] / minutes, base["audit"]["requests"] / base_minutes
        growth = r["rss_end_kib"] - base["rss_end_kib"]
        ratio = r["bytes_received"] / base["bytes_received"]
        decoded_ratio = r["bytes_decoded"] / base["bytes_decoded"]
        foreign = r["pods"] > 0
        ours = r["mode"] == "ours"
        verbs = ", ".join(f"{k} {v}" for k, v in sorted(r["audit"]["verbs"].items()))
        rows.append([
            f"{'ours (narrowed by label)' if ours else 'baseline (namespace-wide, as before)'}",
            f"{r['pods']:,} pods, {r['workflows']:,} Workflows, {r['jobs']:,} Jobs" if foreign else "none",
            f"{r['streaming']}/{r['runs']} in {r['seconds_to_all_streaming']:.1f} s",
            f"{r['rss_end_kib'] / 1024:.1f} MiB ({growth / 1024:+.1f})",
            f"{r['bytes_received'] / 1024:,.0f} KiB ({ratio:.2f}x)",
            f"{r['bytes_decoded'] / 1024:,.0f} KiB ({decoded_ratio:.2f}x)",
            f"{per_minute:.2f} ({per_minute / base_per_minute:.2f}x): {verbs}",
            f"{len(r['audit']['unnarrowed'])}",
            "; ".join(f"{k}: {v}" for k, v in sorted(r["cached"].items())),
            (f"RSS {benchlib.met(growth <= GOAL_RSS_GROWTH_KIB)}, bytes "
             f"{benchlib.met(ratio <= GOAL_BYTES_RATIO and decoded_ratio <= GOAL_BYTES_RATIO)}, "
             f"req/run-min {benchlib.met(per_minute <= base_per_minute * 1.05)}, "
             f"narrowed {benchlib.met(not r['audit']['unnarrowed'])}") if ours and foreign else "",
        ])  # fmt: skip
    return rows


def main() -> None:
    def extra(parser):
        import argparse

        parser.add_argument("--runs", type=int, default=None, help="followed runs (50; --small 10)")
        parser.add_argument("--pods", default=None, help="foreign pod counts, comma-separated (2000; --small 400)")
        parser.add_argument("--window", type=float, default=None, help="seconds followed after all stream (45; 15)")
        parser.add_argument("--child", choices=("ours", "baseline"), help=argparse.SUPPRESS)
        parser.add_argument("--specs", help=argparse.SUPPRESS)
        parser.add_argument("--ramp-timeout", type=float, default=120.0, help=argparse.SUPPRESS)

    args = benchlib.arguments(__doc__.split("\n\n")[0], extra)
    if args.child:
        child_main(args)
        return
    runs = args.runs or (10 if args.small else 50)
    pod_sizes = [int(p) for p in args.pods.split(",")] if args.pods else ([400] if args.small else [2000])
    window = args.window or (15.0 if args.small else 45.0)
    results = measure(runs, pod_sizes, window)
    notes = [
        f"one sandbox with audit log (upstream timings, `time_scale=1.0`); {runs} Workflows of `volcano-mpi` "
        "submitted as the operator submits them (Workflow labelled `app.kubernetes.io/managed-by`; the template "
        "labels the Job and its pods), 1 worker each, all Running; each master prints one line and stays up",
        f"each row: a fresh subprocess (the 'triggerer') starts the {runs} followers at once in one event loop, "
        f"waits until each has forwarded the master's line, follows on for {window:g} s, and stops; ours = "
        f"`FollowSpec(labelled={LABELLED})` as the operator now defers; baseline = the same trigger with "
        "`labelled=[]` (a trigger deferred by an earlier version: namespace-wide watches, filtered locally)",
        "foreign objects (added between rows, never touched by the followers' runs): finished pods of other teams' "
        f"Volcano jobs ({PODS_PER_FOREIGN_JOB} per job, one `mpimaster`, labelled `volcano.sh/task-spec` like ours, "
        "status Succeeded, bound to a node no emulated kubelet owns), finished Workflows (phase Succeeded, label "
        "`workflows.argoproj.io/completed`, 4 nodes in status), Volcano Jobs `Completed` (the emulated Volcano "
        "controller is told to skip them: created without status, it would start them first)",
        "RSS: VmRSS of the child at its end (in brackets: minus the same mode's in the empty namespace); bytes "
        "received: every byte of every API response the child read (aiohttp's `ResponseHandler.data_received`, "
        "after TLS, headers included: lists, watch events, the log reads) from the first request to its end; bytes "
        "of response bodies: the same bodies once decompressed (`StreamReader.feed_data`; the API server gzips "
        "large list responses, so the wire figure can shrink as a list grows); ratios: to the same mode in the "
        "empty namespace; requests: the API server's audit log, the child's service account, one per `auditID`, "
        "divided by runs x minutes followed (ratio: to the same mode, empty); unnarrowed = lists and watches whose "
        "request URI has neither `labelSelector` nor `fieldSelector`; cursor stores are switched off in the children "
        "(at most one PATCH per run per 90 s, whatever the namespace holds; the one on a cancelled follower's way "
        "out would make the next child start after the master's line)",
        f"goals (ours, foreign vs empty): RSS growth <= {GOAL_RSS_GROWTH_KIB // 1024} MiB, bytes <= "
        f"{GOAL_BYTES_RATIO}x, requests per run-minute unchanged (here: within 5 %), every list and watch narrowed",
    ]
    for r in results:
        if r["errors"] or r["ended_early"]:
            notes.append(f"{r['mode']} beside {r['pods']} pods: errors {r['errors']}, ended early {r['ended_early']}")
        if r["audit"]["unnarrowed"]:
            notes.append(f"{r['mode']} beside {r['pods']} pods, unnarrowed: {sorted(set(r['audit']['unnarrowed']))}")
    benchlib.report(
        "Namespace scale (a triggerer's cost beside objects that are not its own)",
        [
            f"command: `.venv/bin/python benchmarks/namespace_scale.py{' --small' if args.small else ''}"
            f"{f' --pods {args.pods}' if args.pods else ''}`"
        ],  # fmt: skip
        [
            "follower",
            "foreign objects",
            "streaming",
            "RSS at end",
            "bytes received (wire, after TLS)",
            "bytes of response bodies (decompressed)",
            "requests per run-minute",
            "unnarrowed lists/watches",
            "objects cached by the shared watches",
            "goals met?",
        ],  # fmt: skip
        rows_of(results),
        notes,
    )


if __name__ == "__main__":
    main()
