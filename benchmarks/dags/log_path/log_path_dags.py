"""DAGs of the log path benchmark (``benchmarks/log_path.py``), started through Airflow's REST API.

``bench_log_path_ours``: the provider's operator following a master that prints pre-written lines (scripted per
namespace by the benchmark). ``bench_log_path_ceiling``: a deferrable task whose trigger only logs pre-made lines.
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG, Param

from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator
from benchmarks.dags.log_path.premade_lines import PremadeLinesOperator

START = datetime.datetime(2026, 1, 1)

with DAG(
    "bench_log_path_ours",
    schedule=None,
    start_date=START,
    catchup=False,
    params={"namespace": Param("bench", type="string")},
):
    VolcanoMPIJobOperator(task_id="mpi", namespace="{{ params.namespace }}")

with DAG(
    "bench_log_path_ceiling",
    schedule=None,
    start_date=START,
    catchup=False,
    params={
        "tag": Param("ceiling", type="string"),
        "count": Param(10000, type="integer"),
        "per_record": Param(1, type="integer"),
    },
):
    PremadeLinesOperator(
        task_id="lines", tag="{{ params.tag }}", count="{{ params.count }}", per_record="{{ params.per_record }}"
    )
