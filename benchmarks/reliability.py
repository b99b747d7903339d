"""The reliability table: run the scenario tests on the sandbox and print one table.

    .venv/bin/python benchmarks/reliability.py [pytest arguments, e.g. -k r12]

Each scenario is an integration test marked ``reliability`` and listed in the registry of
``tests/integration/reliability.py``; its row (lines expected / delivered / repeated, objects left, seconds until
the cluster was clean) is recorded by the test itself, and a scenario that failed, was skipped or recorded nothing
is a failed row. The table is printed and kept in ``benchmarks/results/reliability.md``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import benchlib  # noqa: E402

from tests.integration.reliability import Row, format_table  # noqa: E402  (the tests' own table)


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "reliability.json"
        env = {**os.environ, "VOLCANO_ARGO_RELIABILITY_REPORT": str(report)}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "reliability", *argv]
        done = subprocess.run(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL)
        rows = [Row(**row) for row in json.loads(report.read_text())] if report.exists() else []
    lost = sum(r.expected - r.delivered for r in rows if r.expected is not None and r.delivered is not None)
    repeated = sum(r.repeated or 0 for r in rows)
    left = sum(r.objects_left or 0 for r in rows)
    bad = sum(r.result != "pass" for r in rows)
    text = "\n".join(
        [
            "### Reliability scenarios",
            "",
            format_table(rows),
            "",
            f"{len(rows)} rows ({bad} not passed), pytest exit {done.returncode}: {lost} lines lost, {repeated} "
            f"repeated, {left} objects left",
            "",
            benchlib.machine_line(),
        ]
    )
    print(text)
    benchlib.keep_result("reliability", text)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
