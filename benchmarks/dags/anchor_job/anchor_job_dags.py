"""DAGs of ``benchmarks/anchor_job.py``: the same work through ours and through cncf-kubernetes' own Job operator.

Both with their operators' defaults but for what the benchmark needs: ours on the shipped ``volcano-mpi`` template
with 1 worker; the anchor ``KubernetesJobOperator(deferrable=True)`` with ``wait_until_job_complete=True`` (without
it, it neither defers nor waits) as its own identity (connection ``bench_anchor``). What each pod does (run S
seconds) is scripted per namespace by the benchmark, on the sandbox's emulated kubelet.
"""

from __future__ import annotations

import datetime

from airflow.providers.cncf.kubernetes.operators.job import KubernetesJobOperator
from airflow.sdk import DAG, Param

from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator

START = datetime.datetime(2026, 1, 1)
PARAMS = {"namespace": Param("argo", type="string")}

with DAG("bench_ours", schedule=None, start_date=START, params=PARAMS, catchup=False):
    VolcanoMPIJobOperator(task_id="mpi", namespace="{{ params.namespace }}", workers=1)

with DAG("bench_anchor", schedule=None, start_date=START, params=PARAMS, catchup=False):
    KubernetesJobOperator(
        task_id="job",
        namespace="{{ params.namespace }}",
        name="work",
        image="bench/work:1",
        kubernetes_conn_id="bench_anchor",
        wait_until_job_complete=True,
        deferrable=True,
    )
