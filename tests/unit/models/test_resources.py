"""The API resources' coordinates."""

from __future__ import annotations

from airflow_provider_volcano_argo.models.resources import PODS, VOLCANO_JOBS, WORKFLOWS


def test_collection_paths_of_core_and_group_resources():
    assert PODS.collection_path("ns") == "/api/v1/namespaces/ns/pods"
    assert VOLCANO_JOBS.collection_path("ns") == "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs"
    assert WORKFLOWS.label == "workflows.argoproj.io" and PODS.label == "pods"
