"""Which of a run's objects carry the provider's label: read from the manifests a Workflow runs."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.models.owned_labels import (
    LABELLED_JOBS,
    LABELLED_PODS,
    carries_owned_label,
    labelled_kinds,
    run_spec,
    template_ref,
    unlabelled_note,
    without_expressions,
)
from airflow_provider_volcano_argo.templates import TEMPLATE_FILES, workflow_template, yaml_documents

OWNED = {"app.kubernetes.io/managed-by": "airflow-provider-volcano-argo"}


def _spec(manifest: str, **extra) -> dict:
    return {"templates": [{"name": "main", "resource": {"action": "create", "manifest": manifest}}, *extra.values()]}


JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {{workflow.parameters.job-name}}
  labels:
    app.kubernetes.io/managed-by: airflow-provider-volcano-argo
spec:
  tasks:
    - name: mpimaster
      replicas: {{workflow.parameters.workers}}
      template:
        metadata:
          labels:
            <<: {{workflow.parameters.mpimaster-pod-labels}}
            app.kubernetes.io/managed-by: airflow-provider-volcano-argo
        spec:
          containers: [{name: mpimaster, image: "{{workflow.parameters.image}}"}]
"""


@pytest.mark.parametrize("name", sorted(TEMPLATE_FILES))
def test_the_shipped_templates_label_their_jobs_and_every_pod_template(name):
    assert labelled_kinds(workflow_template(name)["spec"], yaml_documents) == {LABELLED_JOBS, LABELLED_PODS}


def test_a_merged_parameter_cannot_stand_in_for_the_label():
    """``<<: {{...}}`` merges what a run passes: only the keys the template writes itself count."""
    manifest = JOB.replace("            app.kubernetes.io/managed-by: airflow-provider-volcano-argo\n", "")
    assert labelled_kinds(_spec(manifest), yaml_documents) == {LABELLED_JOBS}
    docs = yaml_documents(without_expressions(manifest))
    assert docs[0]["spec"]["tasks"][0]["template"]["metadata"]["labels"] == {}


def test_a_job_without_the_label_leaves_jobs_and_pods_to_the_namespace_wide_watches():
    manifest = JOB.replace("  labels:\n    app.kubernetes.io/managed-by: airflow-provider-volcano-argo\n", "")
    assert labelled_kinds(_spec(manifest), yaml_documents) == set()


@pytest.mark.parametrize(
    "spec",
    [
        None,
        {},
        {"workflowTemplateRef": {"name": "volcano-mpi"}},  # the template is read for this
        {"templates": [{"name": "main", "container": {"image": "x"}}]},  # no Volcano Job it holds the manifest of
        _spec(JOB, other={"name": "more", "steps": [[{"name": "s", "templateRef": {"name": "t", "template": "x"}}]]}),
        _spec(JOB + "\n  bad: [unclosed\n"),  # not YAML even with the expressions stood in for
        _spec(JOB.replace("kind: Job", "kind: {{workflow.parameters.kind}}")),
    ],
)
def test_what_cannot_be_known_before_the_jobs_exist_is_not_narrowed(spec):
    assert labelled_kinds(spec, yaml_documents) == set()


def test_every_job_of_a_workflow_must_carry_it():
    unlabelled = JOB.replace("app.kubernetes.io/managed-by: airflow-provider-volcano-argo", "team: hpc")
    spec = _spec(JOB)
    spec["templates"].append({"name": "second", "resource": {"manifest": unlabelled}})
    assert labelled_kinds(spec, yaml_documents) == set()
    spec["templates"][1]["resource"]["manifest"] = JOB + "---\n" + JOB  # two documents, both labelled
    assert labelled_kinds(spec, yaml_documents) == {LABELLED_JOBS, LABELLED_PODS}


def test_other_resources_of_a_workflow_do_not_count():
    spec = _spec(JOB)
    spec["templates"].append({"name": "cm", "resource": {"manifest": "apiVersion: v1\nkind: ConfigMap\n"}})
    assert labelled_kinds(spec, yaml_documents) == {LABELLED_JOBS, LABELLED_PODS}


def test_carries_owned_label():
    assert carries_owned_label({"metadata": {"labels": dict(OWNED)}})
    assert not carries_owned_label({"metadata": {"labels": {"app.kubernetes.io/managed-by": "helm"}}})
    assert not carries_owned_label({"metadata": {}})
    assert not carries_owned_label(None)


def test_the_note_names_what_stays_namespace_wide_and_how_to_fix_it():
    everything = frozenset({LABELLED_JOBS, LABELLED_PODS})
    assert unlabelled_note("WorkflowTemplate ns/volcano-mpi", "ns", everything, shipped=True) is None
    shipped = unlabelled_note("WorkflowTemplate ns/volcano-mpi", "ns", frozenset(), shipped=True)
    assert "Volcano Jobs and log-task pods" in shipped and "volcano-argo install-templates --namespace ns" in shipped
    custom = unlabelled_note("WorkflowTemplate ns/mine", "ns", frozenset({LABELLED_JOBS}), shipped=False)
    assert "log-task pods of WorkflowTemplate ns/mine" in custom and "Volcano Jobs" not in custom
    assert "custom-template contract" in custom


def test_the_shipped_templates_keep_the_label_after_the_pod_labels_merge_key():
    """go-yaml lets a merge map override keys written before it: the label must come after ``<<:``."""
    for name in TEMPLATE_FILES:
        manifest = workflow_template(name)["spec"]["templates"][1]["resource"]["manifest"]
        for role in ("mpimaster", "mpiworker"):
            labels = manifest.split(f"<<: {{{{workflow.parameters.{role}-pod-labels}}}}", 1)[1].split("annotations:")[0]
            assert "app.kubernetes.io/managed-by: airflow-provider-volcano-argo" in labels, (name, role)


def test_a_workflow_runs_the_spec_argo_stored_or_the_template_read_or_its_own():
    own = {"spec": {"templates": [{"name": "x"}]}}
    assert run_spec(own, None) == own["spec"] and template_ref(own) is None
    by_ref = {"spec": {"workflowTemplateRef": {"name": "volcano-mpi"}}}
    template = {"spec": {"templates": [{"name": "t"}]}}
    assert template_ref(by_ref) == "volcano-mpi"
    assert run_spec(by_ref, template) == template["spec"]
    assert run_spec(by_ref, None) is None
    stored = {**by_ref, "status": {"storedWorkflowTemplateSpec": {"templates": [{"name": "s"}]}}}
    assert run_spec(stored, template) == stored["status"]["storedWorkflowTemplateSpec"]
    assert template_ref({"spec": {"workflowTemplateRef": {"name": "c", "clusterScope": True}}}) is None
