"""Lines repeated after a hard kill, with the shipped ``CURSOR_SAVE_SECONDS``: the worst case and the best.

Two runs, each followed by the operator's trigger in a process of its own (``tests/integration/trigger_probe.py
--stream``, which says when each store of the log cursors completed). The master prints a line every second. One
trigger is killed with SIGKILL just before its next store would be due (the worst case: a whole interval of lines
unstored), the other just after a store (the best). A new trigger then follows each run to its end; the table
counts the lines the killed one showed, the lines its last store covered, and the lines the new one showed again.

    .venv/bin/python benchmarks/hard_kill.py [--small] [--cursor-save-seconds S]

``--small`` (and ``--cursor-save-seconds``) measure another interval than the shipped one (``--small``: 10 s).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import benchlib  # first: it sets AIRFLOW_HOME before anything imports Airflow
from benchlib import REPO, say

from airflow_provider_volcano_argo.engine import cursor_keeper

#: How long before its next store is due the worst case is killed: the check that would store comes once a second.
BEFORE_DUE_SECONDS = 1.5
LINE = re.compile(r"^tick-(\d{7})$")


class Probe:
    """A trigger probe in a process of its own, read in a thread: its numbered lines and the times of its stores."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO)
        self.shown: list[int] = []  # the numbers of the master's lines, as shown
        self.lines = 0  # task-log lines shown (as SAVED counts them)
        self.stores: list[tuple[float, int]] = []  # (monotonic time it completed, task-log lines it covers)
        self.numbers_at: dict[int, int] = {}  # task-log lines shown -> master lines among them
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("LINE "):
                self.lines += 1
                match = LINE.match(line[5:].rstrip("\n"))
                if match:
                    self.shown.append(int(match.group(1)))
                self.numbers_at[self.lines] = len(self.shown)
            elif line.startswith("SAVED "):
                self.stores.append((time.monotonic(), int(line.split()[1])))

    def stored(self) -> int:
        """Return how many of the master's lines the last completed store covers."""
        if not self.stores:
            return 0
        covered = self.stores[-1][1]
        return self.numbers_at.get(covered, 0) if covered else 0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(60)
        self._thread.join(10)

    def wait(self, timeout: float) -> None:
        self.process.wait(timeout)
        self._thread.join(10)


def main() -> None:
    args = benchlib.arguments(
        __doc__.split("\n\n")[0],
        lambda p: p.add_argument("--cursor-save-seconds", type=float, default=None, help="instead of the shipped"),
    )
    every = args.cursor_save_seconds or (10.0 if args.small else cursor_keeper.CURSOR_SAVE_SECONDS)
    from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram

    run_seconds = int(2 * every + 60)  # the worst case is killed near 2 intervals in; the new trigger follows on
    with benchlib.sandbox() as sb:
        ns = benchlib.prepare_namespace(sb, "bench-hard-kill")
        program = ScriptedProgram(count=run_seconds, line_template="tick-{i:07d}", rate=1.0, duration=run_seconds)
        sb.kubelet.programs.script(program, namespace=ns, container="mpimaster")
        cases = {}
        for case in ("worst", "best"):
            wf = benchlib.submit(sb, ns, f"kill-{case}")
            command = [sys.executable, "-m", "tests.integration.trigger_probe", ns, wf["metadata"]["name"]]
            command += [f"kill-{case}", "--stream"]
            if args.cursor_save_seconds or args.small:
                command += ["--save-every", f"{every:g}"]
            cases[case] = {"wf": wf, "command": command, "probe": Probe(command)}
        say(f"two runs printing a line a second for {run_seconds} s; cursors stored every {every:g} s ...")
        pending = set(cases)
        while pending:
            time.sleep(0.05)
            for case in list(pending):
                probe = cases[case]["probe"]
                if not probe.stored():
                    continue  # no store yet: a kill now would show the whole log again, not an interval of it
                kill_after = 0.0 if case == "best" else every - BEFORE_DUE_SECONDS
                if time.monotonic() - probe.stores[-1][0] >= kill_after:
                    cases[case]["since_store"] = time.monotonic() - probe.stores[-1][0]
                    probe.kill()
                    say(f"{case}: killed {cases[case]['since_store']:.1f} s after its last store")
                    cases[case]["next"] = Probe(cases[case]["command"])
                    pending.discard(case)
        for case in cases.values():
            case["next"].wait(run_seconds + 120)
        for case in cases.values():
            sb.api.delete("workflows", case["wf"]["metadata"]["name"], ns)

    rows, notes = [], []
    for name, case in cases.items():
        killed, new = case["probe"], case["next"]
        first, resumed = killed.shown, new.shown
        repeated = len(first) + len(resumed) - len(set(first) | set(resumed))
        lost = run_seconds - len(set(first) | set(resumed))
        rows.append(
            [
                f"{name}: killed {case['since_store']:.1f} s after a store",
                str(len(first)),
                str(killed.stored()),
                str(repeated),
                str(lost),
                f"<= {int(every + 1)}",
                benchlib.met(repeated <= every + 1 and lost == 0),
            ]
        )
    notes.append(
        f"the master prints `tick-NNNNNNN` once a second for {run_seconds} s; `CURSOR_SAVE_SECONDS` = {every:g} s"
        + ("" if args.cursor_save_seconds is None and not args.small else " (set for this run)")
    )
    notes.append(
        "stored: the master's lines that the killed trigger's last completed store (`SAVED` of the probe) covers; "
        "repeated: lines both triggers showed; lost: lines neither showed"
    )
    notes.append(
        "goal: a hard kill repeats at most the lines of the last `CURSOR_SAVE_SECONDS` + 1 s (`models/cursor_saves.py`)"
    )
    option = "" if args.cursor_save_seconds is None else f" --cursor-save-seconds {args.cursor_save_seconds:g}"
    benchlib.report(
        f"Lines repeated after a hard kill (cursors stored every {every:g} s, 1 line/s)",
        [f"command: `.venv/bin/python benchmarks/hard_kill.py{' --small' if args.small else ''}{option}`"],
        ["case", "shown by the killed trigger", "stored", "repeated by the next", "lost", "goal", "met?"],
        rows,
        notes,
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
