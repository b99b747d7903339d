"""DAGs of the gang-admission tests (issue 16 a, c): ``params.namespace`` picks the test namespace."""

from __future__ import annotations

from airflow.sdk import DAG

from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator
from tests.dags.mpi_test_dags import PARAMS, START

# a schedule_timeout shorter than the kubelet's image pull, and a master that fails its first attempt: each attempt
# stays Pending with no pod running longer than the timeout, though the gang scheduler admitted it
with DAG("test_mpi_slow_start_restarted", schedule=None, start_date=START, params=PARAMS) as mpi_slow_start_restarted:
    VolcanoMPIJobOperator(task_id="mpi", namespace="{{ params.namespace }}", max_retry=2, schedule_timeout=5)
