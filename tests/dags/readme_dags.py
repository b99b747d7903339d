"""The README's operator example, an Airflow DAG as written, but for its namespace (the run's conf ``namespace``).

The words "airflow" and "DAG" here let the DAG processor's safe mode parse this file.
"""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    """Return the README's operator example (the first Python block under "Using the operator")."""
    section = README.read_text().split("## Using the operator\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```\n", 1)[0]


# compiled under this file's name, so the DAG's fileloc is in the tests' DAG bundle (dag.test() runs only those)
exec(compile(readme_example().replace('namespace="argo"', "namespace=\"{{ dag_run.conf['namespace'] }}\""),
             __file__, "exec"))  # fmt: skip
