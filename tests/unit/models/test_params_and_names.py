"""Parameter validation (refused before anything is created) and name derivation."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_volcano_argo.models.names import (
    derive_job_name,
    derive_workflow_name,
    safe_label_value,
    task_instance_labels,
)
from airflow_provider_volcano_argo.models.params import (
    InvalidParameterError,
    VolcanoMPIJobParameters,
    validate_submission,
    validate_workflow_parameters,
)

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def test_defaults_give_the_template_parameters():
    params = VolcanoMPIJobParameters(job_name="mpi-hello").to_workflow_parameters()
    assert params["job-name"] == "mpi-hello"
    assert params["np"] == "2" and params["min-available"] == "3"
    assert VolcanoMPIJobParameters(job_name="a", workers=4, slots_per_worker=3).to_workflow_parameters()["np"] == "12"
    after = VolcanoMPIJobParameters(job_name="a", workers=4, master_after_workers=True).to_workflow_parameters()
    assert after["min-available"] == "4"


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("workers", -1, "positive integer"),
        ("workers", 0, "positive integer"),
        ("workers", True, "positive integer"),
        ("job_name", "Bad_Name", "DNS-1123"),
        ("job_name", "x" * 49, "at most 48"),
        ("image", "org/UPPER:1", "image reference"),
        ("image", "ok/image:tag;rm -rf /", "image reference"),
        ("mpi_command", "hello; rm -rf /", "';'"),
        ("mpi_command", "echo $(id)", "'$'"),
        ("mpi_command", "a`b`", "'`'"),
        ("mpi_command", "line\nbreak", "'\\n'"),
        ("mpi_command", "{{workflow.name}}", "'{{'"),
        ("mpi_command", "it's", '"\'"'),
        ("cpu_per_worker", "lots", "quantity"),
        ("min_available", 9, "at most workers + 1"),
        ("priority_class", "Not Valid", "subdomain"),
        # a regex ``$`` also matches before a trailing newline: each pattern must match the whole value
        ("job_name", "ok\n", "DNS-1123"),
        ("image", "org/image:1\n", "image reference"),
        ("cpu_per_worker", "100m\n", "quantity"),
        ("priority_class", "high\n", "subdomain"),
    ],
)
def test_bad_values_name_field_and_rule(field, value, rule):
    with pytest.raises(InvalidParameterError) as err:
        VolcanoMPIJobParameters(**{"job_name": "ok", field: value}).validate()
    assert err.value.field == field
    assert str(err.value).startswith(f"{field}: ")
    assert rule.strip('"') in str(err.value)


@given(st.text(min_size=1, max_size=40))
def test_free_parameters_refuse_anything_that_escapes(value):
    hostile = any(s in value for s in ("\n", "{{", "'", '"', "$", "`", ";", "&", "|", "\\", "(", ")", "<", ">"))
    try:
        validate_workflow_parameters({"p": value})
        assert not hostile
    except InvalidParameterError as err:
        assert err.field == "parameters['p']"


@given(st.text(alphabet=st.characters(categories=("L", "N"), include_characters=" -_./:=,+%@~"), max_size=40))
def test_free_parameters_keep_every_value_that_cannot_escape(value):
    """The other direction: a value of letters, digits, spaces and harmless punctuation passes unchanged."""
    assert validate_workflow_parameters({"p": value, "n": 3}) == {"p": value, "n": "3"}


def test_free_parameter_names_are_checked():
    with pytest.raises(InvalidParameterError, match="name must be"):
        validate_workflow_parameters({"bad name": "x"})


ids = st.text(min_size=1, max_size=300)


@given(ids, ids, ids, st.integers(min_value=-1, max_value=10_000), st.integers(min_value=1, max_value=50))
def test_names_are_valid_and_stable(dag_id, task_id, run_id, map_index, try_number):
    wf = derive_workflow_name("volcano-mpi", dag_id, task_id, run_id, map_index, try_number)
    job = derive_job_name(dag_id, task_id, run_id, map_index, try_number)
    assert DNS_LABEL.match(wf) and len(wf) <= 63
    assert DNS_LABEL.match(job) and len(f"{job}-mpiworker-9999") <= 63
    assert wf == derive_workflow_name("volcano-mpi", dag_id, task_id, run_id, map_index, try_number)
    assert job != derive_job_name(dag_id, task_id, run_id, map_index + 1, try_number)
    assert job != derive_job_name(dag_id, task_id, run_id, map_index, try_number + 1)
    assert job != derive_job_name(dag_id, task_id, run_id + "x", map_index, try_number)
    for value in task_instance_labels(dag_id, task_id, run_id, map_index, try_number).values():
        assert LABEL_VALUE.match(value) and len(value) <= 63


def test_label_values_keep_readable_values_and_hash_others():
    assert safe_label_value("manual__2026-12-02T19:00:00+00:00") != safe_label_value("manual__2026-12-02T19:00:00")
    assert safe_label_value("etl_nightly") == "etl_nightly"


@pytest.mark.parametrize("interval", [0, -5])
def test_log_poll_interval_must_be_positive(interval):
    from airflow_provider_volcano_argo.operators.volcano_mpi import VolcanoMPIJobOperator

    with pytest.raises(ValueError, match="log_poll_interval"):
        VolcanoMPIJobOperator(task_id="t", log_poll_interval=interval)


@pytest.mark.parametrize(
    ("namespace", "workflow_name", "labels", "field"),
    [
        ("Argo", None, {}, "namespace"),
        ("argo/../kube-system", None, {}, "namespace"),
        ("argo", "Bad_Name", {}, "workflow_name"),
        ("argo", "x" * 254, {}, "workflow_name"),
        ("argo", None, {"team": "a b"}, "labels['team']"),
        ("argo", None, {"-bad": "x"}, "labels['-bad']"),
        ("argo", None, {"Example.COM/team": "a"}, "labels['Example.COM/team']"),
        ("argo", None, {"team": "x" * 64}, "labels['team']"),
        ("argo", None, ["team"], "labels"),
    ],
)
def test_what_names_the_workflow_is_checked_naming_the_field(namespace, workflow_name, labels, field):
    with pytest.raises(InvalidParameterError) as err:
        validate_submission(namespace, workflow_name, labels)
    assert err.value.field == field


def test_valid_names_and_labels_pass():
    validate_submission("argo", "nightly.solver-1", {"team": "hpc", "example.com/cost-center": "", "a.b_c": "v-1"})
