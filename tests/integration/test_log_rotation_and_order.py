"""Container logs as the kubelet really serves them: rotated at ``containerLogMaxSize`` (issue 16 row k), and
stdout and stderr lines out of stamp order (row l).
"""

from __future__ import annotations

import asyncio
import importlib
import json
from dataclasses import dataclass

import pytest

from airflow_provider_volcano_argo.models.follow import FollowSpec
from airflow_provider_volcano_argo.models.log_cursor import format_timestamp, parse_log_line
from airflow_provider_volcano_argo.models.names import CURSOR_ANNOTATION
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from airflow_provider_volcano_argo.triggers.argo_workflow import ArgoWorkflowTrigger
from tests.conftest import keep_for_secret_scan
from tests.integration.helpers import capture_task_log, install_mpi_templates, submit_from_template, wait_for

pytestmark = pytest.mark.integration

JOB = "rotated"
POD = f"{JOB}-mpimaster-0"
#: 80 lines of ~230 bytes at 10 a second: the log rotates every ~35 lines (8 KiB) or ~18 (4 KiB)
LINES = 80
NOTICE = "was rotated by the kubelet (containerLogMaxSize)"
START_NOTICE = "may have rotated those lines away (containerLogMaxSize) before they were read"


def _master(**program) -> ScriptedProgram:
    return ScriptedProgram(count=LINES, line_template="step {i:02d} ", line_bytes=200, rate=10, duration=1, **program)


@pytest.fixture
def submit(sandbox, sandbox_namespace, monkeypatch):
    """Return a function that scripts the master, shrinks the node's ``containerLogMaxSize`` and submits the run."""
    ns = install_mpi_templates(sandbox, sandbox_namespace)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_connection())

    def submit_run(program: ScriptedProgram, rotate_at: int | None) -> dict:
        monkeypatch.setattr(sandbox.kubelet.logs, "max_size", rotate_at)  # a kubelet configured so
        sandbox.kubelet.programs.script(program, namespace=ns, container="mpimaster")
        return submit_from_template(sandbox.api, ns, "volcano-mpi", {"job-name": JOB})

    yield ns, submit_run
    sandbox.kubelet.programs.clear()


def _trigger(ns: str, wf: dict, shown: list[str], **spec) -> ArgoWorkflowTrigger:
    follow = FollowSpec(namespace=ns, workflow_name=wf["metadata"]["name"], job_name=JOB, **spec)
    trigger = ArgoWorkflowTrigger(spec=follow.to_dict(), connection={"kubernetes_conn_id": "kubernetes_default"})
    capture_task_log(trigger, shown.append)
    return trigger


def _steps(shown: list[str]) -> list[int]:
    return [int(line.split()[1]) for line in shown if line.startswith("step ")]


def _raw_log(sandbox, ns: str) -> list[tuple[int, str]]:
    """The master's log as ``pods/log?timestamps=true`` serves it now: (stamp, text) per line."""
    response = sandbox.api.request(
        "GET",
        f"/api/v1/namespaces/{ns}/pods/{POD}/log",
        query={"container": "mpimaster", "timestamps": "true"},
        stream=True,
    )
    return [tuple(parse_log_line(raw)) for raw in response.data.splitlines() if raw]


def test_a_polled_read_that_finds_the_log_rotated_past_its_cursor_says_lines_may_be_missing(sandbox, submit):
    """Row k: the kubelet serves only the current file, so a read every 1.5 s loses what rotated away in between;
    every such gap is announced in the task log right where it is, and nothing is repeated.
    """
    ns, submit_run = submit
    wf = submit_run(_master(), rotate_at=8192)
    shown: list[str] = []
    event = asyncio.run(_trigger(ns, wf, shown, log_poll_interval=1.5).run().__anext__())
    keep_for_secret_scan("\n".join(shown))
    assert event.payload["status"] == "success", event.payload
    steps = _steps(shown)
    assert steps == sorted(set(steps)) and steps[-1] == LINES - 1  # in order, none twice, up to the last
    assert len(steps) < LINES  # rotated away between two reads
    notices = [line for line in shown if NOTICE in line]
    assert notices and all(f"the log of {POD} " in notice for notice in notices)
    previous = -1
    for before, line in zip(["", *shown[:-1]], shown, strict=True):
        if line.startswith("step "):
            step = int(line.split()[1])
            assert step == previous + 1 or NOTICE in before, (previous, step, before)  # never a silent gap
            previous = step


@dataclass
class _LateBurst(ScriptedProgram):
    """Silent for ``delay`` seconds, then every line at once."""

    delay: float = 3.0

    def run(self, ctx) -> int:
        return super().run(ctx) if ctx.sleep(self.delay) else 137


def test_a_polled_read_of_a_log_rotated_before_its_first_read_says_its_start_may_be_gone(sandbox, submit):
    """Row k: the master writes 80 lines at once 3 s after it started, between two reads every 5 s: they rotate
    before any read gets one. The read that gets the first line has no cursor to find a gap with; its first line,
    stamped 3 s after the container's ``startedAt``, says the start may have rotated away.
    """
    ns, submit_run = submit
    wf = submit_run(_LateBurst(count=LINES, line_template="step {i:02d} ", line_bytes=200, duration=1), 4096)
    shown: list[str] = []
    event = asyncio.run(_trigger(ns, wf, shown, log_poll_interval=5).run().__anext__())
    keep_for_secret_scan("\n".join(shown))
    assert event.payload["status"] == "success", event.payload
    steps = _steps(shown)
    assert 0 < steps[0] and steps == list(range(steps[0], LINES)), steps  # the last 4 KiB
    first = shown.index(f"step {steps[0]:02d} ".ljust(200, "x"))
    notice = shown[first - 1]
    assert notice.startswith(f"the log of {POD} begins at ") and START_NOTICE in notice, shown[: first + 1]
    assert " s after the container started" in notice and [line for line in shown if START_NOTICE in line] == [notice]


def test_a_followed_log_survives_rotation_and_loses_nothing_though_a_read_gets_only_the_current_file(sandbox, submit):
    """Row k: a follow reopens the path when the file is rotated (``logs.go: waitLogs`` "recreated")."""
    ns, submit_run = submit
    wf = submit_run(_master(), rotate_at=4096)
    shown: list[str] = []
    event = asyncio.run(_trigger(ns, wf, shown).run().__anext__())
    keep_for_secret_scan("\n".join(shown))
    assert event.payload["status"] == "success", event.payload
    assert _steps(shown) == list(range(LINES))
    assert not [line for line in shown if NOTICE in line]
    served = [int(text.split()[1]) for _, text in _raw_log(sandbox, ns)]
    assert 0 < len(served) < 20 and served == list(range(served[0], LINES))  # the last 4 KiB, no more


def test_lines_out_of_stamp_order_are_all_shown_by_a_live_read(sandbox, submit):
    """Row l: a stderr line stamped before the stdout line ahead of it (containerd) is shown, in file order."""
    ns, submit_run = submit
    early = (5, 31, 57)
    wf = submit_run(_master(stamped_early=early), rotate_at=None)
    shown: list[str] = []
    event = asyncio.run(_trigger(ns, wf, shown).run().__anext__())
    keep_for_secret_scan("\n".join(shown))
    assert event.payload["status"] == "success", event.payload
    stamps = [stamp for stamp, _ in _raw_log(sandbox, ns)]
    assert [i for i in range(1, LINES) if stamps[i] < stamps[i - 1]] == list(early)  # as containerd writes them
    assert _steps(shown) == list(range(LINES))


def test_a_resumed_read_asks_from_a_second_earlier_and_repeats_nothing(sandbox, submit, monkeypatch):
    """Row l: the cursor a trigger stopped mid-stream stored on the Workflow resumes one second before its newest
    stamp (the kubelet drops lines older than ``sinceTime`` line by line) and drops only the lines shown before.
    """
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook

    ns, submit_run = submit
    wf = submit_run(_master(stamped_early=(5, 21, 37, 53, 69)), rotate_at=None)
    asked: list[str | None] = []
    real_stream_log = AsyncVolcanoArgoHook.stream_log

    def recording_stream_log(self, pod, container, namespace, since_time, follow, previous=False):
        asked.append(since_time)  # a spy: the real API server answers every read
        return real_stream_log(self, pod, container, namespace, since_time, follow, previous)

    monkeypatch.setattr(AsyncVolcanoArgoHook, "stream_log", recording_stream_log)
    shown: list[str] = []

    async def scenario():
        first = _trigger(ns, wf, shown)
        task = asyncio.create_task(first.run().__anext__())
        await asyncio.to_thread(wait_for, lambda: len(_steps(shown)) >= 30, 60)
        task.cancel()  # a triggerer restart: the trigger stores its cursors and ends
        with pytest.raises(asyncio.CancelledError):
            await task
        classpath, kwargs = first.serialize()
        module, name = classpath.rsplit(".", 1)
        second = getattr(importlib.import_module(module), name)(**kwargs)
        capture_task_log(second, shown.append)
        asked.clear()
        stored = sandbox.api.get("workflows", wf["metadata"]["name"], ns)["metadata"]["annotations"]
        return json.loads(stored[CURSOR_ANNOTATION]), await second.run().__anext__()

    book, event = asyncio.run(scenario())
    keep_for_secret_scan("\n".join(shown))
    assert event.payload["status"] == "success", event.payload
    (cursor,) = book["cursors"].values()
    assert asked[0] == format_timestamp((cursor["ts"] // 10**9 - 1) * 10**9, with_fraction=False)
    assert _steps(shown) == list(range(LINES))
