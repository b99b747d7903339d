"""Every trigger survives Airflow's own trip: ``serialize()``, a trigger row (serde + encryption), then the
triggerer's ``get_trigger_by_classpath`` and ``cls(**kwargs)``; and a row written by version 0.1 still loads.
"""

from __future__ import annotations

import types
import warnings

import pytest
from airflow.jobs.triggerer_job_runner import TriggerRunner
from airflow.models.trigger import Trigger

from airflow_provider_volcano_argo.hooks.connection import KubernetesConnection
from airflow_provider_volcano_argo.models.follow import FollowSpec
from airflow_provider_volcano_argo.triggers.argo_workflow import ArgoWorkflowTrigger
from airflow_provider_volcano_argo.triggers.phase import ObjectPhaseTrigger

#: What ``VolcanoWorkflowTrigger.serialize()`` of version 0.1 wrote (git show d2c9475), for a task deferred then.
V01_CLASSPATH = "airflow_provider_volcano_argo.triggers.volcano_workflow.VolcanoWorkflowTrigger"
V01_KWARGS = {
    "spec": {
        "namespace": "argo",
        "workflow_name": "volcano-mpi-mpi-0123456789",
        "workflow_uid": "5f1c0c4e-0000-4000-8000-000000000001",
        "job_name": "mpi-mpi-0123456789",
        "log_task": "mpimaster",
        "log_container": None,
        "stream_logs": True,
        "log_poll_interval": None,
        "prefix_job_names": False,
        "schedule_timeout": 600.0,
        "deadline": 1796400000.0,
    },
    "log_book": {"cursors": {"uid/mpimaster/0": {"ts": 1796390000000000000, "n": 2}}, "done": [], "headers": []},
    "on_kill_action": "stop_workflow",
    "connection": {"kubernetes_conn_id": "k8s", "cluster_context": "ctx", "config_file": None, "in_cluster": None},
}


def _through_a_trigger_row(classpath: str, kwargs: dict):
    """Store as the API server does, load as the triggerer does."""
    row = Trigger(classpath=classpath, kwargs=kwargs)
    loaded = Trigger._decrypt_kwargs(row.encrypted_kwargs)
    cls = TriggerRunner.get_trigger_by_classpath(types.SimpleNamespace(trigger_cache={}), row.classpath)
    return cls(**loaded)


TRIGGERS = [
    ArgoWorkflowTrigger(
        spec=FollowSpec(
            namespace="ns", workflow_name="wf", workflow_uid="u", job_name="j", deadline=1.5, labelled=["workflow"]
        ).to_dict(),
        log_book={"cursors": {"a/b/0": {"ts": 3, "n": 1}}, "done": ["a/b/0"], "headers": ["a/b/0"]},
        on_kill_action="keep_workflow",
        connection=KubernetesConnection("k8s", "ctx", "/etc/kube/config", False).to_dict(),
    ),
    ObjectPhaseTrigger(
        kind="volcano_job",
        name="job",
        namespace="ns",
        target_phases=["Completed"],
        failure_phases=["Failed", "Terminated", "Aborted"],
        deadline=1796400000.0,
        connection=KubernetesConnection().to_dict(),
        log_task="mpimaster",
        log_container="main",
    ),
]


@pytest.mark.parametrize("trigger", TRIGGERS, ids=lambda t: type(t).__name__)
def test_round_trip_through_airflows_trigger_serialization(trigger):
    rebuilt = _through_a_trigger_row(*trigger.serialize())
    assert type(rebuilt) is type(trigger)
    assert rebuilt.serialize() == trigger.serialize()


def test_a_trigger_row_of_version_0_1_loads_as_the_new_trigger_with_the_same_kwargs():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trigger = _through_a_trigger_row(V01_CLASSPATH, V01_KWARGS)
    assert type(trigger) is ArgoWorkflowTrigger
    assert trigger.serialize()[1] == V01_KWARGS
    assert FollowSpec(**trigger.spec).job_name == "mpi-mpi-0123456789"
    assert FollowSpec(**trigger.spec).labelled == []  # its watches stay namespace-wide, as 0.1 watched
    assert KubernetesConnection.from_dict(trigger.connection) == KubernetesConnection("k8s", "ctx")
    assert any("VolcanoWorkflowTrigger is deprecated" in str(w.message) for w in caught)


def test_connection_settings_travel_whole():
    conn = KubernetesConnection("k8s", "ctx", "/etc/kube/config", True)
    assert KubernetesConnection.from_dict(conn.to_dict()) == conn
    assert KubernetesConnection.from_dict({}) == KubernetesConnection()
    hook = conn.async_hook()
    assert (hook.conn_id, hook.cluster_context, hook.config_file, hook.in_cluster) == (
        "k8s",
        "ctx",
        "/etc/kube/config",
        True,
    )
