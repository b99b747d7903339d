"""The reliability table lists every registered scenario whatever happened to its test."""

from __future__ import annotations

from tests.integration.reliability import SCENARIOS, Row, failed, format_table, full_run, table_rows

R1 = SCENARIOS[0]
NODE_R1 = f"tests/integration/{R1.test}"
R9 = next(s for s in SCENARIOS if s.id == "R9")
NODE_R9 = [f"tests/integration/{R9.test}[{p}]" for p in ("get-pods/log", "watch-pods")]


def _by_result(rows: list[Row]) -> dict[str, str]:
    return {row.scenario: row.result for row in rows}


def test_a_recorded_row_takes_its_tests_outcome_and_the_scenario_id():
    recorded = [Row("triggerer restart mid-stream", NODE_R1, expected=40, delivered=40, repeated=0)]
    rows = table_rows(recorded, [NODE_R1], {NODE_R1: "pass"})
    assert _by_result(rows)["R1 triggerer restart mid-stream"] == "pass"
    assert "| R1 triggerer restart mid-stream | pass | 40 | 40 | 0 | - | - |" in format_table(rows)


def test_a_test_that_fails_skips_or_records_nothing_is_a_failed_row():
    recorded = [Row("R9 Role without get pods/log", NODE_R9[0])]
    for outcome, expected in (("failed", "failed"), ("skipped", "skipped"), ("error", "error")):
        rows = table_rows(recorded, NODE_R9, {NODE_R9[0]: outcome, NODE_R9[1]: "pass"})
        results = _by_result(rows)
        assert results["R9 Role without get pods/log"] == expected
        assert results["R9 Role without a verb: the task fails naming it [watch-pods]"] == "no record"
        assert len(failed(rows, full_run([], ""))) == 2


def test_a_scenario_not_collected_is_not_run_and_fails_only_a_full_run():
    rows = table_rows([], [NODE_R1], {NODE_R1: "skipped"})
    assert len(rows) == len(SCENARIOS)
    not_run = [row for row in rows if row.result == "not run"]
    assert len(not_run) == len(SCENARIOS) - 1
    assert failed(rows, full_run=False) == [r for r in rows if r.result == "skipped"]
    assert len(failed(rows, full_run=True)) == len(SCENARIOS)
    every_file = [f"tests/integration/{s.test}" for s in SCENARIOS]
    assert full_run(every_file, "") and not full_run(every_file, "r12") and not full_run([NODE_R1], "")


def test_an_unregistered_scenario_row_is_kept_and_marked():
    stray = Row("R99 something new", "tests/integration/test_new.py::test_new")
    rows = table_rows([stray], [], {})
    assert _by_result(rows)["R99 something new"] == "unregistered"


def test_objects_left_counts_what_a_runs_jobs_own_not_the_namespaces_own_objects():
    from tests.integration.reliability import objects_left

    owned = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "mpi-j", "uid": "u"}
    listing = {
        "pods": [{"metadata": {"name": "mpi-j-mpimaster-0"}}],
        "secrets": [
            {"metadata": {"name": "mpi-j-ssh", "ownerReferences": [owned]}},
            {"metadata": {"name": "default-token-x"}},  # the service account's own
        ],
        "configmaps": [
            {"metadata": {"name": "kube-root-ca.crt"}},
            {"metadata": {"name": "mpi-j-svc", "ownerReferences": [owned]}},
        ],
        "services": [{"metadata": {"name": "mpi-j", "ownerReferences": [owned]}}],
    }

    class Api:
        def list(self, kind, namespace, selector=None):
            return {"items": listing.get(kind, [])}

    assert objects_left(type("Sandbox", (), {"api": Api()})(), "ns") == 4  # the pod + 3 owned, not the 2 others
