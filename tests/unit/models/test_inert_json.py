"""inert_json: any value placed as ``key: {{param}}`` in a manifest parses back exactly, and opens no Argo tag."""

from __future__ import annotations

import unicodedata

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_volcano_argo.models.inert_json import NotInertError, inert_json
from airflow_provider_volcano_argo.sandbox.argo.goyaml import load_manifest
from airflow_provider_volcano_argo.sandbox.argo.substitution import substitute_template

HOSTILE = [
    "{{workflow.name}}",
    "{{=sprig.upper('x')}}",
    "a\nb: c",
    "'\"`$(id)`;",
    "}}{{",
    "\u2028\x85\ufeff\x7f",
    "yes",
    "~",
    "1e3",
    "- x",
    "# c",
    "&a *a",
    "\\u007b",
    "😀",
]

# beyond U+FFFF only characters Argo and YAML carry raw (the others are refused: see the last test)
carried = st.characters(codec="utf-8").filter(lambda ch: ord(ch) <= 0xFFFF or unicodedata.category(ch)[0] not in "CZ")
texts = st.one_of(st.text(carried), st.sampled_from(HOSTILE))
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), texts),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=20,
)


def placed(value: object) -> str:
    """A manifest as the template writes it, after Argo inserted the parameter's text."""
    manifest = "spec:\n  nested:\n    field: {{workflow.parameters.x}}\n    after: {{workflow.name}}\n"
    scope = {"workflow.parameters.x": inert_json(value), "workflow.name": "wf"}
    return substitute_template({"resource": {"manifest": manifest}}, scope)["resource"]["manifest"]


@given(values)
def test_any_value_parses_back_exactly_from_its_place_in_a_manifest(value):
    assert load_manifest(placed(value)) == {"spec": {"nested": {"field": value, "after": "wf"}}}
    assert yaml.safe_load(placed(value)) == {"spec": {"nested": {"field": value, "after": "wf"}}}


@given(values)
def test_the_text_is_one_line_and_holds_no_tag_so_no_later_pass_can_expand_it(value):
    text = inert_json(value)
    assert "{{" not in text and "}}" not in text and "\n" not in text


@pytest.mark.parametrize(
    "value", [1.5, float("nan"), {1: "a"}, "\ud800", "\U000e0001", 2**60, {"k" * 1001: 1}, object()]
)
def test_values_without_an_exact_form_are_refused(value):
    with pytest.raises(NotInertError):
        inert_json(value)
