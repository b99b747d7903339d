"""Profile the triggerer's processes with py-spy while a ``log_path.py`` run streams: where their CPU goes.

py-spy is not a dependency: install it anywhere (``python3 -m venv /tmp/pyspy && /tmp/pyspy/bin/pip install
py-spy``) and pass its path as ``--py-spy``. It must be allowed to ptrace the triggerer (root, or
``kernel.yama.ptrace_scope`` 0).
"""

from __future__ import annotations

import re
import signal
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import deploylib

#: "function (path:line)", as py-spy names a frame in its raw (collapsed) output
FRAME = re.compile(r"^(?P<function>.*) \((?P<path>[^()]*?)(?::\d+)?\)$")
TOP = 10
#: a thread of a thread pool waiting for work: py-spy counts it as running (it waits in C, under this frame)
WAITING_WORKER = "_worker (futures/thread.py)"


class Profiler:
    """Run ``py-spy record`` on the triggerer's supervisor and trigger runner until ``stop()``."""

    def __init__(self, py_spy: str, rate: int = 250):
        self.py_spy, self.rate = py_spy, rate
        self.folder = Path(tempfile.mkdtemp(prefix="log-path-profile-"))
        self.recorders: dict[str, tuple[subprocess.Popen, Path]] = {}

    def start(self, airflow, triggerer: str = "triggerer-1") -> None:
        """Attach to the supervisor and to each process it started."""
        supervisor = airflow.processes[triggerer].pid
        for pid in deploylib.descendants(supervisor):
            name = "supervisor" if pid == supervisor else f"trigger runner {pid}"
            out = self.folder / f"{pid}.txt"
            argv = [self.py_spy, "record", "--pid", str(pid), "--rate", str(self.rate), "--format", "raw"]
            argv += ["--output", str(out)]
            recorder = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.recorders[name] = (recorder, out)

    def stop(self) -> None:
        """End the recordings (SIGINT: py-spy then writes its file)."""
        for recorder, _ in self.recorders.values():
            recorder.send_signal(signal.SIGINT)
        for name, (recorder, _) in self.recorders.items():
            _, err = recorder.communicate(timeout=60)
            if recorder.returncode:
                raise RuntimeError(f"py-spy on the {name} failed ({recorder.returncode}): {err.decode()[-2000:]}")

    def summary(self) -> list[str]:
        """Return one line per process: its samples, and the functions holding most of them (self time)."""
        lines = []
        for name, (_, out) in self.recorders.items():
            stacks = read_collapsed(out)
            waiting = sum(n for stack, n in stacks.items() if stack[-1] == WAITING_WORKER)
            stacks = Counter({stack: n for stack, n in stacks.items() if stack[-1] != WAITING_WORKER})
            total = sum(stacks.values())
            lines.append(
                f"{name}: {total:,} samples ({waiting:,} more of thread-pool threads waiting for work left out); "
                f"self time: {top_self(stacks, total)}"
            )
            lines.append(f"{name}: time under: {top_inclusive(stacks, total)}")
        return lines


def read_collapsed(path: Path) -> Counter:
    """Read py-spy's raw output: ``frame;frame;... count`` per line (outermost frame first)."""
    stacks: Counter = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[tuple(short(frame) for frame in stack.split(";"))] += int(count)
    return stacks


def short(frame: str) -> str:
    """Return ``function (file)`` of a frame: no line number, only the path's last two parts."""
    match = FRAME.match(frame)
    if not match:
        return frame
    path = "/".join(Path(match["path"]).parts[-2:])
    return f"{match['function']} ({path})"


def top_self(stacks: Counter, total: int) -> str:
    """Return the functions most often at the top of the stack, with their share of the samples."""
    counts: Counter = Counter()
    for stack, n in stacks.items():
        counts[stack[-1]] += n
    return "; ".join(f"{frame} {n / total:.0%}" for frame, n in counts.most_common(TOP))


def top_inclusive(stacks: Counter, total: int, below: float = 0.9) -> str:
    """Return the functions most often anywhere on the stack (each once per sample), under ``below`` of all."""
    counts: Counter = Counter()
    for stack, n in stacks.items():
        for frame in set(stack):
            counts[frame] += n
    shown = [(frame, n) for frame, n in counts.most_common() if n < below * total][:TOP]
    return "; ".join(f"{frame} {n / total:.0%}" for frame, n in shown)
