"""What the shipped templates create: the pod templates of the Volcano Job, rendered as Argo renders the manifest.

The resource template goes through the sandbox's Argo substitution (``SubstituteParams``: two passes over its
JSON, Go quoting, ``{{=`` evaluated) and its manifest is read as go-yaml v2 reads it (merge keys, refused
escapes). Whatever a DAG author (or whoever triggers a run) puts in a setting, the pod spec is exactly the
intended one.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_volcano_argo.models.mpi_job_parameters import VolcanoMPIJobParameters
from airflow_provider_volcano_argo.models.pod_settings import MPIPodSettings
from airflow_provider_volcano_argo.sandbox.argo.goyaml import load_manifest
from airflow_provider_volcano_argo.sandbox.argo.substitution import substitute_template
from airflow_provider_volcano_argo.templates import TEMPLATE_FILES, workflow_template

HOSTILE = [
    "{{workflow.name}}",
    "{{=sprig.upper('x')}}",
    "{{inputs.parameters.x}}",
    "a\nb: c",
    "'\"`$(id)`;",
    "}}",
    "{{",
    "\u2028\x85\ufeff",
    "yes",
    "~",
    '--opt="a b"',
    "$@",
    "*",
    "-np 99",
]
# argv strings cannot hold NUL (refused: see test_params_and_names)
characters = st.characters(codec="utf-8", exclude_characters="\x00").filter(
    lambda ch: ord(ch) <= 0xFFFF or unicodedata.category(ch)[0] not in "CZ"  # the rest is refused: test_inert_json
)
texts = st.one_of(st.text(characters), st.sampled_from(HOSTILE))


def render(parameters: dict[str, str], template: str = "volcano-mpi") -> dict:
    """Return the Volcano Job that Argo's resource step would create from ``template`` with ``parameters``."""
    body = workflow_template(template)
    given_ = {p["name"]: str(p.get("value", "")) for p in body["spec"]["arguments"]["parameters"]}
    given_.update(parameters)
    scope = {f"workflow.parameters.{k}": v for k, v in given_.items()} | {"workflow.name": "wf-1"}
    step = next(t for t in body["spec"]["templates"] if "resource" in t)
    return load_manifest(substitute_template(step, scope)["resource"]["manifest"])


POD_LABELS = {"workflows.argoproj.io/workflow": "wf-1", "app.kubernetes.io/managed-by": "airflow-provider-volcano-argo"}


def pods(job: dict) -> dict[str, dict]:
    return {task["name"]: task["template"] for task in job["spec"]["tasks"]}


@pytest.mark.parametrize("template", sorted(TEMPLATE_FILES))
def test_the_defaults_give_the_seeds_pods(template):
    job = render(VolcanoMPIJobParameters(job_name="hello").to_workflow_parameters(), template)
    master, worker = pods(job)["mpimaster"], pods(job)["mpiworker"]
    assert master["metadata"]["labels"] == POD_LABELS
    assert job["metadata"]["labels"] == POD_LABELS  # what the triggerer's watches select by
    assert master["spec"]["serviceAccountName"] == "argo" and "serviceAccountName" not in worker["spec"]
    container = master["spec"]["containers"][0]
    assert container["command"][:2] == ["/bin/sh", "-c"] and container["command"][3] == "mpimaster"
    assert container["args"] == ["mpi_hello_world"] and container["workingDir"] == "/home"
    assert 'exec mpiexec --allow-run-as-root --host ${MPI_HOST} -np 2 "$@"' in container["command"][2]
    assert worker["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"
    assert "priorityClassName" not in job["spec"] and "ttlSecondsAfterFinished" not in job["spec"]
    assert master["spec"]["initContainers"][0]["image"] == "mcr.microsoft.com/oss/kubernetes/kubectl:v1.26.3"


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    args=st.lists(texts, max_size=4),
    flags=st.lists(texts, max_size=3),
    env=st.dictionaries(st.text("ABCXYZ_", min_size=1, max_size=5), texts, max_size=3),
    annotation=texts,
    path=texts.filter(bool),
)
def test_any_value_reaches_the_pod_exactly(args, flags, env, annotation, path):
    parameters = VolcanoMPIJobParameters(
        job_name="j",
        mpi_command=["solver"],
        mpi_args=args,
        mpi_launcher_flags=flags,
        priority_class="high",
        ttl_seconds_after_finished=60,
        pods=MPIPodSettings(
            env_vars=env,
            volumes=[{"name": "scratch", "hostPath": {"path": path}}],
            volume_mounts=[{"name": "scratch", "mountPath": path}],
            working_dir=path,
            pod_overrides={"mpiworker": {"metadata": {"annotations": {"note": annotation}}}},
        ),
    ).to_workflow_parameters()
    job = render(parameters)
    assert job["spec"]["priorityClassName"] == "high" and job["spec"]["ttlSecondsAfterFinished"] == 60
    master, worker = pods(job)["mpimaster"], pods(job)["mpiworker"]
    env_list = [{"name": k, "value": v} for k, v in env.items()]
    for role, pod in (("mpimaster", master), ("mpiworker", worker)):
        container = pod["spec"]["containers"][0]
        assert container["name"] == role and container["image"] == "volcanosh/example-mpi:0.0.3"
        assert container.get("env", []) == env_list
        assert container["volumeMounts"] == [{"name": "scratch", "mountPath": path}]
        assert container["workingDir"] == path
        assert pod["spec"]["volumes"] == [{"name": "scratch", "hostPath": {"path": path}}]
        assert pod["metadata"]["labels"] == POD_LABELS
    assert master["spec"]["containers"][0]["args"] == [*flags, "solver", *args]
    assert worker["metadata"]["annotations"] == {"note": annotation} and master["metadata"]["annotations"] == {}
