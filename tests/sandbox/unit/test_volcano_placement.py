"""Pure placement rules of the emulated schedulers (node affinity / selector, taints, FitErrors) and the Volcano
garbage collector's TTL arithmetic.
"""

from __future__ import annotations

import datetime

import pytest

from airflow_provider_volcano_argo.sandbox import NodeCapacity
from airflow_provider_volcano_argo.sandbox.kubelet.kubelet import node_object
from airflow_provider_volcano_argo.sandbox.volcano.garbagecollector import needs_cleanup, time_left
from airflow_provider_volcano_argo.sandbox.volcano.placement import (
    AFFINITY_REASON,
    fit_errors_message,
    fits,
    matches_expression,
    matches_node_affinity,
    tolerates,
    untolerated_taint,
)

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def _node(name: str = "n0", labels: dict | None = None, taints: list | None = None) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def _pod(selector=None, terms=None, tolerations=None) -> dict:
    spec: dict = {"containers": [{"name": "c"}]}
    if selector is not None:
        spec["nodeSelector"] = selector
    if terms is not None:
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            True,
        ),
        (
            {"key": "k", "value": "v"},
            {"key": "k", "value": "v", "effect": "NoExecute"},
            True,
        ),  # no operator: Equal; no effect: all
        ({"key": "k", "operator": "Equal", "value": "w"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "anything", "effect": "NoSchedule"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, {"key": "k", "effect": "NoSchedule"}, False),
        ({"operator": "Exists"}, {"key": "any", "value": "x", "effect": "NoExecute"}, True),  # empty key + Exists: all
        ({"key": "other", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Gt", "value": "1"}, {"key": "k", "value": "1", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Equal"}, {"key": "k", "effect": "NoSchedule"}, True),  # empty value == empty value
    ],
)
def test_toleration_semantics_follow_tolerates_taint(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def test_only_no_schedule_and_no_execute_taints_are_filtered_and_the_first_untolerated_is_named():
    prefer = {"key": "soft", "value": "x", "effect": "PreferNoSchedule"}
    execute = {"key": "drain", "value": "now", "effect": "NoExecute"}
    assert untolerated_taint([prefer], []) is None
    assert untolerated_taint([prefer, GPU_TAINT, execute], []) == GPU_TAINT
    assert untolerated_taint([GPU_TAINT, execute], [{"key": "nvidia.com/gpu", "operator": "Exists"}]) == execute
    assert untolerated_taint([GPU_TAINT, execute], [{"operator": "Exists"}]) is None


@pytest.mark.parametrize(
    ("requirement", "labels", "expected"),
    [
        ({"key": "a", "operator": "In", "values": ["x", "y"]}, {"a": "y"}, True),
        ({"key": "a", "operator": "In", "values": ["x"]}, {}, False),
        ({"key": "a", "operator": "In", "values": []}, {"a": "x"}, False),  # invalid: matches nothing
        ({"key": "a", "operator": "NotIn", "values": ["x"]}, {}, True),  # a missing label is not in
        ({"key": "a", "operator": "NotIn", "values": ["x"]}, {"a": "x"}, False),
        ({"key": "a", "operator": "Exists"}, {"a": ""}, True),
        ({"key": "a", "operator": "Exists", "values": ["x"]}, {"a": "x"}, False),  # invalid
        ({"key": "a", "operator": "DoesNotExist"}, {"b": "1"}, True),
        ({"key": "a", "operator": "DoesNotExist"}, {"a": "1"}, False),
        ({"key": "gen", "operator": "Gt", "values": ["3"]}, {"gen": "4"}, True),
        ({"key": "gen", "operator": "Gt", "values": ["3"]}, {"gen": "3"}, False),
        ({"key": "gen", "operator": "Lt", "values": ["3"]}, {"gen": "2"}, True),
        ({"key": "gen", "operator": "Lt", "values": ["3"]}, {"gen": "two"}, False),  # not an integer
        ({"key": "gen", "operator": "Gt", "values": ["1", "2"]}, {"gen": "4"}, False),  # exactly one value
        ({"key": "gen", "operator": "Gt", "values": ["1"]}, {}, False),
        ({"key": "a", "operator": "Near", "values": ["x"]}, {"a": "x"}, False),
    ],
)
def test_match_expression_operators(requirement, labels, expected):
    assert matches_expression(requirement, labels) is expected


def test_node_selector_and_required_affinity_are_anded_terms_ored_expressions_anded():
    gpu = _node("gpu-0", {"accelerator": "nvidia", "zone": "a"})
    cpu = _node("cpu-0", {"zone": "b"})
    assert matches_node_affinity(_pod()["spec"], cpu)
    assert matches_node_affinity(_pod(selector={"accelerator": "nvidia"})["spec"], gpu)
    assert not matches_node_affinity(_pod(selector={"accelerator": "nvidia"})["spec"], cpu)
    in_a = {"key": "zone", "operator": "In", "values": ["a"]}
    in_b = {"key": "zone", "operator": "In", "values": ["b"]}
    no_gpu = {"key": "accelerator", "operator": "DoesNotExist"}
    assert matches_node_affinity(_pod(terms=[{"matchExpressions": [in_a]}, {"matchExpressions": [in_b]}])["spec"], cpu)
    assert not matches_node_affinity(_pod(terms=[{"matchExpressions": [in_a, no_gpu]}])["spec"], gpu)  # ANDed
    # the selector and the affinity must both hold
    assert not matches_node_affinity(
        _pod(selector={"accelerator": "nvidia"}, terms=[{"matchExpressions": [in_b]}])["spec"], gpu
    )
    # an empty term, and a required affinity without terms, match nothing
    assert not matches_node_affinity(_pod(terms=[{}])["spec"], cpu)
    assert not matches_node_affinity(_pod(terms=[])["spec"], cpu)
    # matchFields: metadata.name only, In / NotIn with one value, ANDed with the term's expressions
    by_name = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-0"]}]}
    assert matches_node_affinity(_pod(terms=[by_name])["spec"], gpu)
    assert not matches_node_affinity(_pod(terms=[by_name])["spec"], cpu)
    not_gpu = {
        "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["gpu-0"]}],
        "matchExpressions": [in_b],
    }
    assert matches_node_affinity(_pod(terms=[not_gpu])["spec"], cpu)
    assert not matches_node_affinity(
        _pod(terms=[{"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}])["spec"], cpu
    )


def test_fits_names_affinity_before_taints_and_the_taint_it_did_not_tolerate():
    gpu = _node("gpu-0", {"accelerator": "nvidia"}, [GPU_TAINT])
    assert fits(_pod(selector={"accelerator": "amd"}), gpu) == AFFINITY_REASON  # fails both: affinity is named
    assert (
        fits(_pod(selector={"accelerator": "nvidia"}), gpu) == "node(s) had untolerated taint {nvidia.com/gpu: present}"
    )
    tolerating = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert fits(_pod(selector={"accelerator": "nvidia"}, tolerations=tolerating), gpu) is None
    assert fits(_pod(tolerations=tolerating), _node("cpu-0")) is None  # a toleration does not require the taint


def test_fit_errors_message_counts_each_nodes_reason_sorted_as_strings():
    taint = "node(s) had untolerated taint {nvidia.com/gpu: present}"
    message = fit_errors_message(3, [taint, AFFINITY_REASON, AFFINITY_REASON])
    assert message == (
        "0/3 nodes are unavailable: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
        "2 node(s) didn't match Pod's node affinity/selector."
    )
    assert fit_errors_message(1, ["Insufficient cpu"]) == "0/1 nodes are unavailable: 1 Insufficient cpu."
    assert fit_errors_message(0, []) == "0/0 nodes are unavailable"


def test_a_gpu_node_carries_its_labels_taint_and_the_hostname_label():
    spec = NodeCapacity.gpu_node("gpu-0", gpus=2)
    assert (spec.gpus, spec.labels, spec.taints) == (2, {"accelerator": "nvidia"}, [GPU_TAINT])
    node = node_object(spec)
    assert node["metadata"]["labels"] == {"accelerator": "nvidia", "kubernetes.io/hostname": "gpu-0"}
    assert node["spec"]["taints"] == [GPU_TAINT]
    plain = node_object(NodeCapacity("n0", labels={"kubernetes.io/hostname": "spoofed"}))
    assert plain == {"metadata": {"name": "n0", "labels": {"kubernetes.io/hostname": "n0"}}}


def _job(
    phase: str, ttl: int | None = 10, finished: str | None = "2026-01-01T00:00:00Z", deleting: bool = False
) -> dict:
    meta: dict = {"name": "j", "namespace": "ns"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    spec = {} if ttl is None else {"ttlSecondsAfterFinished": ttl}
    state = {"phase": phase, **({"lastTransitionTime": finished} if finished else {})}
    return {"metadata": meta, "spec": spec, "status": {"state": state}}


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("Completed", True),
        ("Failed", True),
        ("Terminated", True),
        ("Aborted", False),
        ("Running", False),
        ("Completing", False),
    ],
)
def test_only_completed_failed_and_terminated_jobs_with_a_ttl_are_collected(phase, expected):
    assert needs_cleanup(_job(phase)) is expected
    assert needs_cleanup(_job(phase, ttl=None)) is False


def test_time_left_counts_from_the_last_transition_times_the_time_scale():
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    assert time_left(_job("Completed"), start + datetime.timedelta(seconds=4)) == 6
    assert time_left(_job("Completed"), start + datetime.timedelta(seconds=12)) == -2
    assert time_left(_job("Completed"), start + datetime.timedelta(seconds=0.5), time_scale=0.1) == 0.5
    assert time_left(_job("Completed", ttl=0), start) == 0  # expired at once
    assert time_left(_job("Aborted"), start) is None
    assert time_left(_job("Completed", deleting=True), start) is None
    assert time_left(_job("Completed", finished=None), start) is None
