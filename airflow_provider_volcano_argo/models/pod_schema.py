"""Check pod settings against the Kubernetes API schema and turn them into the API's JSON form.

A setting may be a ``kubernetes.client`` model or a plain dict in the API's own (camelCase) names, as
KubernetesPodOperator takes them. cncf-kubernetes converts dicts with the client's ``__deserialize_model``, which
drops keys it does not know, so ``{"configmap": ...}`` (a typo of ``configMap``) becomes a volume with no source
that the API server refuses much later, or a misspelt toleration field is silently lost. Here the walk over the
client models' ``openapi_types`` / ``attribute_map`` refuses such a key before anything is created, naming the
path (``volumes[0].configmap``), and the required fields are checked by building the model (its own validation).
"""

from __future__ import annotations

import re
from difflib import get_close_matches
from typing import Any

import kubernetes.client as k8s

from airflow_provider_volcano_argo.models.params import InvalidParameterError

_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\[str, (.+)\]$")


def _model(name: str) -> type:
    return getattr(k8s, name)


def _scalar(path: str, kind: str, value: Any) -> Any:
    expected: dict[str, tuple[type, ...]] = {"str": (str,), "int": (int,), "bool": (bool,), "float": (int,)}
    types = expected.get(kind)
    if types is None:  # "object" (IntOrString, raw JSON), "datetime": passed on as given
        return value
    if isinstance(value, bool) and kind != "bool" or not isinstance(value, types):
        raise InvalidParameterError(path, f"must be {'text' if kind == 'str' else 'an ' + kind}", value)
    return value


def to_api(path: str, value: Any, kind: str) -> Any:
    """Return ``value`` (a client model, or a dict in the API's names) as API JSON, refusing unknown keys.

    ``kind`` is an ``openapi_types`` type: ``V1Volume``, ``list[V1Toleration]``, ``dict[str, str]``, ``str`` ...
    """
    if value is None:
        return None
    if match := _LIST.match(kind):
        if not isinstance(value, (list, tuple)):
            raise InvalidParameterError(path, "must be a list", value)
        return [to_api(f"{path}[{i}]", item, match.group(1)) for i, item in enumerate(value)]
    if match := _DICT.match(kind):
        if not isinstance(value, dict):
            raise InvalidParameterError(path, "must be a mapping", value)
        return {_scalar(f"{path} key", "str", k): to_api(f"{path}[{k!r}]", v, match.group(1)) for k, v in value.items()}
    if not hasattr(k8s, kind) or not kind[:1].isupper():
        return _scalar(path, kind, value)
    model = _model(kind)
    if isinstance(value, model):  # as ApiClient.sanitize_for_serialization, checked on the way
        value = {model.attribute_map[attr]: getattr(value, attr) for attr in model.openapi_types}
    elif hasattr(value, "to_dict") and type(value).__module__.startswith("kubernetes"):
        raise InvalidParameterError(path, f"must be a {kind} (or a dict), not a {type(value).__name__}", value)
    if not isinstance(value, dict):
        raise InvalidParameterError(path, f"must be a {kind} or a dict in the API's names", value)
    by_json = {json_name: attr for attr, json_name in model.attribute_map.items()}
    result = {}
    for key, item in value.items():
        attr = by_json.get(key)
        if attr is None:
            close = [model.attribute_map[key]] if key in model.attribute_map else get_close_matches(key, by_json, 1)
            hint = f"did you mean {close[0]!r}?" if close else f"its fields: {', '.join(sorted(by_json))}"
            raise InvalidParameterError(f"{path}.{key}", f"is not a field of {kind}; {hint}", item)
        if item is not None:
            result[key] = to_api(f"{path}.{key}", item, model.openapi_types[attr])
    return result


def _build(value: Any, kind: str) -> Any:
    """Build the client model of API JSON ``value`` (as ``ApiClient`` deserialises): its setters check fields."""
    if match := _LIST.match(kind):
        return [_build(item, match.group(1)) for item in value]
    if match := _DICT.match(kind):
        return {key: _build(item, match.group(1)) for key, item in value.items()}
    if not hasattr(k8s, kind) or not kind[:1].isupper():
        return value
    model = _model(kind)
    by_json = {json_name: attr for attr, json_name in model.attribute_map.items()}
    return model(**{by_json[key]: _build(item, model.openapi_types[by_json[key]]) for key, item in value.items()})


def check_required(path: str, value: dict, kind: str) -> None:
    """Raise ``InvalidParameterError`` if the API JSON ``value`` lacks a field the ``kind`` model requires."""
    try:
        _build(value, kind)
    except (ValueError, TypeError) as error:
        raise InvalidParameterError(path, str(error), value) from None


def to_api_checked(path: str, value: Any, kind: str) -> Any:
    """``to_api`` and ``check_required`` (for each item of a ``list[...]`` kind)."""
    data = to_api(path, value, kind)
    if data is None:
        return None
    inner = _LIST.match(kind)
    items = list(enumerate(data)) if inner else [(None, data)]
    for index, item in items:
        check_required(path if index is None else f"{path}[{index}]", item, inner.group(1) if inner else kind)
    return data
