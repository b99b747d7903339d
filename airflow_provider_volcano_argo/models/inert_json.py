r"""JSON text that reaches a Kubernetes object unchanged through Argo's parameter substitution and YAML parsing.

Settings that are not plain words (volumes, env, argv ...) go to the WorkflowTemplate as Workflow parameters and
are placed in its resource manifest as ``key: {{workflow.parameters.x}}``. Argo inserts a parameter's text as is,
substitutes again later (global parameters first, then inputs: ``workflow/common/util.go: SubstituteParams``) and
evaluates ``{{=expr}}`` tags (``util/template``), then the manifest is parsed as YAML (``sigs.k8s.io/yaml``). So
the text written here:

- has no ``{`` or ``}`` inside a string (written ``\u007b`` / ``\u007d``): no value can open a tag, whatever
  it holds, and a structural ``{`` is never followed by another one (an object starts with a key);
- never has two structural ``}`` side by side (``} }``), so it never holds ``}}`` either;
- is one line of JSON, which YAML reads as a flow collection of double-quoted strings: no YAML type guessing
  (``yes``, ``1e3``, ``~`` stay strings), and every character YAML would fold, refuse or read as a line break
  (C0/C1 controls, U+0085, U+2028, U+2029, U+FEFF ...) is a ``\uXXXX`` escape, which Argo's ``strconv.Quote``
  (``util/template/simple_template.go``) leaves valid JSON;
- refuses what has no such form: go-yaml refuses ``\u`` escapes of surrogates, so a control or separator
  beyond U+FFFF (which ``strconv.Quote`` writes ``\U000e0001``, invalid JSON: Argo fails the Workflow) cannot
  pass; floats and integers beyond 2**53 change (go-yaml normalises numbers); keys over 1024 characters are
  refused by go-yaml (its simple-key limit).
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any


class NotInertError(ValueError):
    """A value has no exact form here (a float, a lone surrogate, a non-text key, an object)."""


def _escape_char(ch: str) -> str:
    if ch in "{}" or ord(ch) <= 0xFFFF and ch != " " and unicodedata.category(ch)[0] in "CZ":
        return f"\\u{ord(ch):04x}"
    return ch


def _string(text: str) -> str:
    for ch in text:
        if 0xD800 <= ord(ch) <= 0xDFFF:
            raise NotInertError("text holds a lone surrogate, which is not Unicode text")
        if ord(ch) > 0xFFFF and unicodedata.category(ch)[0] in "CZ":
            raise NotInertError(f"U+{ord(ch):X} (a control, format or unassigned character) cannot pass Argo")
    # json.dumps escapes the quote, the backslash and C0 controls; braces, DEL and the rest are escaped here
    return "".join(_escape_char(ch) for ch in json.dumps(text, ensure_ascii=False))


def _encode(value: Any) -> str:
    if isinstance(value, str):
        return _string(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        if abs(value) > 2**53:
            raise NotInertError(f"{value} is beyond 2**53: YAML parsing would change it")
        return str(value)
    if isinstance(value, float):
        # go-yaml (YAML 1.1) reads 1e+16 as text; no pod spec field is a float (quantities are text)
        raise NotInertError(f"{value!r}: a float has no exact YAML form; write quantities as text ('1.5')")
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str) or len(key) > 1000:
                raise NotInertError(f"mapping key {str(key)[:40]!r} is not text of at most 1000 characters")
        items = ", ".join(f"{_string(k)}: {_encode(v)}" for k, v in value.items())
        return "{" + items + " }" if items.endswith("}") else "{" + items + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_encode(v) for v in value) + "]"
    raise NotInertError(f"{type(value).__name__} has no JSON form")


def inert_json(value: Any) -> str:
    """Return ``value`` as one line of JSON that Argo substitution and YAML parsing leave exactly ``value``."""
    return _encode(value)
