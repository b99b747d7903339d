"""The reliability table: a registry of the scenarios expected, each filled by the test that plays it.

Each scenario test records its row (``reliability`` fixture); the table lists every registered scenario whatever
happened: a scenario whose test failed, errored, was skipped or never reached its record is a failed row, and one
whose test was not collected is "not run". A figure not measured is "-", never 0. The run prints the table at its
end and, with ``VOLCANO_ARGO_RELIABILITY_REPORT=file``, writes the rows as JSON (``benchmarks/reliability.py``).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass

import pytest

ROWS = pytest.StashKey[list]()
KINDS_LEFT = ("workflows", "vcjobs", "podgroups", "pods")
#: What the Volcano Job's plugins create (svc: Service, ConfigMap, NetworkPolicy; ssh: Secret) and Argo's resource
#: step may leave: counted when a run's Job or Workflow owns them (every namespace has its own ConfigMaps and
#: Secrets too, e.g. ``kube-root-ca.crt`` and the service accounts' tokens).
OWNED_KINDS_LEFT = ("configmaps", "services", "networkpolicies", "secrets")
RUN_OWNERS = ("batch.volcano.sh/", "argoproj.io/", "scheduling.volcano.sh/")
COLUMNS = ("scenario", "result", "lines expected", "delivered", "repeated", "objects left", "clean-up s")


@dataclass(frozen=True)
class Scenario:
    """One expected row (or one per parameter of its test): its id, what it plays, and the test that plays it."""

    id: str
    title: str
    test: str  # "<file under tests/integration>::<test function>"


_TRIGGER, _MPI, _REL = "test_trigger.py", "test_operator_volcano_mpi.py", "test_reliability.py"
_DEPLOY = "test_deployment.py"  # tests/deployment: a real Airflow, separate processes on PostgreSQL
_SENSORS = "test_sensors.py"
SCENARIOS = [
    Scenario(
        "R1",
        "triggerer restart mid-stream",
        f"{_TRIGGER}::test_triggerer_restart_resumes_without_repeating_or_losing_lines",
    ),
    Scenario(
        "R1",
        "triggerer killed hard (or stopped) mid-stream",
        f"{_TRIGGER}::test_triggerer_stopped_mid_stream_loses_nothing_and_repeats_only_what_it_showed_after_its_last_store",
    ),
    Scenario(
        "R1",
        "sensor's trigger killed hard (or stopped) mid-stream",
        f"{_SENSORS}::test_job_sensor_trigger_stopped_mid_stream_resumes_from_its_xcom_cursors",
    ),
    Scenario(
        "R2", "API server restart mid-run", f"{_TRIGGER}::test_api_server_restart_mid_run_loses_and_repeats_nothing"
    ),
    Scenario(
        "R3", "worker dies after submit, retry reattaches", f"{_MPI}::test_retried_task_reattaches_to_the_live_workflow"
    ),
    Scenario(
        "R4",
        "execution_timeout while deferred",
        f"{_MPI}::test_execution_timeout_while_deferred_stops_and_removes_everything",
    ),
    Scenario("R4", "on_kill while deferred", f"{_TRIGGER}::test_user_kill_while_deferred_stops_and_deletes_everything"),
    Scenario(
        "R5", "gang never admitted", f"{_MPI}::test_gang_never_admitted_fails_after_schedule_timeout_naming_the_reason"
    ),
    Scenario(
        "R6",
        "worker evicted, PodEvicted -> RestartJob",
        f"{_MPI}::test_volcano_restart_shows_each_attempt_once_under_its_header",
    ),
    Scenario("R7", "master fails until maxRetry", f"{_MPI}::test_failing_master_fails_the_task_with_diagnostics"),
    Scenario(
        "R8",
        "hostile values refused before any API call",
        f"{_REL}::test_r8_hostile_input_is_refused_before_any_api_call",
    ),
    Scenario(
        "R9",
        "Role without a verb: the task fails naming it",
        f"{_REL}::test_r9_each_verb_of_the_role_is_needed_and_named_when_missing",
    ),
    Scenario(
        "R10",
        "object deleted from outside mid-run",
        f"{_REL}::test_r10_deleted_from_outside_mid_run_fails_at_once_saying_so",
    ),
    Scenario(
        "R11",
        "WorkflowTemplate missing",
        f"{_REL}::test_r11_missing_template_says_how_to_install_it_and_creates_nothing",
    ),
    Scenario("R12", "a huge log", f"{_REL}::test_r12_a_huge_log_arrives_complete_in_order_with_bounded_trigger_memory"),
    Scenario(
        "R13",
        "no secret in any log or report",
        f"{_REL}::test_r13_no_token_or_kubeconfig_secret_in_any_task_log_or_error",
    ),
    Scenario(
        "R14",
        "deployment: ETL -> MPI -> downstream, workers from XCom",
        f"{_DEPLOY}::test_r14_etl_mpi_downstream_chain_with_workers_from_xcom",
    ),
    Scenario(
        "R15",
        "deployment: execution_timeout while deferred, master printing",
        f"{_DEPLOY}::test_r15_execution_timeout_while_deferred_ends_a_run_that_keeps_printing",
    ),
    Scenario(
        "R16",
        "deployment: every triggerer SIGKILLed mid-stream, a new one started",
        f"{_DEPLOY}::test_r16_every_triggerer_killed_hard_mid_stream",
    ),
    Scenario(
        "R17",
        "deployment: triggerer stalled past the health threshold, then resumed",
        f"{_DEPLOY}::test_r17_stalled_triggerer_hands_over_and_does_not_destroy_the_run",
    ),
    Scenario(
        "R18",
        "deployment: marked failed while deferred",
        f"{_DEPLOY}::test_r18_marked_failed_while_deferred_removes_the_gang",
    ),
    Scenario(
        "R19",
        "deployment: marked failed with no triggerer alive, then gc --apply",
        f"{_DEPLOY}::test_r19_marked_failed_with_no_triggerer_alive_then_gc",
    ),
    Scenario(
        "R20",
        "deployment: execution_timeout while the Kubernetes API is down, then gc",
        f"{_DEPLOY}::test_r20_execution_timeout_while_the_kubernetes_api_is_down",
    ),
]


@dataclass
class Row:
    """One scenario's figures; ``result`` comes from the test's outcome."""

    scenario: str
    nodeid: str
    expected: int | None = None
    delivered: int | None = None
    repeated: int | None = None
    objects_left: int | None = None
    cleanup_seconds: float | None = None
    result: str = "not run"

    def cells(self) -> list[str]:
        def show(value):
            return "-" if value is None else f"{value:.1f}" if isinstance(value, float) else str(value)

        return [self.scenario, self.result, *map(show, (self.expected, self.delivered, self.repeated)),
                show(self.objects_left), show(self.cleanup_seconds)]  # fmt: skip


def test_function(nodeid: str) -> str:
    """Return ``<file>::<function>`` of a node id (no directory, no parameters): what a ``Scenario`` names."""
    path, _, name = nodeid.partition("::")
    return f"{path.rsplit('/', 1)[-1]}::{name.split('[', 1)[0]}"


def scenario_of(nodeid: str) -> Scenario | None:
    """Return the registered scenario a test plays, if any."""
    return next((s for s in SCENARIOS if s.test == test_function(nodeid)), None)


def table_rows(recorded: list[Row], collected: list[str], outcomes: dict[str, str]) -> list[Row]:
    """Return one row per registered scenario and collected test: recorded ones, or a failed row in their place.

    ``collected``: node ids of the reliability tests of the run; ``outcomes``: node id -> pass / failed / skipped
    / error. A test that ran but recorded nothing gets a row saying so; a scenario none of whose tests was
    collected is "not run"; a recorded row of an unregistered test is kept and marked "unregistered".
    """
    rows: list[Row] = []
    for scenario in SCENARIOS:
        items = [nodeid for nodeid in collected if test_function(nodeid) == scenario.test]
        if not items:
            rows.append(Row(f"{scenario.id} {scenario.title}", scenario.test, result="not run"))
        for nodeid in items:
            outcome = outcomes.get(nodeid, "not run")
            mine = [row for row in recorded if row.nodeid == nodeid]
            if not mine:
                param = nodeid.partition("[")[2].rstrip("]")
                mine = [Row(f"{scenario.title} [{param}]" if param else scenario.title, nodeid)]
                outcome = "no record" if outcome == "pass" else outcome
            for row in mine:
                row.result = outcome
                if not row.scenario.startswith(f"{scenario.id} "):
                    row.scenario = f"{scenario.id} {row.scenario or scenario.title}"
            rows.extend(mine)
    for row in recorded:
        if scenario_of(row.nodeid) is None:
            row.result = "unregistered"
            rows.append(row)
    return rows


def full_run(collected: list[str], keyword: str) -> bool:
    """Tell whether every scenario was due: no ``-k``, and every file that plays one was collected."""
    files = {test_function(nodeid).split("::")[0] for nodeid in collected}
    return not keyword and {s.test.split("::")[0] for s in SCENARIOS} <= files


def failed(rows: list[Row], full_run: bool) -> list[Row]:
    """Return the rows that fail the run: anything but pass, and "not run" only when every scenario was due."""
    return [row for row in rows if row.result != "pass" and (full_run or row.result != "not run")]


def numbered_lines(tag: str, count: int) -> list[str]:
    """Return lines no one of which is a substring of another, so counting them in a log is exact."""
    return [f"{tag}-line-{i:06d}." for i in range(count)]


def line_counts(log: str, expected: list[str], times: int = 1) -> tuple[int, int]:
    """Return (delivered, repeated): lines present ``times`` times or more, and occurrences beyond that."""
    counts = [log.count(line) for line in expected]
    return sum(c >= times for c in counts), sum(max(c - times, 0) for c in counts)


def objects_left(sandbox, namespace: str) -> int:
    """Count what a run left in ``namespace``: Workflows, Volcano Jobs, PodGroups, pods, and what they own.

    Owned objects are the plugins' Services, ConfigMaps, NetworkPolicies and Secrets.
    """
    left = sum(len(sandbox.api.list(kind, namespace)["items"]) for kind in KINDS_LEFT)
    for kind in OWNED_KINDS_LEFT:
        for obj in sandbox.api.list(kind, namespace)["items"]:
            owners = obj["metadata"].get("ownerReferences") or []
            left += any(ref.get("apiVersion", "").startswith(RUN_OWNERS) for ref in owners)
    return left


def leftovers(sandbox, namespace: str, timeout: float = 90.0) -> tuple[int, float]:
    """Wait until the run left nothing in ``namespace`` (``objects_left``): (objects left, seconds)."""
    started = time.monotonic()
    while True:
        left = objects_left(sandbox, namespace)
        if left == 0 or time.monotonic() - started > timeout:
            return left, round(time.monotonic() - started, 1)
        time.sleep(0.2)


def format_table(rows: list[Row]) -> str:
    """Format the rows as a Markdown table, in scenario order."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in sorted(rows, key=lambda r: _order(r.scenario))]
    return "\n".join(lines)


def _order(scenario: str) -> tuple[int, str]:
    head = scenario.split()[0] if scenario else ""
    return (int(head[1:]) if head[1:].isdigit() else 99, scenario)


def write_report(rows: list[Row]) -> None:
    target = os.environ.get("VOLCANO_ARGO_RELIABILITY_REPORT")
    if target:
        with open(target, "w") as out:
            json.dump([asdict(r) for r in rows], out, indent=1)
