"""Argo v3.7.10's substitution as the emulated controller does it (``argo/substitution.py``, ``validate.py``).

``util/template`` (fasttemplate, ``simpleReplace``'s ``strconv.Quote``, ``expressionReplace``, the JSON check),
``workflow/common/util.go`` ``SubstituteParams`` (two passes), ``workflow/validate/validate.go``.
"""

from __future__ import annotations

import json

import pytest
import yaml

from airflow_provider_volcano_argo.sandbox.argo.goyaml import load_manifest
from airflow_provider_volcano_argo.sandbox.argo.rules import TemplateError
from airflow_provider_volcano_argo.sandbox.argo.substitution import (
    SubstitutionError,
    go_quote,
    process_args,
    replace,
    substitute_template,
)
from airflow_provider_volcano_argo.sandbox.argo.validate import validate_workflow

GLOBALS = {"workflow.name": "wf-1", "workflow.namespace": "team-a"}
INVALID_JSON = "cannot finish template replacement because the result was invalid JSON"


def _manifest(value: str, manifest: str | dict = "name: {{workflow.parameters.x}}") -> str:
    extra = manifest if isinstance(manifest, dict) else {"manifest": manifest}
    template = {"name": "main", "resource": {"action": "create", "manifest": extra.pop("manifest")}, **extra}
    return substitute_template(template, {**GLOBALS, "workflow.parameters.x": value})["resource"]["manifest"]


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ('a"b\\c', 'a\\"b\\\\c'),
        ("l1\nl2\tx", "l1\\nl2\\tx"),
        ("\x7f\x01\x07\x0b", "\\x7f\\x01\\a\\v"),
        ("\u2028\u00a0\u00ad", "\\u2028\\u00a0\\u00ad"),
        ("\U000e0001", "\\U000e0001"),
        ("é{{}}<&>\U0001f600", "é{{}}<&>\U0001f600"),
    ],
)
def test_values_are_quoted_as_go_strconv_quote(value, quoted):
    assert go_quote(value) == quoted


def test_a_tag_inside_a_value_is_expanded_by_the_second_pass():
    template = {
        "name": "main",
        "inputs": {"parameters": [{"name": "y", "value": "from-{{workflow.namespace}}"}]},
        "resource": {"manifest": "name: {{workflow.parameters.x}}"},
    }
    value = "{{workflow.name}}/{{inputs.parameters.y}}/{{inputs.parameters.nope}}"
    done = substitute_template(template, {**GLOBALS, "workflow.parameters.x": value})
    # pass 1 inserts the value as text; pass 2 parses that text again; unknown tags are written back
    assert done["resource"]["manifest"] == "name: wf-1/from-team-a/{{inputs.parameters.nope}}"
    assert done["inputs"]["parameters"][0]["value"] == "from-team-a"


def test_an_expression_in_a_value_is_evaluated():
    assert _manifest("{{=sprig.upper('a')}}") == "name: A"
    assert _manifest("{{=workflow.name + \"-\" + sprig.lower('X')}}") == "name: wf-1-x"
    template = {"name": "t", "inputs": {"parameters": [{"name": "p"}]}, "m": "{{=inputs.parameters['p']}}"}
    assert process_args(template, {"parameters": [{"name": "p", "value": "v"}]}, GLOBALS)["m"] == "v"
    # what it cannot evaluate (unknown names, nil, unsupported syntax) is written back as upstream does
    assert (
        _manifest("{{=nope}} {{=workflow.nope}} {{=1 ? 2 : 3}}") == "name: {{=nope}} {{=workflow.nope}} {{=1 ? 2 : 3}}"
    )


@pytest.mark.parametrize("value", ["a\x7fb", "tag\U000e0001", "bell\x07", "esc\x1b[0m"])
def test_a_value_go_quotes_into_invalid_json_fails_the_substitution(value):
    with pytest.raises(SubstitutionError, match=INVALID_JSON):
        _manifest(value)


def test_quotes_newlines_and_bmp_controls_stay_valid_json():
    assert _manifest('a"b\nc\u2028d\\e') == 'name: a"b\nc\u2028d\\e'


def test_a_lone_open_tag_without_an_end_is_an_error_and_one_with_a_later_end_swallows_text():
    with pytest.raises(SubstitutionError, match=r'^Cannot find end tag="}}" in the template='):
        # no "}}" after the value: the template does not end with the resource object (Go's field order)
        _manifest("x{{y", {"manifest": "name: {{workflow.parameters.x}}", "serviceAccountName": "s"})
    # the resource object and the template end together ("}}"): the lone {{ pairs with them, written back
    assert _manifest("x{{y") == "name: x{{y"
    # the lone {{ pairs with the next }} (here the unresolved input tag's): the junk tag's nested part resolves
    template = {
        "name": "main",
        "inputs": {"parameters": [{"name": "y", "value": "Y"}]},
        "m": "{{workflow.parameters.x}}-{{inputs.parameters.y}}",
    }
    done = substitute_template(template, {**GLOBALS, "workflow.parameters.x": "a{{b"})
    assert done["m"] == "a{{b-Y"
    assert replace('"a }} b"', {}) == '"a }} b"'  # a lone }} is literal


def test_a_one_line_json_value_with_escaped_braces_passes_unchanged():
    value = '{"a":"\\u007b\\u007bworkflow.name\\u007d\\u007d","b":[1,2]}'
    assert _manifest(value, "data: '{{workflow.parameters.x}}'") == f"data: '{value}'"
    assert json.loads(load_manifest(_manifest(value, "data: '{{workflow.parameters.x}}'"))["data"]) == {
        "a": "{{workflow.name}}",
        "b": [1, 2],
    }


def _templates(manifest: str) -> dict:
    return {
        "main": {
            "name": "main",
            "dag": {
                "tasks": [
                    {
                        "name": "t",
                        "template": "r",
                        "arguments": {"parameters": [{"name": "p", "value": "{{workflow.parameters.x}}"}]},
                    }
                ]
            },
        },
        "r": {
            "name": "r",
            "inputs": {"parameters": [{"name": "p"}]},
            "resource": {"action": "create", "manifest": manifest},
        },
    }


@pytest.mark.parametrize(
    ("value", "manifest", "message"),
    [
        (
            "{{workflow.nope}}",
            "name: {{inputs.parameters.p}}",
            "templates.main.tasks.t failed to resolve {{workflow.nope}}",
        ),
        (
            "{{inputs.parameters.q}}",
            "name: {{inputs.parameters.p}}",
            "templates.main.tasks.t failed to resolve {{inputs.parameters.q}}",
        ),
        ("a\x7f", "name: {{inputs.parameters.p}}", f"templates.main {INVALID_JSON}"),
        ("a: b", "name: {{inputs.parameters.p}}", "templates.r.resource.manifest must be a valid yaml"),
        ("\\ud83d", 'name: "{{inputs.parameters.p}}"', "templates.r.resource.manifest must be a valid yaml"),
        ("\\/", 'name: "{{inputs.parameters.p}}"', "templates.r.resource.manifest must be a valid yaml"),
    ],
)
def test_validation_refuses_what_argo_refuses(value, manifest, message):
    with pytest.raises(TemplateError) as caught:
        validate_workflow(_templates(manifest), "main", {}, {**GLOBALS, "workflow.parameters.x": value})
    assert str(caught.value) == message


def test_validation_passes_resolved_values_and_skips_expressions():
    scope = {**GLOBALS, "workflow.parameters.x": "{{workflow.name}}"}
    validate_workflow(_templates("name: {{inputs.parameters.p}}\nx: {{=sprig.nothing(1)}}"), "main", {}, scope)


def test_manifests_are_read_as_go_yaml_v2_reads_them():
    # a merge map overrides the keys before it, not those after it (PyYAML: explicit keys always win)
    assert load_manifest("b: 1\n<<: {b: 2, c: 2}\nc: 3\n") == {"b": 2, "c": 3}
    assert load_manifest("<<: [{a: 1}, {a: 2, d: 2}]\n") == {"a": 1, "d": 2}
    for text in ('a: "\\/"', 'a: "\\ud83d"', "a: \x7f", "a: \x80"):
        with pytest.raises(yaml.YAMLError):
            load_manifest(text)
