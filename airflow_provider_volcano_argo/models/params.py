"""Checks of parameter values, done before anything is created; each error names the field.

Plain-text parameters (names, numbers, quantities, an image, free-form ``parameters`` of any template) are
substituted into a manifest as text. They often come from DAG params that whoever triggers a run can set, so the
rules are strict: a value that could break out of its YAML scalar or a shell word (newline, quote, ``{{``, ``$``,
backtick, ``;`` ...) is refused, not escaped. Structured settings and argv go as inert JSON
(``models/inert_json.py``) instead, so they may hold any text.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from airflow_provider_volcano_argo.models.names import MAX_NAME

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_PARAMETER_NAME = re.compile(r"^[A-Za-z0-9_][-A-Za-z0-9_]*$")
_QUANTITY = re.compile(r"^([0-9]+(\.[0-9]+)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[0-9]+)?$")
# Docker reference grammar (distribution/reference): [host[:port]/]path[:tag][@digest]
_IMAGE = re.compile(
    r"^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
    r"(?::[0-9]+)?)/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
    r"(?:@sha256:[a-f0-9]{64})?$"
)
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
FORBIDDEN = ("\n", "\r", "\x00", "{{", "}}", "'", '"', "`", "$", ";", "&", "|", "<", ">", "(", ")", "\\")


class InvalidParameterError(ValueError):
    """A parameter breaks a rule; the message names the field and the rule."""

    def __init__(self, field: str, rule: str, value: Any = None):
        self.field = field
        self.rule = rule
        shown = repr(value)
        super().__init__(f"{field}: {rule} (got {shown[:80] + '...' if len(shown) > 80 else shown})")


def check_safe_text(field: str, value: Any) -> str:
    """Return ``value`` as text if it is safe to substitute into a YAML manifest and a shell line."""
    if not isinstance(value, str):
        value = str(value)
    for bad in FORBIDDEN:
        if bad in value:
            raise InvalidParameterError(
                field, f"must not contain {bad!r} (it could escape the manifest or shell)", value
            )
    for ch in value:
        if unicodedata.category(ch)[0] in ("C", "Z") and ch != " ":
            raise InvalidParameterError(
                field, f"must not contain control or separator character U+{ord(ch):04X}", value
            )
    return value


def check_dns_label(field: str, value: Any, limit: int = MAX_NAME) -> str:
    if not isinstance(value, str) or not _DNS_LABEL.fullmatch(value):
        raise InvalidParameterError(field, "must be a DNS-1123 label (lowercase letters, digits, '-')", value)
    if len(value) > limit:
        raise InvalidParameterError(field, f"must be at most {limit} characters", value)
    return value


def check_positive_int(field: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        word = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise InvalidParameterError(field, f"must be {word}", value)
    return value


def check_quantity(field: str, value: Any) -> str:
    text = str(value)
    if isinstance(value, bool) or not _QUANTITY.fullmatch(text):
        raise InvalidParameterError(field, "must be a Kubernetes quantity such as 500m, 2, 4Gi", value)
    return text


def check_image(field: str, value: Any) -> str:
    if not isinstance(value, str) or len(value) > 255 or not _IMAGE.fullmatch(value):
        raise InvalidParameterError(field, "must be an image reference like registry:5000/org/name:tag", value)
    return value


def check_dns_subdomain(field: str, value: Any, limit: int = 253) -> str:
    """Return ``value`` if it is a DNS-1123 subdomain (an object name) of at most ``limit`` characters."""
    if not isinstance(value, str) or not _DNS_SUBDOMAIN.fullmatch(value) or len(value) > limit:
        raise InvalidParameterError(field, f"must be a DNS-1123 subdomain of at most {limit} characters", value)
    return value


def validate_labels(field: str, labels: Any) -> dict[str, str]:
    """Check labels as the API server does: ``[prefix/]name`` keys and values of at most 63 characters."""
    if not isinstance(labels, dict):
        raise InvalidParameterError(field, "must be a mapping of label keys to values", labels)
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/") if isinstance(key, str) else ("", "", key)
        if not isinstance(name, str) or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
            raise InvalidParameterError(
                f"{field}[{key!r}]", "key must be [prefix/]name, name <= 63 of [A-Za-z0-9-_.]", key
            )
        if prefix:
            check_dns_subdomain(f"{field}[{key!r}]", prefix)
        if not isinstance(value, str) or len(value) > 63 or (value and not _LABEL_NAME.fullmatch(value)):
            raise InvalidParameterError(
                f"{field}[{key!r}]", "value must be <= 63 of [A-Za-z0-9-_.], alphanumeric ends", value
            )
    return labels


def validate_submission(namespace: str, workflow_name: str | None, labels: Any) -> None:
    """Check what names the Workflow (namespace, name, labels): it goes into request paths and the object."""
    check_dns_label("namespace", namespace)
    if workflow_name is not None:
        check_dns_subdomain("workflow_name", workflow_name)
    validate_labels("labels", labels)


def validate_workflow_parameters(parameters: dict[str, Any]) -> dict[str, str]:
    """Check free-form Workflow parameters (for any template): Argo names and safe text values."""
    result = {}
    for name, value in (parameters or {}).items():
        if not isinstance(name, str) or not _PARAMETER_NAME.fullmatch(name) or len(name) > 128:
            raise InvalidParameterError(f"parameters[{name!r}]", "name must be letters, digits, '-' and '_'", name)
        if isinstance(value, (dict, list)) or value is None:
            raise InvalidParameterError(f"parameters[{name!r}]", "value must be a string or a number", value)
        result[name] = check_safe_text(f"parameters[{name!r}]", value)
    return result
