"""Pure rules of the emulators.

Argo conditions, substitution and node IDs; Volcano policies and phases; the example-mpi shell subset.
"""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.sandbox.argo.rules import (
    TemplateError,
    evaluate,
    join_spec,
    node_id,
    parse_condition,
    pod_name,
)
from airflow_provider_volcano_argo.sandbox.argo.substitution import substitute_template
from airflow_provider_volcano_argo.sandbox.kubelet.shell import hello_lines, logical_lines
from airflow_provider_volcano_argo.sandbox.volcano.rules import (
    Counts,
    PhaseAction,
    Request,
    next_phase,
    phase_action,
    request_action,
    resolve_action,
    with_defaults,
)

JOB = {"status": {"state": {"phase": "Failed"}}}


def test_node_ids_match_argo():
    # the facts' example, checked against Argo's get_test.go
    assert node_id("volcano-mpi-hello-1700000000", "volcano-mpi-hello-1700000000.submit-job") == (
        "volcano-mpi-hello-1700000000-3902843652"
    )
    assert node_id("wf", "wf") == "wf"
    assert pod_name(
        "volcano-mpi-hello-1700000000", "submit-volcano-job", "volcano-mpi-hello-1700000000.submit-job"
    ) == ("volcano-mpi-hello-1700000000-submit-volcano-job-3902843652")


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        ("status.state.phase == Failed", "failure condition 'status.state.phase==Failed' evaluated true"),
        ("status.state.phase = Failed", "failure condition 'status.state.phase==Failed' evaluated true"),
        (
            "status.state.phase in (Failed,Terminated,Aborted)",
            "failure condition 'status.state.phase in (Aborted,Failed,Terminated)' evaluated true",
        ),
    ],
)
def test_failure_conditions_render_like_argo(failure, message):
    assert evaluate("status.state.phase == Completed", failure, JOB) == ("Failed", message)


def test_success_needs_every_requirement_and_absent_keeps_polling():
    done = {"status": {"state": {"phase": "Completed"}, "succeeded": 3}}
    assert evaluate("status.state.phase == Completed,status.succeeded > 2", None, done) == ("Succeeded", "")
    assert evaluate("status.state.phase == Completed,status.succeeded > 3", None, done) == (None, "")
    assert evaluate("status.state.phase == Completed", "status.state.phase == Failed", {}) == (None, "")
    assert [str(r) for r in parse_condition("!status.x, status.y")] == ["!status.x", "status.y"]


def test_substitution_and_spec_join():
    template = {"inputs": {"parameters": [{"name": "task", "value": "a"}]}, "n": "{{steps.x.outputs.result}}"}
    template["m"] = "{{workflow.parameters.job-name}}-{{ inputs.parameters.task }}"
    done = substitute_template(template, {"workflow.parameters.job-name": "j1"})
    assert (done["m"], done["n"]) == ("j1-a", "{{steps.x.outputs.result}}")
    joined = join_spec(
        {"workflowTemplateRef": {"name": "t"}, "arguments": {"parameters": [{"name": "p", "value": "2"}]}},
        {
            "entrypoint": "main",
            "arguments": {"parameters": [{"name": "p", "value": "1"}, {"name": "q", "value": "x"}]},
            "templates": [{"name": "main"}],
        },
    )
    assert joined["entrypoint"] == "main"
    assert {p["name"]: p["value"] for p in joined["arguments"]["parameters"]} == {"p": "2", "q": "x"}
    with pytest.raises(TemplateError):
        from airflow_provider_volcano_argo.sandbox.argo.rules import workflow_scope

        workflow_scope(
            {"metadata": {"name": "w", "namespace": "n", "uid": "u"}},
            {"arguments": {"parameters": [{"name": "missing"}]}},
        )


SPEC = with_defaults(
    {
        "minAvailable": 3,
        "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
        "tasks": [
            {
                "name": "mpimaster",
                "replicas": 1,
                "policies": [
                    {"event": "TaskCompleted", "action": "CompleteJob"},
                    {"exitCode": 3, "action": "AbortJob"},
                ],
            },
            {"name": "mpiworker", "replicas": 2},
        ],
    }
)


def test_policies_task_first_then_job_then_sync():
    assert resolve_action(SPEC, Request("TaskCompleted", "mpimaster")) == "CompleteJob"
    assert resolve_action(SPEC, Request("PodFailed", "mpimaster", exit_code=3)) == "AbortJob"
    assert resolve_action(SPEC, Request("PodEvicted", "mpiworker")) == "RestartJob"
    assert resolve_action(SPEC, Request("PodFailed", "mpiworker", exit_code=1)) == "SyncJob"
    assert resolve_action(SPEC, Request("CommandIssued", action="TerminateJob")) == "TerminateJob"
    assert SPEC["queue"] == "default" and SPEC["maxRetry"] == 3 and SPEC["tasks"][1]["minAvailable"] == 2


@pytest.mark.parametrize(
    ("phase", "counts", "retries", "expected"),
    [
        ("Pending", Counts(running=3), 0, "Running"),
        ("Pending", Counts(running=2, pending=1), 0, "Pending"),
        ("Running", Counts(succeeded=3), 0, "Completed"),
        ("Running", Counts(succeeded=1, failed=2), 0, "Failed"),
        ("Restarting", Counts(terminating=1), 1, "Restarting"),
        ("Restarting", Counts(), 1, "Pending"),
        ("Restarting", Counts(pending=3), 1, "Pending"),  # restarting.go: total - terminating >= minAvailable
        ("Restarting", Counts(), 3, "Failed"),
        ("Completing", Counts(terminating=2), 0, "Completing"),
        ("Completing", Counts(succeeded=1), 0, "Completed"),
        ("Aborting", Counts(), 0, "Aborted"),
        ("Terminating", Counts(), 0, "Terminated"),
    ],
)
def test_phase_transitions(phase, counts, retries, expected):
    succeeded = {"mpimaster": min(counts.succeeded, 1), "mpiworker": max(counts.succeeded - 1, 0)}
    assert next_phase(phase, SPEC, counts, retries, succeeded) == expected


def test_restarting_goes_pending_once_enough_pods_are_not_terminating():
    spec = {**SPEC, "minAvailable": 2}
    assert next_phase("Restarting", spec, Counts(terminating=1), 1, {}) == "Pending"
    assert next_phase("Restarting", spec, Counts(terminating=2), 1, {}) == "Restarting"


@pytest.mark.parametrize(
    ("phase", "action", "expected"),
    [
        ("Running", "RestartJob", PhaseAction("none", "Restarting", retry=True)),
        ("Pending", "RestartTask", PhaseAction("none", "Restarting", retry=True)),
        ("Running", "CompleteJob", PhaseAction("soft", "Completing")),
        ("Running", "ResumeJob", PhaseAction(None)),
        ("Running", "SyncJob", PhaseAction(None)),
        ("Restarting", "SyncJob", PhaseAction(None)),
        ("Restarting", "RestartJob", PhaseAction("none")),  # no second retry
        ("Restarting", "CompleteJob", PhaseAction("none")),  # a TaskCompleted while restarting completes nothing
        ("Completing", "RestartJob", PhaseAction("soft")),  # an eviction while completing restarts nothing
        ("Terminating", "SyncJob", PhaseAction("soft")),
        ("Aborting", "ResumeJob", PhaseAction("soft", "Restarting", retry=True)),
        ("Aborted", "ResumeJob", PhaseAction("soft", "Restarting", retry=True)),
        ("Aborted", "RestartJob", PhaseAction("soft")),
        ("Completed", "RestartJob", PhaseAction("soft")),
    ],
)
def test_each_phase_handles_only_its_own_actions(phase, action, expected):
    assert phase_action(phase, action) == expected


def test_requests_of_an_older_job_version_only_sync():
    evicted = Request("PodEvicted", "mpiworker", version=1)
    assert request_action(SPEC, evicted, job_version=1) == "RestartJob"
    assert request_action(SPEC, evicted, job_version=2) == "SyncJob"
    assert request_action(SPEC, Request("CommandIssued", action="AbortJob"), job_version=2) == "AbortJob"


def test_mpi_shell_subset():
    assert logical_lines("a \\\n  b\n# c\n\nd") == ["a  b", "d"]  # as sh joins: the space before the backslash stays
    assert hello_lines(["j-mpiworker-0.j", "j-mpiworker-1.j", ""], 3) == [
        "Hello world from processor j-mpiworker-0, rank 0 out of 3 processors",
        "Hello world from processor j-mpiworker-1, rank 1 out of 3 processors",
        "Hello world from processor j-mpiworker-0, rank 2 out of 3 processors",
    ]
