"""Pure data and decisions: no Airflow, no asyncio, no I/O (``tests/unit/test_architecture.py`` checks it).

Everything the provider decides (names, parameters, phases and verdicts, policies, when a run has ended, which
log lines are new, what the task log and the XCom say) is a function of plain values here; the engine, hooks,
operators, sensors and triggers only move data in and out.
"""
