"""The emulated kubelet's env resolution (``kubelet_pods.go: makeEnvironmentVariables``) against a fake API."""

from __future__ import annotations

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet.envvars import (
    CreateContainerConfigError,
    expand,
    field_value,
    resolve_env,
)

POD = {
    "metadata": {
        "name": "p",
        "namespace": "team",
        "uid": "u-1",
        "labels": {"app": "mpi", "tier": "b"},
        "annotations": {"note": 'say "hi"'},
    },
    "spec": {"nodeName": "n0", "serviceAccountName": "runner"},
}


def _api(objects: dict[tuple[str, str], dict[str, str]]):
    return lambda kind, name: objects.get((kind, name))


def _env(container: dict, objects=None) -> dict[str, str]:
    return resolve_env(POD, {"name": "c", **container}, _api(objects or {}), pod_ip="10.0.0.7")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"secretKeyRef": {"name": "creds", "key": "token"}}, 'secret "creds" not found'),
        ({"configMapKeyRef": {"name": "cfg", "key": "mode"}}, 'configmap "cfg" not found'),
        ({"secretKeyRef": {"name": "present", "key": "nope"}}, "couldn't find key nope in Secret team/present"),
        ({"configMapKeyRef": {"name": "present", "key": "nope"}}, "couldn't find key nope in ConfigMap team/present"),
    ],
)
def test_a_missing_object_or_key_is_the_kubelets_error_text(source, message):
    objects = {("secrets", "present"): {"a": "1"}, ("configmaps", "present"): {"a": "1"}}
    with pytest.raises(CreateContainerConfigError) as raised:
        _env({"env": [{"name": "V", "valueFrom": source}]}, objects)
    assert str(raised.value) == message


def test_optional_references_are_skipped_and_present_ones_read():
    env = _env(
        {
            "env": [
                {"name": "A", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k", "optional": True}}},
                {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "nope", "optional": True}}},
                {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
                {"name": "D", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
            ],
            "envFrom": [{"secretRef": {"name": "absent", "optional": True}}],
        },
        {("secrets", "s"): {"pw": "p$(X) w"}, ("configmaps", "cfg"): {"mode": "fast"}},
    )
    assert env == {"C": "p$(X) w", "D": "fast"}  # values from references are never expanded


def test_env_from_copies_every_key_verbatim_with_its_prefix_then_env_overrides():
    objects = {("configmaps", "cfg"): {"1-bad.key": "x", "MODE": "slow"}, ("secrets", "s"): {"pw": "secret"}}
    env = _env(
        {
            "envFrom": [{"configMapRef": {"name": "cfg"}}, {"secretRef": {"name": "s"}, "prefix": "S_"}],
            "env": [{"name": "MODE", "value": "fast"}],
        },
        objects,
    )
    # since v1.30 keys that are no C identifiers are kept (KEP-4369), no longer dropped with an event
    assert env == {"1-bad.key": "x", "MODE": "fast", "S_pw": "secret"}
    with pytest.raises(CreateContainerConfigError, match='^configmap "nope" not found$'):
        _env({"envFrom": [{"configMapRef": {"name": "nope"}}]})


def test_values_expand_earlier_variables_only_and_dollar_dollar_escapes():
    env = _env(
        {
            "env": [
                {"name": "A", "value": "one"},
                {"name": "B", "value": "$(A)-$(C)-$$(A)-$$$(A)-$A-$(A"},
                {"name": "C", "value": "three"},
            ]
        }
    )
    assert env["B"] == "one-$(C)-$(A)-$one-$A-$(A"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(VAR)", "v"),
        ("$$(VAR)", "$(VAR)"),
        ("$$$$", "$$"),
        ("$(UNSET)", "$(UNSET)"),
        ("$(VAR", "$(VAR"),
        ("a$", "a$"),
        ("$(VAR)$(VAR)", "vv"),
        ("$()", "$()"),
    ],
)
def test_expansion_as_expand_go(text, expected):
    assert expand(text, {"VAR": "v"}) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("metadata.name", "p"),
        ("metadata.namespace", "team"),
        ("metadata.uid", "u-1"),
        ("metadata.labels['app']", "mpi"),
        ("metadata.labels['absent']", ""),
        ("metadata.annotations['note']", 'say "hi"'),
        ("metadata.labels", 'app="mpi"\ntier="b"'),
        ("spec.nodeName", "n0"),
        ("spec.serviceAccountName", "runner"),
        ("status.podIP", "10.0.0.7"),
    ],
)
def test_field_refs(path, expected):
    assert field_value(POD, path, pod_ip="10.0.0.7") == expected
    assert _env({"env": [{"name": "F", "valueFrom": {"fieldRef": {"fieldPath": path}}}]})["F"] == expected


def test_an_unsupported_field_path_fails_the_container():
    with pytest.raises(CreateContainerConfigError, match="unsupported fieldPath: spec.hostname"):
        _env({"env": [{"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "spec.hostname"}}}]})
