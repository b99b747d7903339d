"""Run ``ArgoWorkflowTrigger`` in a process of its own (as a triggerer would) and report what it delivered.

``python -m tests.integration.trigger_probe NAMESPACE WORKFLOW JOB [--stream]`` prints one JSON object: the event
status, how many log lines arrived, whether the numbered lines (``<tag>-<7 digits>``) came complete and in order,
how many lines of 64 KiB or more arrived intact, and the process's RSS at its first line (connected, all imported)
and at its peak (KiB). With ``--stream`` it first prints every task-log line as it comes (``LINE <text>``), so
that a test can kill it mid-stream as a node loss or the OOM killer would. The connection comes from
``AIRFLOW_CONN_KUBERNETES_DEFAULT``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:"))


def main(namespace: str, workflow: str, job: str, stream: bool = False) -> dict:
    from airflow_provider_volcano_argo.models.follow import FollowSpec
    from airflow_provider_volcano_argo.triggers.argo_workflow import ArgoWorkflowTrigger

    numbered = re.compile(r"^[A-Za-z0-9]+-(\d{7})$")
    seen = {"lines": 0, "next": 0, "out_of_order": 0, "long_intact": 0, "rss_start": 0}

    def emit(message: str, *args) -> None:
        text = message % args if args else message
        if stream:
            print("LINE", text, flush=True)
        if not seen["lines"]:  # connected, everything imported: the baseline for growth
            seen["rss_start"] = _status_kib("VmRSS")
        seen["lines"] += 1
        match = numbered.match(text)
        if match:
            if int(match.group(1)) == seen["next"]:
                seen["next"] += 1
            else:
                seen["out_of_order"] += 1
        elif len(text) >= 65536 and text.endswith("#end") and set(text[10:-4]) == {"x"}:
            seen["long_intact"] += 1

    spec = FollowSpec(namespace=namespace, workflow_name=workflow, job_name=job)
    trigger = ArgoWorkflowTrigger(spec=spec.to_dict(), connection={"kubernetes_conn_id": "kubernetes_default"})
    trigger.log.info = emit
    event = asyncio.run(trigger.run().__anext__())
    return {
        "status": event.payload["status"],
        "message": event.payload["message"],
        "lines": seen["lines"],
        "numbered_in_order": seen["next"],
        "out_of_order": seen["out_of_order"],
        "long_intact": seen["long_intact"],
        "rss_before_kib": seen["rss_start"],
        # VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across fork + exec
        "rss_peak_kib": _status_kib("VmHWM"),
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4], stream="--stream" in sys.argv[4:])))
