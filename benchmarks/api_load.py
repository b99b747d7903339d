"""API load: requests per run-minute the follower makes to the API server while a job runs for 5 minutes.

Counted from the API server's audit log, against polling the job every 10 s (cncf-kubernetes'
``KubernetesJobTrigger`` default) and every 1 s. All three follow the same job at the same time, each as its own
service account (same least-privilege Role), so the audit log tells their requests apart.

    .venv/bin/python benchmarks/api_load.py [--small] [--minutes M] [--cursor-save-seconds S]

``--cursor-save-seconds`` measures another bound on how often the log cursors are stored than the shipped
``CURSOR_SAVE_SECONDS`` (how it was chosen).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter

import benchlib  # first: it sets AIRFLOW_HOME before anything imports Airflow
from benchlib import JOB_TERMINAL, job_phase, say

from airflow_provider_volcano_argo.engine import cursor_keeper

GOAL_PER_MINUTE = 2.0
KINDS = ("watch", "list", "get", "patch", "log", "other")
LINE_EVERY_SECONDS = 5.0


async def poll_until_terminal(conn_id: str, ns: str, name: str, interval: float) -> float:
    """Poll as KubernetesJobTrigger does, with the same async hook: get the job every ``interval`` seconds."""
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook
    from airflow_provider_volcano_argo.models.resources import VOLCANO_JOBS

    hook = AsyncVolcanoArgoHook(conn_id=conn_id)
    while True:
        if job_phase(await hook.get_object(VOLCANO_JOBS, name, ns)) in JOB_TERMINAL:
            return time.time()
        await asyncio.sleep(interval)


async def follow_with_trigger(spec: dict) -> tuple[float, dict, int]:
    from airflow_provider_volcano_argo.triggers.argo_workflow import ArgoWorkflowTrigger

    trigger = ArgoWorkflowTrigger(spec=spec, connection={"kubernetes_conn_id": "kubernetes_default"})
    trigger._log = log = benchlib.QuietLog()
    event = await trigger.run().__anext__()
    return time.time(), event.payload, log.lines


def classify(entry: dict) -> str:
    verb = entry.get("verb", "")
    ref = entry.get("objectRef") or {}
    if ref.get("subresource") == "log":
        return "log"
    return verb if verb in KINDS else "other"


def audit_requests(path, usernames: list[str]) -> dict[str, list[dict]]:
    """Each user's requests, one per ``auditID``: kind, verb, URI, response code, time received (epoch seconds)."""
    import datetime

    requests: dict[str, dict[str, dict]] = {user: {} for user in usernames}
    with open(path) as audit:
        for line in audit:
            entry = json.loads(line)
            user = (entry.get("user") or {}).get("username")
            if user not in requests:
                continue
            request = requests[user].setdefault(
                entry["auditID"],
                {
                    "kind": classify(entry),
                    "verb": entry.get("verb", ""),
                    "uri": entry.get("requestURI", ""),
                    "at": datetime.datetime.fromisoformat(entry["requestReceivedTimestamp"].replace("Z", "+00:00")),
                    "code": None,
                },
            )
            if entry.get("stage") == "ResponseComplete":
                request["code"] = (entry.get("responseStatus") or {}).get("code")
    return {
        user: sorted(({**r, "at": r["at"].timestamp()} for r in by_id.values()), key=lambda r: r["at"])
        for user, by_id in requests.items()
    }


def main() -> None:
    args = benchlib.arguments(
        __doc__.split("\n\n")[0],
        lambda p: (
            p.add_argument("--minutes", type=float, default=None, help="job run time (default 5, --small 1)"),
            p.add_argument("--show-requests", action="store_true", help="list the trigger's requests on stderr"),
            p.add_argument("--cursor-save-seconds", type=float, default=None, help="instead of CURSOR_SAVE_SECONDS"),
        ),
    )
    if args.cursor_save_seconds is not None:
        cursor_keeper.CURSOR_SAVE_SECONDS = args.cursor_save_seconds
    save_seconds = cursor_keeper.CURSOR_SAVE_SECONDS
    minutes = args.minutes or (1.0 if args.small else 5.0)
    from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram

    with benchlib.sandbox(audit_log=True) as sb:
        ns = benchlib.prepare_namespace(sb, "bench-api-load")
        conn10, user10 = benchlib.extra_identity(sb, "bench-poll10", [ns])
        conn1, user1 = benchlib.extra_identity(sb, "bench-poll1", [ns])
        os.environ["AIRFLOW_CONN_BENCH_POLL10"] = conn10
        os.environ["AIRFLOW_CONN_BENCH_POLL1"] = conn1
        ours_user = benchlib.airflow_username()
        run_seconds = minutes * 60
        # the master prints a progress line every 5 s and exits after `minutes`
        sb.kubelet.programs.script(
            ScriptedProgram(
                count=int(run_seconds / LINE_EVERY_SECONDS),
                line_template="progress {i}",
                rate=1 / LINE_EVERY_SECONDS,
                duration=run_seconds,
            ),
            namespace=ns,
            container="mpimaster",
        )
        wf = benchlib.submit(sb, ns, "api-load")
        spec = benchlib.follow_spec(ns, wf, "api-load")
        say(f"following one job for {minutes:g} min with the trigger and two pollers ...")

        async def run() -> tuple:
            started = time.time()
            results = await asyncio.gather(
                follow_with_trigger(spec),
                poll_until_terminal("bench_poll10", ns, "api-load", 10.0),
                poll_until_terminal("bench_poll1", ns, "api-load", 1.0),
            )
            return started, results

        started, ((t_ours, payload, lines), t10, t1) = asyncio.run(run())
        time.sleep(1.0)  # let the audit backend write the last entries
        requests = audit_requests(sb.control_plane.audit_log_file, [ours_user, user10, user1])
        say(f"audit log: requests found for {[user for user in requests if requests[user]]}")
        if args.show_requests:
            for r in requests[ours_user]:
                say(f"  +{r['at'] - started:7.2f} s  {r['kind']:6} {r['code']}  {r['uri']}")
        counts = {user: Counter(r["kind"] for r in found) for user, found in requests.items()}
        sb.api.delete("workflows", wf["metadata"]["name"], ns)

    spans = {ours_user: t_ours - started, user10: t10 - started, user1: t1 - started}
    followers = [(ours_user, "ours (watch + log stream)"), (user10, "poll every 10 s"), (user1, "poll every 1 s")]
    rows = []
    for kind in KINDS:
        rows.append([kind] + [str(counts[user][kind]) for user, _ in followers] + ["", ""])
    rows.append(["total"] + [str(sum(counts[user].values())) for user, _ in followers] + ["", ""])
    rows.append(["followed for (min)"] + [f"{spans[user] / 60:.2f}" for user, _ in followers] + ["", ""])

    def per_minute(user: str) -> float:
        return (sum(counts[user].values()) - counts[user]["log"]) / (spans[user] / 60)

    ours_rate = per_minute(ours_user)
    rows.append(
        ["**per run-minute, without log**"]
        + [f"**{per_minute(user):.2f}**" for user, _ in followers]
        + [f"<= {GOAL_PER_MINUTE:g} + log stream", benchlib.met(ours_rate <= GOAL_PER_MINUTE)]
    )

    def steady(user: str) -> float:
        # requests received from 15 s after the start until the job ended: no start-up, no wind-down
        end = started + spans[user] - 1.0
        found = [r for r in requests[user] if started + 15 <= r["at"] <= end and r["kind"] != "log"]
        return len(found) / ((end - started - 15) / 60)

    rows.append(
        ["per minute in steady state, without log"] + [f"{steady(user):.2f}" for user, _ in followers] + ["", ""]
    )
    rows.append(
        ["log requests per run-minute"]
        + [f"{counts[user]['log'] / (spans[user] / 60):.2f}" for user, _ in followers]
        + ["", ""]
    )
    notes = [
        f"one job of `volcano-mpi` (1 worker); the master prints a line every {LINE_EVERY_SECONDS:g} s and exits "
        f"after {minutes:g} min; the trigger (ours), a 10 s poller and a 1 s poller start right after the submit "
        "and follow it at the same time",
        f"counted from the API server's audit log (level Metadata), one request per `auditID`, by `user.username`: "
        f"ours `{ours_user}` (the provider's least-privilege identity), pollers `{user10}` and `{user1}` (same Role)",
        "kinds: `verb` of the audit entry; `log` = `get` of `pods/log` (one long-running follow request while the "
        "master runs); pollers get the Volcano Job only (no log)",
        "per run-minute = all requests of that identity / minutes from the start of following to its end; steady "
        "state = requests received from 15 s after the start until 1 s before it ended",
        f"trigger event: status {payload['status']}, {lines} task-log lines, {payload.get('lines_streamed')} master "
        "lines streamed",
    ]
    mine = requests[ours_user]
    early = [r for r in mine if r["at"] < started + 15 and r["kind"] != "log"]
    patches = [r for r in mine if r["kind"] == "patch"]
    logs = [r["at"] for r in mine if r["kind"] == "log"]
    notes.append(
        f"ours without log: {len(early)} requests in the first 15 s ("
        + ", ".join(f"{k} {sum(r['kind'] == k for r in early)}" for k in KINDS if any(r["kind"] == k for r in early))
        + f"), {len(patches)} PATCH of the Workflow's log-cursor annotation (when they moved, at most every "
        f"`CURSOR_SAVE_SECONDS` = {save_seconds:g} s; none at the end: the event carries them; at "
        + ", ".join(f"+{r['at'] - started:.0f} s" for r in patches)
        + ")"
    )
    if len(logs) > 1:
        notes.append(
            f"ours opened `pods/log` {len(logs)} times, at "
            + ", ".join(f"+{at - started:.0f} s" for at in logs)
            + " after the start (a follow, re-opened from its `sinceTime` cursor when it ends; one read of the tail "
            "once the container ended; a refusal while the container is being created counts too)"
        )
    option = "" if args.cursor_save_seconds is None else f" --cursor-save-seconds {args.cursor_save_seconds:g}"
    benchlib.report(
        f"API load (requests per run-minute, job running {minutes:g} min)",
        [f"command: `.venv/bin/python benchmarks/api_load.py{' --small' if args.small else ''}{option}`"],
        ["requests", "ours (watch + log stream)", "poll every 10 s", "poll every 1 s", "goal", "met?"],
        rows,
        notes,
    )


if __name__ == "__main__":
    main()
