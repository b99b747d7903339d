"""Argo v3.7.10's substitution on the sandbox: a hostile parameter value in a resource manifest is treated as the
real controller treats it (``workflow/common/util.go`` ``SubstituteParams``, ``workflow/validate/validate.go``).
"""

from __future__ import annotations

import pytest

from tests.integration.helpers import phase_of, submit_from_template, wait_for

pytestmark = pytest.mark.integration

MANIFEST = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{workflow.parameters.name}}
data:
  note: "{{workflow.parameters.note}}"
  input: "{{inputs.parameters.y}}"
"""


def _setup(sandbox, ns: str) -> None:
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "writer", "namespace": ns}}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "writer", "namespace": ns},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]},
            {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "writer", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "writer"},
        "subjects": [{"kind": "ServiceAccount", "name": "writer", "namespace": ns}],
    }
    template = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "WorkflowTemplate",
        "metadata": {"name": "write-cm", "namespace": ns},
        "spec": {
            "entrypoint": "main",
            "serviceAccountName": "writer",
            "arguments": {"parameters": [{"name": "name"}, {"name": "note"}]},
            "templates": [
                {
                    "name": "main",
                    "inputs": {"parameters": [{"name": "y", "value": "in-{{workflow.namespace}}"}]},
                    "resource": {"action": "create", "setOwnerReference": True, "manifest": MANIFEST},
                }
            ],
        },
    }
    for body in (account, role, binding, template):
        sandbox.apply(body)


def _ended(sandbox, ns: str, name: str) -> str:
    return wait_for(
        lambda: (
            phase_of(sandbox.api, "workflows", name, ns) in ("Succeeded", "Failed", "Error")
            and phase_of(sandbox.api, "workflows", name, ns)
        ),
        60,
        what=f"workflow {name} ended",
    )


def test_a_hostile_value_is_expanded_and_evaluated_as_argo_does(sandbox, sandbox_namespace):
    ns = sandbox_namespace
    _setup(sandbox, ns)
    note = "{{workflow.name}} {{inputs.parameters.y}} {{=sprig.upper('a')}} \\\" q"
    wf = submit_from_template(sandbox.api, ns, "write-cm", {"name": "cm-hostile", "note": note})
    name = wf["metadata"]["name"]
    assert _ended(sandbox, ns, name) == "Succeeded"
    cm = sandbox.api.get("configmaps", "cm-hostile", ns)
    # pass 2 of SubstituteParams parses the text pass 1 inserted: the tags in the value are expanded
    assert cm["data"] == {"note": f'{name} in-{ns} A " q', "input": f"in-{ns}"}
    assert cm["metadata"]["ownerReferences"][0]["uid"] == wf["metadata"]["uid"]


@pytest.mark.parametrize(
    ("note", "message"),
    [
        ("{{workflow.nope}}", "invalid spec: templates.main: failed to resolve {{workflow.nope}}"),
        (
            "del\x7f",
            "invalid spec: templates.main cannot finish template replacement because the result was invalid JSON",
        ),
        ('a"\nb: c', "invalid spec: templates.main.resource.manifest must be a valid yaml"),
    ],
)
def test_a_value_argo_cannot_resolve_or_parse_fails_the_workflow_at_validation(
    sandbox, sandbox_namespace, note, message
):
    ns = sandbox_namespace
    _setup(sandbox, ns)
    wf = submit_from_template(sandbox.api, ns, "write-cm", {"name": "cm-refused", "note": note})
    name = wf["metadata"]["name"]
    assert _ended(sandbox, ns, name) == "Failed"  # operator.go setExecWorkflow: markWorkflowFailed
    assert sandbox.api.get("workflows", name, ns)["status"]["message"] == message
    assert sandbox.api.get_or_none("configmaps", "cm-refused", ns) is None
