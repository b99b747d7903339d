"""The Workflow object a task submits."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.models.submission import (
    submitted_parameters,
    with_submission,
    workflow_from_manifest,
    workflow_from_template,
)

LABELS = {"airflow.apache.org/dag-id": "d"}


def test_from_a_template_as_argo_submit_from_does():
    body = with_submission(workflow_from_template("volcano-mpi"), "wf-1", LABELS, {"workers": "3"})
    assert body == {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "name": "wf-1",
            "labels": {"workflows.argoproj.io/workflow-template": "volcano-mpi", **LABELS},
        },
        "spec": {
            "workflowTemplateRef": {"name": "volcano-mpi"},
            "arguments": {"parameters": [{"name": "workers", "value": "3"}]},
        },
    }
    assert submitted_parameters(body) == {"workers": "3"}


def test_an_inline_manifest_is_copied_named_and_its_arguments_overridden_by_name():
    manifest = {
        "metadata": {"generateName": "x-"},
        "spec": {"arguments": {"parameters": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]}},
    }
    body = with_submission(workflow_from_manifest(manifest, "workflow"), "wf-2", LABELS, {"b": "9"})
    assert body["metadata"] == {"name": "wf-2", "labels": LABELS}
    assert submitted_parameters(body) == {"a": "1", "b": "9"}
    assert manifest["metadata"] == {"generateName": "x-"}  # the caller's manifest is left alone


def test_annotations_are_added_to_a_manifests_own_and_win_by_key():
    manifest = {"metadata": {"annotations": {"team": "cfd", "volcano-argo.airflow.apache.org/durable": "x"}}}
    body = with_submission(
        workflow_from_manifest(manifest, "workflow"),
        "wf",
        LABELS,
        {},
        {"volcano-argo.airflow.apache.org/durable": "true"},
    )
    assert body["metadata"]["annotations"] == {"team": "cfd", "volcano-argo.airflow.apache.org/durable": "true"}


@pytest.mark.parametrize("manifest", [None, [], "text", {"kind": "WorkflowTemplate"}])
def test_anything_but_one_workflow_manifest_is_refused(manifest):
    with pytest.raises(ValueError, match="workflow_file 'f.yaml': must hold one Argo Workflow manifest"):
        workflow_from_manifest(manifest, "workflow_file 'f.yaml'")


def test_a_bare_manifest_is_completed_as_a_workflow():
    body = workflow_from_manifest({}, "workflow")
    assert body == {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {}}
    assert with_submission({}, "wf-3", LABELS, {"a": "1"}) == {
        "metadata": {"name": "wf-3", "labels": LABELS},
        "spec": {"arguments": {"parameters": [{"name": "a", "value": "1"}]}},
    }


def test_a_manifest_keeps_its_own_api_version():
    body = workflow_from_manifest({"apiVersion": "argoproj.io/v1beta1", "kind": "Workflow"}, "workflow")
    assert body["apiVersion"] == "argoproj.io/v1beta1"


def test_submitted_parameters_of_a_workflow_without_arguments_or_values():
    assert submitted_parameters({}) == {}
    assert submitted_parameters({"spec": {"arguments": {}}}) == {}
    assert submitted_parameters(
        {"spec": {"arguments": {"parameters": [{"name": "a"}, {"name": "n", "value": 3}]}}}
    ) == {
        "a": "",
        "n": "3",
    }
