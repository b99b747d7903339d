"""A container's environment, resolved as the kubelet resolves it before the container is created.

Follows Kubernetes v1.31 ``pkg/kubelet/kubelet_pods.go: makeEnvironmentVariables`` (``envFrom`` first, then ``env``
in order, each ``value`` expanded against what came before), ``podFieldSelectorRuntimeValue`` and
``pkg/fieldpath/fieldpath.go: ExtractFieldPathAsString`` for ``fieldRef``, and
``third_party/forked/golang/expansion/expand.go: Expand`` for ``$(VAR)``. A failure is the container's
``CreateContainerConfigError`` (``kuberuntime_container.go: startContainer``): the message is the error's text.

Pure: objects come from a ``get(kind, name)`` callable (``kind`` is ``"configmaps"`` or ``"secrets"``) that returns
the object's data (Secret values already decoded) or None when the object does not exist.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Getter = Callable[[str, str], "dict[str, str] | None"]

_SINGULAR = {"configmaps": "configmap", "secrets": "secret"}
_KIND = {"configmaps": "ConfigMap", "secrets": "Secret"}


class CreateContainerConfigError(Exception):
    """The kubelet could not build the container's config: its text is the waiting state's message."""


def not_found(kind: str, name: str) -> str:
    """Return the API server's NotFound text as the kubelet's managers pass it on: ``secret "x" not found``."""
    return f'{_SINGULAR.get(kind, kind)} "{name}" not found'


def expand(text: str, *contexts: dict[str, str]) -> str:
    """``expansion.Expand(text, MappingFuncFor(contexts...))``.

    ``$(NAME)`` becomes NAME's value from the first context holding it, and stays ``$(NAME)`` verbatim when none
    does; ``$$`` is one literal ``$``; any other ``$x`` and an unclosed ``$(`` are copied as they are.
    """

    def mapping(name: str) -> str:
        for context in contexts:
            if name in context:
                return context[name]
        return f"$({name})"

    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1 :]
            # tryReadVariableName
            if rest[0] == "$":
                read, advance = "$", 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close >= 0:
                    read, advance = mapping(rest[1:close]), close + 1
                else:
                    read, advance = "$(", 1
            else:
                read, advance = "$" + rest[0], 1
            out.append(read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.*)'\]$")


def format_map(values: dict[str, str]) -> str:
    """``fieldpath.FormatMap``: ``key="value"`` lines, sorted, as a downward-API file shows a whole map."""
    return "\n".join(f"{k}={_go_quote(v)}" for k, v in sorted(values.items()))


def _go_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def field_value(pod: dict, path: str, pod_ip: str | None = None, host_ip: str | None = None) -> str:
    """``podFieldSelectorRuntimeValue`` over ``ExtractFieldPathAsString``.

    metadata.name/namespace/uid, spec.nodeName, spec.serviceAccountName, status.podIP(s), status.hostIP(s),
    metadata.labels / metadata.annotations (whole, as ``FormatMap``) and ``metadata.labels['k']`` (empty when
    absent). Anything else: ``unsupported fieldPath: P``.
    """
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    pod_ip = pod_ip if pod_ip is not None else status.get("podIP", "")
    host_ip = host_ip if host_ip is not None else status.get("hostIP", "")
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": pod_ip or "",
        "status.podIPs": pod_ip or "",
        "status.hostIP": host_ip or "",
        "status.hostIPs": host_ip or "",
    }
    if path in simple:
        return simple[path]
    if path in ("metadata.labels", "metadata.annotations"):
        return format_map(meta.get(path.split(".")[1]) or {})
    match = _SUBSCRIPT.match(path)
    if match:
        return (meta.get(match.group(1)) or {}).get(match.group(2), "")
    raise CreateContainerConfigError(f"unsupported fieldPath: {path}")


def resolve_env(pod: dict, container: dict, get: Getter, pod_ip: str | None = None) -> dict[str, str]:
    """Return the container's environment, or raise ``CreateContainerConfigError`` with the kubelet's text.

    ``envFrom`` sources first, in order: every key of the ConfigMap/Secret, ``prefix`` prepended, copied verbatim
    (since v1.30 keys that are not C identifiers are no longer dropped); a missing object fails unless
    ``optional``. Then ``env`` in order, a later name overriding an earlier one: ``value`` is expanded against the
    variables so far (``$(NAME)``), ``valueFrom`` reads a key (``couldn't find key K in Secret NS/X`` when the
    object lacks it, skipped if ``optional``) or a ``fieldRef``. Values from references are not expanded.
    Service links (``enableServiceLinks``) add nothing here: the emulated cluster has no service environment.
    """
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    cache: dict[tuple[str, str], dict[str, str] | None] = {}

    def data_of(kind: str, name: str) -> dict[str, str] | None:
        if (kind, name) not in cache:
            cache[kind, name] = get(kind, name)
        return cache[kind, name]

    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        for field, kind in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
            ref = source.get(field)
            if ref is None:
                continue
            data = data_of(kind, ref.get("name", ""))
            if data is None:
                if ref.get("optional"):
                    continue
                raise CreateContainerConfigError(not_found(kind, ref.get("name", "")))
            prefix = source.get("prefix") or ""
            for key, value in data.items():
                env[prefix + key] = value
    for item in container.get("env") or []:
        name = item["name"]
        source = item.get("valueFrom")
        if source is None:
            value = str(item.get("value") or "")
            env[name] = expand(value, env) if value else value
            continue
        if "fieldRef" in source:
            env[name] = field_value(pod, source["fieldRef"].get("fieldPath", ""), pod_ip)
            continue
        if "resourceFieldRef" in source:
            env[name] = _resource_value(container, source["resourceFieldRef"])
            continue
        for field, kind in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
            ref = source.get(field)
            if ref is None:
                continue
            optional, ref_name, key = bool(ref.get("optional")), ref.get("name", ""), ref.get("key", "")
            data = data_of(kind, ref_name)
            if data is None:
                if optional:
                    break
                raise CreateContainerConfigError(not_found(kind, ref_name))
            if key not in data:
                if optional:
                    break
                raise CreateContainerConfigError(f"couldn't find key {key} in {_KIND[kind]} {namespace}/{ref_name}")
            env[name] = data[key]
            break
    return env


def _resource_value(container: dict, ref: dict) -> str:
    """``resource.ExtractContainerResourceValue`` for plain quantities (divisor 1); unset limits stay empty."""
    resource = ref.get("resource", "")
    kind, _, name = resource.partition(".")
    resources = container.get("resources") or {}
    return str((resources.get(kind) or {}).get(name, ""))
