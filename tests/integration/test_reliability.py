"""Reliability and security scenarios R8-R13 on the sandbox (R1-R7: test_trigger.py, test_operator_volcano_mpi.py).

Each records its row of the reliability table (``reliability`` fixture; ``benchmarks/reliability.py`` prints it).
"""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_volcano_argo import templates
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram
from tests.conftest import keep_for_secret_scan
from tests.integration.helpers import allowed, run_dag, wait_for
from tests.integration.reliability import leftovers, objects_left

pytestmark = [pytest.mark.integration, pytest.mark.reliability]

HOSTILE = ["\n", "{{", "}}", "'", '"', "$(id)", "`id`", ";", "&&", "|", "\\", "ü", "\u2028", "\x00"]


def _hostile_text(draw_base: str, token: str, at: int) -> str:
    at = min(at, len(draw_base))
    return draw_base[:at] + token + draw_base[at:]


text_fields = st.sampled_from(["job_name", "image", "init_image", "volcano_queue", "cpu_per_worker",
                               "memory_per_worker", "priority_class"])  # fmt: skip
int_fields = st.sampled_from(["workers", "slots_per_worker", "max_retry", "min_available"])
hostile_text = st.builds(
    _hostile_text, st.text(alphabet="abcxyz019-", max_size=12), st.sampled_from(HOSTILE), st.integers(0, 12)
)
overrides = st.one_of(
    st.tuples(text_fields, hostile_text),
    st.tuples(st.sampled_from(["job_name", "volcano_queue"]), st.text(alphabet="abc", min_size=64, max_size=300)),
    st.tuples(int_fields, st.integers(max_value=0)),
    st.tuples(int_fields, hostile_text),
)


_R8_ROW: dict = {}  # one table row for all the examples hypothesis runs


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(override=overrides)
def test_r8_hostile_input_is_refused_before_any_api_call(sandbox, mpi_namespace, caplog, capfd, reliability, override):
    """The Airflow identity has no rights at all here (checked with the API server's own authorizer): any API call
    would fail with Forbidden, so a refusal naming the field, in this example's own log, proves validation came
    first. Nothing can be created without rights, so the row records no "objects left" ("-").
    """
    from tests.dags.mpi_test_dags import mpi_overrides

    field, value = override
    sandbox.set_airflow_rules([], mpi_namespace)
    wait_for(
        lambda: not allowed(sandbox, AIRFLOW_USER, mpi_namespace, "argoproj.io", "workflows", "list"),
        30,
        what="RBAC revoked",
    )
    caplog.clear()  # this example's log only: an earlier example may have named the same field
    states, log = run_dag(mpi_overrides, caplog, capfd, namespace=mpi_namespace, overrides={field: value})
    row = _R8_ROW.get("row") or _R8_ROW.setdefault("row", reliability(""))
    _R8_ROW["fields"] = _R8_ROW.get("fields", set()) | {field}
    _R8_ROW["values"] = _R8_ROW.get("values", 0) + 1
    row.scenario = (f"R8 {_R8_ROW['values']} hostile values for {len(_R8_ROW['fields'])} fields refused "
                    "before any API call")  # fmt: skip
    assert states == {"mpi": "failed"}
    assert f"{field}: " in log, (field, value, log[-2000:])
    assert "Forbidden" not in log


# -- R9: every verb of the shipped Role is needed, and its absence is named ---------------------------------
LABELS = {
    ("argoproj.io", "workflows"): "workflows.argoproj.io",
    ("argoproj.io", "workflowtemplates"): "workflowtemplates.argoproj.io",
    ("batch.volcano.sh", "jobs"): "jobs.batch.volcano.sh",
    ("scheduling.volcano.sh", "podgroups"): "podgroups.scheduling.volcano.sh",
    ("bus.volcano.sh", "commands"): "commands.bus.volcano.sh",
    ("", "pods"): "pods",
    ("", "pods/log"): "pods/log",
    ("", "events"): "events",
}
RULE_VERBS = [
    (group, resource, verb)
    for rule in templates.airflow_rules()
    for group in rule["apiGroups"]
    for resource in rule["resources"]
    for verb in rule["verbs"]
]
SCENARIO_OF = {
    ("batch.volcano.sh", "jobs", "get"): "sensor",
    ("scheduling.volcano.sh", "podgroups", "get"): "gang",
    ("", "events", "list"): "gang",  # why the gang was refused at enqueue: an Event on its PodGroup
    ("argoproj.io", "workflows", "get"): "reattach",  # the retry reads the Workflow its first try stored
    ("bus.volcano.sh", "commands", "create"): "stop",  # a run cut by its deadline, kept: its gang is terminated
}


def _without(group: str, resource: str, verb: str) -> list[dict]:
    rules = []
    for rule in templates.airflow_rules():
        if group in rule["apiGroups"] and resource in rule["resources"]:
            rest = [v for v in rule["verbs"] if v != verb]
            if rest:
                rules.append({**rule, "verbs": rest})
            others = [r for r in rule["resources"] if r != resource]
            if others:
                rules.append({**rule, "resources": others})
        else:
            rules.append(rule)
    return rules


#: The Airflow identity the sandbox's connection uses.
AIRFLOW_USER = "system:serviceaccount:argo:airflow"


@pytest.mark.parametrize(("group", "resource", "verb"), RULE_VERBS, ids=[f"{v}-{r}" for _, r, v in RULE_VERBS])
def test_r9_each_verb_of_the_role_is_needed_and_named_when_missing(
    sandbox, mpi_namespace, caplog, capfd, reliability, group, resource, verb
):
    import tests.dags.mpi_test_dags as mpi
    import tests.dags.sensor_dags as sensors
    from tests.integration.helpers import volcano_job

    sandbox.set_airflow_rules(_without(group, resource, verb), mpi_namespace)
    wait_for(
        lambda: not allowed(sandbox, AIRFLOW_USER, mpi_namespace, group, resource, verb),
        30,
        what=f"{verb} {resource} revoked",
    )
    scenario = SCENARIO_OF.get((group, resource, verb), "mpi")
    if scenario == "sensor":
        sandbox.api.create("vcjobs", volcano_job("outside", workers=1), mpi_namespace)
        states, log = run_dag(sensors.test_job_sensor_poke, caplog, capfd, namespace=mpi_namespace, name="outside")
    elif scenario == "gang":
        states, log = run_dag(mpi.mpi_unschedulable, caplog, capfd, namespace=mpi_namespace)
    elif scenario == "reattach":
        states, log = run_dag(mpi.mpi_reattach, caplog, capfd, namespace=mpi_namespace)
    elif scenario == "stop":
        sandbox.kubelet.programs.script(ScriptedProgram(duration=60), namespace=mpi_namespace, container="mpimaster")
        try:
            states, log = run_dag(mpi.mpi_timeout_kept, caplog, capfd, namespace=mpi_namespace)
        finally:
            sandbox.kubelet.programs.clear()
            for wf in sandbox.api.list("workflows", mpi_namespace)["items"]:  # kept by the DAG: not left running
                sandbox.api.delete("workflows", wf["metadata"]["name"], mpi_namespace)
    else:  # a run longer than the 15 s a 403 may last (RBAC propagation) before it is final
        sandbox.kubelet.programs.script(
            ScriptedProgram(lines=["R9 run"], duration=20), namespace=mpi_namespace, container="mpimaster"
        )
        try:
            states, log = run_dag(mpi.mpi_hostile, caplog, capfd, namespace=mpi_namespace)
        finally:
            sandbox.kubelet.programs.clear()
    named = f"may not {verb} {LABELS[(group, resource)]}" in log
    reliability(f"R9 Role without {verb} {resource}: the task fails naming it")
    assert set(states.values()) == {"failed"}, log[-2000:]
    assert named, log[-3000:]


# -- R10, R11 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["workflows", "vcjobs"])
def test_r10_deleted_from_outside_mid_run_fails_at_once_saying_so(
    sandbox, mpi_namespace, caplog, capfd, reliability, kind
):
    from tests.dags.mpi_test_dags import mpi_hostile as plain

    sandbox.kubelet.programs.script(
        ScriptedProgram(lines=["computing"], duration=600), namespace=mpi_namespace, container="mpimaster"
    )
    deleted: dict[str, float] = {}

    def delete_when_running() -> None:
        def running_master():
            pods = sandbox.api.list("pods", mpi_namespace, "volcano.sh/task-spec=mpimaster")["items"]
            return next((p for p in pods if (p.get("status") or {}).get("phase") == "Running"), None)

        master = wait_for(running_master, 90, what="master running")
        name = (
            master["metadata"]["labels"]["volcano.sh/job-name"]
            if kind == "vcjobs"
            else sandbox.api.list("workflows", mpi_namespace)["items"][0]["metadata"]["name"]
        )
        time.sleep(1)
        deleted["at"], deleted["name"] = time.monotonic(), name
        sandbox.api.delete(kind, name, mpi_namespace)

    helper = threading.Thread(target=delete_when_running)
    helper.start()
    try:
        states, log = run_dag(plain, caplog, capfd, namespace=mpi_namespace)
        ended = time.monotonic()
    finally:
        helper.join(120)
        sandbox.kubelet.programs.clear()
    left, seconds = leftovers(sandbox, mpi_namespace)
    what = "Workflow" if kind == "workflows" else "Volcano Job"
    reliability(f"R10 {what} deleted from outside mid-run", objects_left=left,
                cleanup_seconds=round(ended - deleted["at"] + seconds, 1))  # fmt: skip
    assert states == {"mpi": "failed"}, log[-3000:]
    said = (
        f"Argo Workflow {deleted['name']} was deleted while the task was following it."
        if kind == "workflows"
        else f"Volcano Job {deleted['name']} was deleted before it finished"
    )
    # the message names what was deleted, not only that something was; the run has no timeout and the master
    # runs 600 s, so the deletion is what ended it (how long that took is the table's cleanup figure)
    assert said in log, log[-3000:]
    assert left == 0


def test_r11_missing_template_says_how_to_install_it_and_creates_nothing(
    sandbox, mpi_namespace, caplog, capfd, reliability
):
    from tests.dags.mpi_test_dags import mpi_hostile as plain

    sandbox.api.delete("workflowtemplates", "volcano-mpi", mpi_namespace)
    states, log = run_dag(plain, caplog, capfd, namespace=mpi_namespace)
    left = objects_left(sandbox, mpi_namespace)
    reliability("R11 WorkflowTemplate missing", objects_left=left)
    assert states == {"mpi": "failed"}
    assert f"WorkflowTemplate 'volcano-mpi' not found in namespace '{mpi_namespace}'" in log
    assert f"volcano-argo install-templates --namespace {mpi_namespace}" in log and "nothing was created" in log
    assert left == 0


# -- R12: log volume --------------------------------------------------------------------------------------
LONG_LINES = [f"R12-long-{k}" + "x" * 65536 + "#end" for k in range(8)]


def _probe(sandbox, namespace: str, job: str, count: int) -> dict:
    """Submit a run whose master prints 8 lines of 64 KiB then ``count`` numbered 100-byte lines, and follow
    it with the trigger in a process of its own.
    """
    import json
    import subprocess
    import sys

    from tests.integration.helpers import submit_from_template

    sandbox.kubelet.programs.script(
        ScriptedProgram(lines=LONG_LINES, count=count, line_template="R12" + "p" * 88 + "-{i:07d}"),
        namespace=namespace,
        pod=f"{job}-mpimaster-*",
        container="mpimaster",
    )
    wf = submit_from_template(sandbox.api, namespace, "volcano-mpi", {"job-name": job})
    probe = subprocess.run(
        [sys.executable, "-m", "tests.integration.trigger_probe", namespace, wf["metadata"]["name"], job],
        capture_output=True,
        text=True,
        timeout=900,
    )
    keep_for_secret_scan(probe.stdout, probe.stderr)
    assert probe.returncode == 0, probe.stderr[-3000:]
    return json.loads(probe.stdout.strip().splitlines()[-1])


def test_r12_a_huge_log_arrives_complete_in_order_with_bounded_trigger_memory(
    sandbox, mpi_namespace, reliability, monkeypatch
):
    # a kubelet with containerLogMaxSize 64Mi: the master writes its ~21 MB before the probe has started, and with
    # the default 10Mi the kubelet would serve only the last file (R12 measures memory and order, not rotation:
    # tests/integration/test_log_rotation_and_order.py)
    monkeypatch.setattr(sandbox.kubelet.logs, "max_size", 64 * 1024 * 1024)
    small = _probe(sandbox, mpi_namespace, "r12-small", 2_000)
    big = _probe(sandbox, mpi_namespace, "r12-big", 200_000)
    sandbox.kubelet.programs.clear()
    for workflow in sandbox.api.list("workflows", mpi_namespace)["items"]:
        sandbox.api.delete("workflows", workflow["metadata"]["name"], mpi_namespace)
    left, seconds = leftovers(sandbox, mpi_namespace)
    growth = {name: run["rss_peak_kib"] - run["rss_before_kib"] for name, run in (("small", small), ("big", big))}
    delivered = big["numbered_in_order"] + big["long_intact"]
    reliability(
        f"R12 200,000 lines + 8 x 64 KiB (trigger RSS growth {growth['big'] // 1024} MiB vs "
        f"{growth['small'] // 1024} MiB for 2,000 lines)",
        expected=200_000 + len(LONG_LINES),
        delivered=delivered,
        repeated=big["out_of_order"],
        objects_left=left,
        cleanup_seconds=seconds,
    )
    assert small["status"] == big["status"] == "success", (small, big)
    assert (big["numbered_in_order"], big["long_intact"], big["out_of_order"]) == (200_000, len(LONG_LINES), 0)
    # ~21 MB of log: the trigger's memory does not grow with it (a bounded buffer per stream)
    assert growth["big"] - growth["small"] < 16 * 1024, growth
    assert left == 0


# -- R13: secrets -----------------------------------------------------------------------------------------
def test_r13_no_token_or_kubeconfig_secret_in_any_task_log_or_error(
    sandbox, mpi_namespace, caplog, capfd, reliability, request
):
    """Runs last (conftest): searches every log and failure report of the session (unit tests, the sandbox's
    tests, trigger task logs the tests read themselves, subprocess output), plus a Forbidden failure of its own,
    for the sandbox's tokens in any form.
    """
    import base64

    from tests.conftest import CAPTURED_TEXTS
    from tests.dags.mpi_test_dags import mpi_hostile as plain
    from tests.integration.helpers import CAPTURED_LOGS

    sandbox.set_airflow_rules([], mpi_namespace)  # an API error whose text could carry credentials
    states, _ = run_dag(plain, caplog, capfd, namespace=mpi_namespace)
    assert states == {"mpi": "failed"}
    tokens = [
        sandbox.airflow_token,
        sandbox.control_plane.admin_token,
        sandbox.service_account_token(mpi_namespace, "argo"),
    ]
    needles = {t: "token" for t in tokens} | {base64.b64encode(t.encode()).decode(): "token (base64)" for t in tokens}
    needles[sandbox.airflow_kubeconfig.read_text().strip()] = "kubeconfig"
    texts = CAPTURED_LOGS + request.config.stash.get(CAPTURED_TEXTS, [])
    found = sorted({what for text in texts for needle, what in needles.items() if needle in text})
    megabytes = sum(len(text) for text in texts) / 1e6
    reliability(f"R13 secrets in {len(texts)} captured logs/reports ({megabytes:.1f} MB): {found or 'none'}")
    assert len(CAPTURED_LOGS) >= 1 and "Forbidden" in CAPTURED_LOGS[-1]
    assert found == []
