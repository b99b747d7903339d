"""Run every benchmark, one after another (never two sandboxes at once), then print all their tables.

.venv/bin/python benchmarks/run_all.py [--small] [--only latency,api_load,...] [--output FILE]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = [
    "latency",
    "api_load",
    "hard_kill",
    "triggerer_capacity",
    "log_throughput",
    "submit_overhead",
    "namespace_scale",
    "log_path",
    "anchor_job",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="the quick pass of every benchmark")
    parser.add_argument("--only", default=None, help=f"comma-separated subset of {','.join(BENCHMARKS)}")
    parser.add_argument("--output", default=None, help="also write the combined report to this file")
    args = parser.parse_args()
    chosen = args.only.split(",") if args.only else BENCHMARKS
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")

    reports: list[str] = []
    failed: list[str] = []
    for name in chosen:
        argv = [sys.executable, str(HERE / f"{name}.py")] + (["--small"] if args.small else [])
        print(f"=== {name}: {' '.join(argv[1:])}", file=sys.stderr, flush=True)
        started = time.monotonic()
        # stderr (progress) goes straight through; stdout (the report) is kept and echoed
        done = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
        out = done.stdout
        sys.stdout.write(out)
        sys.stdout.flush()
        took = time.monotonic() - started
        print(f"=== {name}: exit {done.returncode} after {took:.0f} s", file=sys.stderr, flush=True)
        report = out[out.find("### ") :] if "### " in out else ""
        if done.returncode != 0 or not report:
            failed.append(name)
            report = f"### {name}\n\nFAILED (exit {done.returncode}); see its output above.\n"
        reports.append(report.strip() + f"\n\n(wall time of this benchmark: {took:.0f} s)")

    combined = "\n\n".join(["## Benchmarks" + (" (--small)" if args.small else "")] + reports) + "\n"
    print("\n" + "=" * 100 + "\n")
    print(combined)
    if args.output:
        Path(args.output).write_text(combined)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
