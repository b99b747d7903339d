"""Argo's template substitution, as harsh as upstream's.

Follows argoproj/argo-workflows v3.7.10:

- ``util/template/replace.go`` ``Replace``: the text must be valid JSON before, and after the replacement
  ``cannot finish template replacement because the result was invalid JSON``;
- ``util/template/template.go`` ``impl.Replace`` over valyala/fasttemplate (tags ``{{`` .. ``}}``: a lone ``}}`` is
  literal, a ``{{`` pairs with the next ``}}`` anywhere later, none at all is ``Cannot find end tag=...``); a tag
  starting with ``=`` goes to ``expression_template.go`` ``expressionReplace``, any other to
  ``simple_template.go`` ``simpleReplace`` (the value inserted as Go's ``strconv.Quote`` without its quotes);
- ``workflow/common/util.go`` ``ProcessArgs`` / ``SubstituteParams``: the whole template marshalled to JSON,
  a first pass with the globals (and ``pod.name``), a second pass over the first pass's text with the inputs too,
  so tags inside an inserted value are expanded by the second pass;
- ``workflow/validate/validate.go`` ``resolveAllVariables`` (leftover tags under Argo's prefixes).

``{{=expr}}`` tags are evaluated by ``expressions.py``; what it cannot evaluate is written back as it was, as
upstream does with an expression that fails while unresolved tags are allowed.
"""

from __future__ import annotations

import copy
import json
import unicodedata
from typing import Any

from airflow_provider_volcano_argo.sandbox.argo.expressions import Unresolved, evaluate_expression, expression_env

_NAMED_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
VALID_PREFIXES = ("item.", "steps.", "inputs.", "outputs.", "pod.", "workflow.", "tasks.")  # common.go


class SubstitutionError(ValueError):
    """Substitution failed as upstream's does (the message is upstream's)."""


def go_is_print(ch: str) -> bool:
    """Go's ``strconv.IsPrint``: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def go_quote(value: str) -> str:
    """Go's ``strconv.Quote(value)`` without its outer quotes (``strconv.appendEscapedRune``)."""
    out = []
    for ch in value:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif go_is_print(ch):
            out.append(ch)
        elif ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:  # not a valid rune: U+FFFD, which is printable (Go writes it raw)
            out.append("\ufffd")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def go_json_marshal(value: Any) -> str:
    """``encoding/json.Marshal``: compact, map keys sorted, ``<``, ``>``, ``&``, U+2028, U+2029 escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=isinstance(value, dict))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028")):
        text = text.replace(raw, escaped)
    return text.replace("\u2029", "\\u2029")


# encoding/json field order of the v1alpha1 structs a template holds (workflow_types.go), and the fields Go writes
# even when empty (structs, and fields without omitempty); other keys follow in their own order
_FIELDS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "template": (
        (
            "name", "inputs", "outputs", "nodeSelector", "affinity", "metadata", "daemon", "steps", "container",
            "containerSet", "script", "resource", "dag", "suspend", "data", "http", "plugin", "volumes",
            "initContainers", "sidecars", "archiveLocation", "activeDeadlineSeconds", "retryStrategy", "parallelism",
            "failFast", "tolerations", "schedulerName", "priorityClassName", "serviceAccountName",
            "automountServiceAccountToken", "executor", "hostAliases", "securityContext", "podSpecPatch", "metrics",
            "synchronization", "memoize", "timeout", "annotations",
        ),
        {"inputs": {}, "outputs": {}, "metadata": {}},
    ),
    "resource": (
        (
            "action", "mergeStrategy", "manifest", "manifestFrom", "setOwnerReference", "successCondition",
            "failureCondition", "flags",
        ),
        {"action": ""},
    ),
    "parameter": (("name", "default", "value", "valueFrom", "globalName", "enum", "description"), {"name": ""}),
    "task": (
        (
            "name", "template", "inline", "arguments", "templateRef", "dependencies", "withItems", "withParam",
            "withSequence", "when", "continueOn", "onExit", "depends", "hooks",
        ),
        {"name": "", "arguments": {}},
    ),
}  # fmt: skip


def _go_order(value: Any, kind: str) -> Any:
    """Return ``value`` with its keys in Go's field order (``kind`` names the struct)."""
    if not isinstance(value, dict):
        return value
    order, always = _FIELDS[kind]
    full = {**always, **value}
    out = {key: full[key] for key in order if key in full}
    out.update({key: item for key, item in full.items() if key not in out})
    for key in ("inputs", "outputs", "arguments"):
        if kind in ("template", "task") and isinstance(out.get(key), dict):
            params = out[key].get("parameters")
            if isinstance(params, list):
                out[key] = {**out[key], "parameters": [_go_order(p, "parameter") for p in params]}
    if kind == "template" and isinstance(out.get("resource"), dict):
        out["resource"] = _go_order(out["resource"], "resource")
    if kind == "template" and isinstance(out.get("dag"), dict):
        out["dag"] = {**out["dag"], "tasks": [_go_order(t, "task") for t in out["dag"].get("tasks") or []]}
    if kind == "template" and isinstance(out.get("steps"), list):
        out["steps"] = [[_go_order(s, "task") for s in group] for group in out["steps"]]
    return out


def template_json(template: dict) -> str:
    """``json.Marshal(tmpl)`` of a ``wfv1.Template``: Go's field order, its empty structs, its escaping."""
    return go_json_marshal(_go_order(template, "template"))


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)


def json_valid(text: str) -> bool:
    """``encoding/json.Valid``: no NaN or Infinity, no raw control characters, no Go-only escapes."""
    try:
        json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        return False
    return True


def parse_tags(text: str) -> list[tuple[str, bool]]:
    """Split ``text`` as ``fasttemplate.NewTemplate`` does: (text, False) and (tag, True) parts."""
    parts: list[tuple[str, bool]] = []
    rest = text
    while True:
        start = rest.find("{{")
        if start < 0:
            parts.append((rest, False))
            return parts
        parts.append((rest[:start], False))
        rest = rest[start + 2 :]
        end = rest.find("}}")
        if end < 0:
            raise SubstitutionError(
                f'Cannot find end tag="}}}}" in the template="{go_quote(text)}" starting from "{go_quote(rest)}"'
            )
        parts.append((rest[:end], True))
        rest = rest[end + 2 :]


def _simple_replace(tag: str, scope: dict[str, str], allow_unresolved: bool) -> str:
    """``simpleReplace``: the value Go-quoted; a nested ``{{`` inside the tag tried as a tag of its own."""
    key = tag.strip(" \t\n\v\f\r\x85\xa0")
    if key in scope:
        return go_quote(scope[key])
    index = tag.rfind("{{")
    if index > 0 and tag[index + 2 :] in scope:
        return "{{" + tag[:index] + go_quote(scope[tag[index + 2 :]])
    if allow_unresolved:
        return "{{" + tag + "}}"
    raise SubstitutionError(f"failed to resolve {{{{{tag}}}}}")


def replace(text: str, scope: dict[str, str], allow_unresolved: bool = True) -> str:
    """``util/template/replace.go`` ``Replace``: substitute the tags of a JSON text; the result must be JSON."""
    if not json_valid(text):
        raise SubstitutionError("cannot do template replacements with invalid JSON")
    out = []
    env = None
    for part, is_tag in parse_tags(text):
        if not is_tag:
            out.append(part)
        elif part.startswith("="):
            env = env if env is not None else expression_env(scope)
            out.append(_expression_replace(part[1:], env))
        else:
            out.append(_simple_replace(part, scope, allow_unresolved))
    result = "".join(out)
    if not json_valid(result):
        raise SubstitutionError("cannot finish template replacement because the result was invalid JSON")
    return result


def _expression_replace(expression: str, env: dict[str, Any]) -> str:
    """``expressionReplace`` with unresolved tags allowed (as ``SubstituteParams`` calls it)."""
    for escaped, raw in (("\\u003c", "<"), ("\\u003e", ">"), ("\\u0026", "&")):  # util/json.Fix
        expression = expression.replace(escaped, raw)
    written_back = "{{=" + expression + "}}"
    try:
        unescaped = json.loads(f'"{expression}"')
        result = evaluate_expression(unescaped, env)
    except (ValueError, Unresolved):
        return written_back
    try:
        marshalled = go_json_marshal(result)
    except (TypeError, ValueError):
        return written_back
    if len(marshalled) > 1 and marshalled[0] == '"' and marshalled[-1] == '"':
        return marshalled[1:-1]
    return go_quote(marshalled)


# -- SubstituteParams ----------------------------------------------------------------------------------------
def substitute_template(
    template: dict, global_scope: dict[str, str], local_scope: dict[str, str] | None = None
) -> dict:
    """``SubstituteParams``: two passes over the template's JSON; the second sees ``inputs.parameters.*``.

    Pass 1 substitutes the globals and ``local_scope`` (``pod.name``); the inputs' values are then read from
    pass 1's result and pass 2 runs over pass 1's text, so tags a value brought in are expanded by pass 2.
    Raise ``SubstitutionError`` with upstream's message when a pass fails.
    """
    scope = {**global_scope, **(local_scope or {})}
    first = replace(template_json(template), scope)
    replaced = json.loads(first)
    params = (replaced.get("inputs") or {}).get("parameters") or []
    for param in params:
        if "value" not in param and "valueFrom" not in param:
            raise SubstitutionError(f"inputs.parameters.{param['name']} had no value")
        if "value" in param:
            scope[f"inputs.parameters.{param['name']}"] = _any_string(param["value"])
    scope["inputs.parameters"] = go_json_marshal(params)
    return json.loads(replace(first, scope))


def _any_string(value: Any) -> str:
    """``AnyString.String()``: a parameter value as text (numbers as JSON writes them)."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def process_args(template: dict, arguments: dict | None, global_scope: dict, local_scope: dict | None = None) -> dict:
    """``ProcessArgs``: the inputs' values from the arguments (else their defaults), then ``substitute_template``."""
    processed = copy.deepcopy(template)
    given = {p["name"]: p for p in (arguments or {}).get("parameters") or []}
    for param in (processed.get("inputs") or {}).get("parameters") or []:
        if "default" in param:
            param["value"] = param["default"]  # overwriteWithDefaultParams
        if param["name"] in given and "value" in given[param["name"]]:
            param["value"] = given[param["name"]]["value"]  # overwriteWithArguments
        if "value" in param:
            param["value"] = _any_string(param["value"])
        elif "valueFrom" not in param:
            raise SubstitutionError(f"inputs.parameters.{param['name']} was not supplied")
    return substitute_template(processed, global_scope, local_scope)


def unresolved_tags(text: str, scope: dict[str, Any], allowed_prefixes: tuple[str, ...] = ()) -> list[str]:
    """``resolveAllVariables``: the tags under Argo's prefixes that ``scope`` does not hold (``{{=`` skipped)."""
    missing = []
    for tag, is_tag in parse_tags(text):
        if not is_tag or tag.startswith("="):
            continue
        key = tag.strip(" \t\n\v\f\r\x85\xa0")
        if not key.startswith(VALID_PREFIXES) or key in scope:
            continue
        if key.startswith(("outputs.", "workflow.creationTimestamp", "workflow.duration", *allowed_prefixes)):
            continue
        if key.startswith(("tasks.name", "steps.name", "node.name")):
            continue
        missing.append(tag)
    return missing
