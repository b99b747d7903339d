"""Parameter validation (refused before anything is created) and name derivation."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_volcano_argo.models.mpi_job_parameters import VolcanoMPIJobParameters
from airflow_provider_volcano_argo.models.names import (
    derive_job_name,
    derive_name,
    derive_workflow_name,
    podgroup_name,
    safe_label_value,
    same_task_instance,
    task_instance_labels,
    task_instance_selector,
)
from airflow_provider_volcano_argo.models.params import (
    InvalidParameterError,
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
        ("mpi_command", "it's", "No closing quotation"),
        ("mpi_command", "   ", "must name the program"),
        ("mpi_args", "--x='a", "No closing quotation"),
        ("mpi_args", 5, "list of argument strings"),
        ("init_image", "Bad Image", "image reference"),
        ("ttl_seconds_after_finished", -1, "integer >= 0"),
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


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"slots_per_worker": 0}, "slots_per_worker: must be a positive integer (got 0)"),
        ({"queue": "Bad"}, "volcano_queue: must be a DNS-1123 label (lowercase letters, digits, '-') (got 'Bad')"),
        ({"max_retry": 0}, "max_retry: must be a positive integer (got 0)"),
        ({"gpus_per_worker": -1}, "gpus_per_worker: must be an integer >= 0 (got -1)"),
        ({"rdma_per_worker": -1}, "rdma_per_worker: must be an integer >= 0 (got -1)"),
        (
            {"memory_per_worker": "1 GB"},
            "memory_per_worker: must be a Kubernetes quantity such as 500m, 2, 4Gi (got '1 GB')",
        ),
        ({"min_available": 0}, "min_available: must be a positive integer (got 0)"),
        ({"workers": 2, "min_available": 4}, "min_available: must be at most workers + 1 = 3 (got 4)"),
        ({"master_after_workers": "yes"}, "master_after_workers: must be True or False (got 'yes')"),
        ({"job_name": "x" * 49}, f"job_name: must be at most 48 characters (got '{'x' * 49}')"),
        (
            {"image": "org/UPPER:1"},
            "image: must be an image reference like registry:5000/org/name:tag (got 'org/UPPER:1')",
        ),
        (
            {"priority_class": "Bad"},
            "priority_class: must be a DNS-1123 subdomain of at most 253 characters (got 'Bad')",
        ),
        (
            {"mpi_command": ["solver", "a\x00b"]},
            "mpi_command[1]: must be text without NUL (an argv string) (got 'a\\x00b')",
        ),
        (
            {"mpi_launcher_flags": ["--bind-to", 3]},
            "mpi_launcher_flags[1]: must be text without NUL (an argv string) (got 3)",
        ),
    ],
)
def test_each_rule_is_stated_with_the_field_and_the_value(changes, message):
    with pytest.raises(InvalidParameterError) as err:
        VolcanoMPIJobParameters(**{"job_name": "ok", **changes}).validate()
    assert str(err.value) == message
    assert err.value.rule == message.split(": ", 1)[1].rsplit(" (got ", 1)[0]


def test_the_value_shown_in_an_error_is_cut_after_80_characters():
    def shown(value: str) -> str:
        with pytest.raises(InvalidParameterError) as err:
            validate_workflow_parameters({"p": value})
        return str(err.value).split(" (got ", 1)[1][:-1]

    assert shown(";" + "x" * 77) == repr(";" + "x" * 77)  # a repr of 80 characters is shown whole
    assert shown(";" + "x" * 78) == repr(";" + "x" * 78)[:80] + "..."
    assert shown(";" + "x" * 200) == repr(";" + "x" * 200)[:80] + "..."


@pytest.mark.parametrize(("value", "code"), [("a\u00a0b", "U+00A0"), ("a\u2028b", "U+2028"), ("a\u200bb", "U+200B")])
def test_separators_and_format_characters_are_refused_but_a_space_is_not(value, code):
    with pytest.raises(
        InvalidParameterError, match=re.escape(f"must not contain control or separator character {code}")
    ):
        validate_workflow_parameters({"p": value})
    assert validate_workflow_parameters({"p": "a b"}) == {"p": "a b"}


def test_values_at_each_length_limit_pass():
    long_image = "a" * 255
    params = VolcanoMPIJobParameters(
        job_name="j" * 48, image=long_image, workers=2, min_available=3, priority_class="p" * 253
    )
    params.validate()
    with pytest.raises(InvalidParameterError, match="image reference"):
        VolcanoMPIJobParameters(job_name="j", image="a" * 256).validate()
    validate_submission("n" * 63, "w" * 253, {"k" * 63: "v" * 63, "example.com/" + "k" * 63: ""})
    with pytest.raises(InvalidParameterError) as err:
        validate_submission("argo", None, {"k" * 64: "v"})
    assert err.value.field == f"labels[{'k' * 64!r}]"


def test_argv_is_launcher_flags_then_the_command_split_as_a_shell_would_then_the_arguments_verbatim():
    hostile = ["a b", "$(id)", "`id`", "{{workflow.name}}", "{{=sprig.upper('x')}}", "x\ny", "it's", ";", "*"]
    params = VolcanoMPIJobParameters(
        job_name="j",
        mpi_command='solver --out="my dir/x" --n 2',
        mpi_args=hostile,
        mpi_launcher_flags=["--bind-to", "core", "-x", "OMP_NUM_THREADS"],
    )
    argv = ["--bind-to", "core", "-x", "OMP_NUM_THREADS", "solver", "--out=my dir/x", "--n", "2", *hostile]
    assert params.argv() == argv
    text = params.to_workflow_parameters()["mpi-argv"]
    assert json.loads(text) == argv and "{{" not in text and "\n" not in text
    assert VolcanoMPIJobParameters(job_name="j", mpi_command=["prog", "a b"]).argv() == ["prog", "a b"]


def test_every_template_parameter_comes_from_its_field():
    params = VolcanoMPIJobParameters(
        job_name="solver",
        workers=3,
        slots_per_worker=2,
        image="registry:5000/org/mpi:1.2",
        mpi_command="mpi_solver --steps 10",
        queue="hpc",
        min_available=2,
        max_retry=5,
        gpus_per_worker=1,
        rdma_per_worker=2,
        cpu_per_worker="2",
        memory_per_worker="4Gi",
        priority_class="high.priority",
        init_image="mirror.local/kubectl:1.30",
        ttl_seconds_after_finished=600,
    )
    parameters = params.to_workflow_parameters()
    decoded = {k: json.loads(v) for k, v in parameters.items() if v[:1] in "[{"}
    assert {k: v for k, v in parameters.items() if k not in decoded} == {
        "job-name": "solver",
        "workers": "3",
        "slots-per-worker": "2",
        "np": "6",
        "image": "registry:5000/org/mpi:1.2",
        "init-image": "mirror.local/kubectl:1.30",
        "queue": "hpc",
        "min-available": "2",
        "max-retry": "5",
    }
    devices = {"nvidia.com/gpu": "1", "rdma/ib": "2"}
    assert decoded == {
        "mpi-argv": ["mpi_solver", "--steps", "10"],
        "volcano-job-spec": {"priorityClassName": "high.priority", "ttlSecondsAfterFinished": 600},
        "mpimaster-pod": {"serviceAccountName": "argo"},
        "mpimaster-container": {"workingDir": "/home"},
        "mpimaster-pod-labels": {},
        "mpimaster-pod-annotations": {},
        "mpiworker-pod": {},
        "mpiworker-container": {
            "workingDir": "/home",
            "resources": {"requests": {"cpu": "2", "memory": "4Gi", **devices}, "limits": devices},
        },
        "mpiworker-pod-labels": {},
        "mpiworker-pod-annotations": {},
    }
    assert "priorityClassName" not in VolcanoMPIJobParameters(job_name="solver").job_spec()


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"p": None}, "parameters['p']: value must be a string or a number (got None)"),
        ({"p": {"a": 1}}, "parameters['p']: value must be a string or a number (got {'a': 1})"),
        ({"p": [1]}, "parameters['p']: value must be a string or a number (got [1])"),
        (
            {"x" * 129: "v"},
            f"parameters[{'x' * 129!r}]: name must be letters, digits, '-' and '_' (got '{'x' * 79}...)",
        ),
    ],
)
def test_free_parameters_must_be_named_plain_values(parameters, message):
    with pytest.raises(InvalidParameterError) as err:
        validate_workflow_parameters(parameters)
    assert str(err.value) == message
    assert validate_workflow_parameters({"x" * 128: 1.5}) == {"x" * 128: "1.5"}


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (["team"], "labels: must be a mapping of label keys to values (got ['team'])"),
        ({1: "x"}, "labels[1]: key must be [prefix/]name, name <= 63 of [A-Za-z0-9-_.] (got 1)"),
        ({"team": "a b"}, "labels['team']: value must be <= 63 of [A-Za-z0-9-_.], alphanumeric ends (got 'a b')"),
        ({"team": 1}, "labels['team']: value must be <= 63 of [A-Za-z0-9-_.], alphanumeric ends (got 1)"),
    ],
)
def test_labels_are_refused_naming_the_key_and_the_rule(labels, message):
    with pytest.raises(InvalidParameterError) as err:
        validate_submission("argo", None, labels)
    assert str(err.value) == message


RUN_ID = "manual__2026-12-02T19:00:00+00:00"


def test_names_are_the_readable_task_and_a_digest_of_the_whole_try():
    """The names are stored with runs in flight (a retry or a new triggerer finds the Workflow by them): they must
    not change between releases.
    """
    assert (
        derive_workflow_name("volcano-mpi", "etl", "Train_Model", RUN_ID, 0, 1) == "volcano-mpi-train-model-9ed535f9f2"
    )
    assert derive_job_name("etl", "Train_Model", RUN_ID, 0, 1) == "mpi-train-model-9ed535f9f2"
    # every part of the try is in the digest, the dag_id and the task_id's exact spelling too
    assert derive_workflow_name("volcano-mpi", "other", "Train_Model", RUN_ID, 0, 1) == (
        "volcano-mpi-train-model-8148ce363b"
    )
    assert derive_workflow_name("volcano-mpi", "etl", "train_model", RUN_ID, 0, 1) == (
        "volcano-mpi-train-model-609792a33e"
    )


def test_long_names_fill_their_budget_and_never_end_in_a_dash():
    assert derive_job_name("etl", "t" * 80, "r", 0, 1) == "mpi-" + "t" * 33 + "-1cec14cf84"  # 48 characters
    assert derive_workflow_name("volcano-mpi", "etl", "t" * 80, "r", 0, 1) == (
        "volcano-mpi-" + "t" * 40 + "-1cec14cf84"  # 63 characters
    )
    assert derive_name("--lead", "d", "x" * 80, "r", 0, 1) == "lead-" + "x" * 47 + "-16fb406bf8"
    # cut where the task_id had a '_': the dash it became is not kept
    assert derive_name("mpi", "d", "x" * 32 + "_y", "r", 0, 1, limit=48) == "mpi-" + "x" * 32 + "-ef1bf4e4e6"
    # nothing readable: a letter first, as a DNS label needs
    assert derive_name("", "d", "!!!", "r", 0, 1) == "t-2900be23db"


@pytest.mark.parametrize(
    ("value", "label"),
    [
        ("a" * 63, "a" * 63),  # valid and at the limit: kept
        (RUN_ID, "manual__2026-12-02T19-00-00-00-00-50eeeb4a"),
        ("X-ray scan", "X-ray-scan-263ee8d0"),
        ("a" * 64, "a" * 54 + "-ffe054fe"),
        ("a" * 53 + ":" + "b" * 20, "a" * 53 + "-9e87579a"),  # cut on the separator: not kept
        ("X" * 100 + "!", "X" * 54 + "-33c7c3e5"),
        ("!!!", "e84c538e"),
    ],
)
def test_label_values_that_are_not_valid_are_cleaned_cut_and_hashed(value, label):
    assert safe_label_value(value) == label


def test_task_instance_labels_and_selector():
    assert task_instance_labels("etl", "train", RUN_ID, -1, 2) == {
        "airflow.apache.org/dag-id": "etl",
        "airflow.apache.org/task-id": "train",
        "airflow.apache.org/run-id": "manual__2026-12-02T19-00-00-00-00-50eeeb4a",
        "airflow.apache.org/map-index": "none",
        "airflow.apache.org/try-number": "2",
        "app.kubernetes.io/managed-by": "airflow-provider-volcano-argo",
    }
    assert task_instance_labels("etl", "train", "r", 0, 1)["airflow.apache.org/map-index"] == "0"
    assert task_instance_selector("etl", "train", "r", 3) == (
        "airflow.apache.org/dag-id=etl,airflow.apache.org/task-id=train,"
        "airflow.apache.org/run-id=r,airflow.apache.org/map-index=3"
    )


def test_same_task_instance_compares_the_airflow_labels_only():
    mine = task_instance_labels("etl", "train", "r", 0, 1)
    assert same_task_instance(mine, {**mine, "team": "x", "app.kubernetes.io/managed-by": "someone"})
    assert not same_task_instance(mine, task_instance_labels("etl", "train", "r", 0, 2))
    assert not same_task_instance(mine, task_instance_labels("etl", "train", "r", 1, 1))
    assert not same_task_instance(mine, {"app.kubernetes.io/managed-by": "airflow-provider-volcano-argo"})


def test_podgroup_name():
    assert podgroup_name({"metadata": {"name": "mpi-j", "uid": "0b5e"}}) == "mpi-j-0b5e"
