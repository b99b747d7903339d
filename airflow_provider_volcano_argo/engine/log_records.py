"""How many of a log's lines go into one task-log record: ``[volcano_argo] log_lines_per_record``.

Airflow's triggerer moves every record of every trigger through one loop of its supervisor process, which reads
at most 4 KiB of the records' JSON per pass and queries the database twice in each pass (Airflow 3.3,
``TriggerRunnerSupervisor.run_once``): about 1,500 records per second on 2 cores, whatever a trigger does
(``benchmarks/log_path.py``). A record carries about 400 bytes of context (the task instance's ids, the logger,
the call site) besides its message, so several lines per record pass many times faster. With a value above 1, the
lines of one chunk read from ``pods/log`` (at most that many) go into one record, joined by newlines: each line
stays a line of its own in the task log (the UI shows a record's message as it is, newlines included), but the
lines of a record share its timestamp and level, and a search in the UI finds the record.
"""

from __future__ import annotations

from collections.abc import Callable

SECTION = "volcano_argo"
DEFAULT_LINES_PER_RECORD = 1


def configured_lines_per_record() -> int:
    """Read ``[volcano_argo] log_lines_per_record`` from Airflow's configuration; refuse a value below 1."""
    from airflow.configuration import conf

    value = conf.getint(SECTION, "log_lines_per_record", fallback=DEFAULT_LINES_PER_RECORD)
    if value < 1:
        raise ValueError(f"[{SECTION}] log_lines_per_record must be >= 1 (1: a record per line), got {value}")
    return value


class LineRecords:
    """Collects lines and hands them to ``emit`` as records of at most ``lines_per_record`` lines."""

    def __init__(self, emit: Callable[[str], None], lines_per_record: int = DEFAULT_LINES_PER_RECORD):
        self.emit = emit
        self.lines_per_record = lines_per_record
        self._pending: list[str] = []

    def add(self, line: str) -> None:
        """Queue ``line``; emit the queue once it holds ``lines_per_record`` lines."""
        if self.lines_per_record == 1:
            self.emit(line)
            return
        self._pending.append(line)
        if len(self._pending) >= self.lines_per_record:
            self.flush()

    def flush(self) -> None:
        """Emit the queued lines as one record (nothing when none is queued)."""
        if self._pending:
            text = "\n".join(self._pending)
            self._pending.clear()
            self.emit(text)
