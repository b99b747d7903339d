"""Run a trigger in a process of its own (as a triggerer would) and report what it delivered.

``python -m tests.integration.trigger_probe NAMESPACE WORKFLOW JOB [--stream] [--save-every S]`` runs
``ArgoWorkflowTrigger`` (the operators'); ``... --sensor NAMESPACE JOB DAG_ID RUN_ID TASK_ID`` runs
``ObjectPhaseTrigger`` as ``VolcanoJobSensor(log_task="mpimaster")`` defers to it, for that task instance.

It prints one JSON object: the event status, how many log lines arrived, whether the numbered lines
(``<tag>-<7 digits>``) came complete and in order, how many lines of 64 KiB or more arrived intact, and the
process's RSS at its first line (connected, all imported) and at its peak (KiB). With ``--stream`` it first prints
every task-log line as it comes (``LINE <text>``) and, after each completed store of the log cursors,
``SAVED <n>`` (``n``: the task-log lines shown when the stored cursors were taken), so that a test can kill it
mid-stream as a node loss or the OOM killer would, and know what the next trigger may repeat. ``--save-every S``
stores the cursors every S seconds instead of ``CURSOR_SAVE_SECONDS`` (a test sees several stores in seconds).
SIGTERM cancels the trigger, as a triggerer stopping cleanly does. The connection comes from
``AIRFLOW_CONN_KUBERNETES_DEFAULT``.

The sensor's trigger keeps its cursors in an XCom, through the triggerer's channel to Airflow. Here that channel
is Airflow's own request handling (``InProcessTestSupervisor``, as ``dag.test()`` uses) on the metadata database
of ``AIRFLOW_HOME``: the real XCom reads and writes, without the triggerer's socket.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
from types import SimpleNamespace


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:"))


class _AirflowChannel:
    """What a triggerer gives a trigger to reach Airflow (``SUPERVISOR_COMMS``), served in this process."""

    def __init__(self) -> None:
        import os
        import uuid

        import psutil
        import structlog
        from airflow.sdk.execution_time.supervisor import InProcessSupervisorComms, InProcessTestSupervisor

        supervisor = InProcessTestSupervisor(
            id=uuid.uuid4(),
            pid=os.getpid(),
            process=psutil.Process(),
            process_log=structlog.get_logger(logger_name="task").bind(),
            client=InProcessTestSupervisor._api_client(),
        )
        supervisor.comms = InProcessSupervisorComms(supervisor=supervisor)
        self.comms = supervisor.comms

    def send(self, msg):
        return self.comms.send(msg)

    async def asend(self, msg):
        return self.comms.send(msg)  # the database call blocks this probe's loop briefly: nothing else to serve


def _observe_stores(seen: dict, stream: bool, save_every: float | None) -> None:
    """Print ``SAVED <n>`` after each completed store; store every ``save_every`` seconds if given."""
    from airflow_provider_volcano_argo.engine import cursor_keeper

    if save_every is not None:
        cursor_keeper.CURSOR_SAVE_SECONDS = save_every
    original = cursor_keeper.CursorKeeper.__init__

    def init(self, book, store) -> None:
        async def observed(cursors: dict) -> bool:
            shown = seen["lines"]  # the cursors were taken just now, with no await in between
            stored = await store(cursors)
            if stored and stream:
                print("SAVED", shown, flush=True)
            return stored

        original(self, book, observed)

    cursor_keeper.CursorKeeper.__init__ = init


def _trigger(args: argparse.Namespace):
    connection = {"kubernetes_conn_id": "kubernetes_default"}
    if args.sensor:
        from airflow.sdk.execution_time import task_runner

        from airflow_provider_volcano_argo.models.phases import JOB_FAILED_PHASES, JOB_SUCCESS_PHASES
        from airflow_provider_volcano_argo.triggers.phase import ObjectPhaseTrigger

        namespace, job, dag_id, run_id, task_id = args.names
        trigger = ObjectPhaseTrigger(
            kind="volcano_job",
            name=job,
            namespace=namespace,
            target_phases=sorted(JOB_SUCCESS_PHASES),
            failure_phases=sorted(JOB_FAILED_PHASES),
            connection=connection,
            log_task="mpimaster",
        )
        # what the triggerer sets before running a trigger of a task instance
        trigger.task_instance = SimpleNamespace(dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=-1)
        task_runner.SUPERVISOR_COMMS = _AirflowChannel()
        return trigger
    from airflow_provider_volcano_argo.models.follow import FollowSpec
    from airflow_provider_volcano_argo.triggers.argo_workflow import ArgoWorkflowTrigger

    namespace, workflow, job = args.names
    spec = FollowSpec(namespace=namespace, workflow_name=workflow, job_name=job)
    return ArgoWorkflowTrigger(spec=spec.to_dict(), connection=connection)


def main(args: argparse.Namespace) -> dict:
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

    stream = args.stream
    _observe_stores(seen, stream, args.save_every)
    trigger = _trigger(args)
    trigger.log.info = emit

    async def run():
        task = asyncio.ensure_future(trigger.run().__anext__())
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)  # a clean triggerer stop
        try:
            return (await task).payload
        except asyncio.CancelledError:
            return {"status": "cancelled", "message": "SIGTERM"}

    payload = asyncio.run(run())
    return {
        "status": payload["status"],
        "message": payload.get("message"),
        "lines": seen["lines"],
        "numbered_in_order": seen["next"],
        "out_of_order": seen["out_of_order"],
        "long_intact": seen["long_intact"],
        "rss_before_kib": seen["rss_start"],
        # VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across fork + exec
        "rss_peak_kib": _status_kib("VmHWM"),
    }


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="+", help="NAMESPACE WORKFLOW JOB, or with --sensor NAMESPACE JOB DAG RUN TASK")
    parser.add_argument("--sensor", action="store_true")
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--save-every", type=float, default=None)
    args = parser.parse_args(argv)
    if len(args.names) != (5 if args.sensor else 3):
        parser.error("wrong number of names")
    return args


if __name__ == "__main__":
    print(json.dumps(main(arguments())))
