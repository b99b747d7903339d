"""The reliability table (issue R1-R13): runs the scenario tests on the sandbox and prints one table.

    .venv/bin/python benchmarks/reliability.py [pytest arguments, e.g. -k r12]

Each scenario is an integration test marked ``reliability``; its row (lines expected / delivered / repeated,
objects left, seconds until the cluster was clean) is recorded by the test itself (tests/integration/
reliability.py) and written as JSON, which this script prints as a Markdown table.
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

from tests.integration.reliability import Row, format_table  # noqa: E402  (the tests' own table)


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "reliability.json"
        env = {**os.environ, "VOLCANO_ARGO_RELIABILITY_REPORT": str(report)}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "reliability", *argv]
        done = subprocess.run(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL)
        rows = [Row(**row) for row in json.loads(report.read_text())] if report.exists() else []
    print(format_table(rows))
    lost = sum((r.expected or 0) - (r.delivered or 0) for r in rows)
    repeated = sum(r.repeated or 0 for r in rows)
    left = sum(r.objects_left or 0 for r in rows)
    print(f"\n{len(rows)} rows, pytest exit {done.returncode}: {lost} lines lost, {repeated} repeated, {left} left")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
