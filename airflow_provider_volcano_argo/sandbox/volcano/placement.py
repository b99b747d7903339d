"""Which nodes a pod may be placed on: node selector / required node affinity, and taints.

Pure rules, used by the emulated Volcano scheduler (``volcano/scheduler.py``) and the kubelet's stand-in for
kube-scheduler (both run the same Kubernetes framework plugins). Volcano v1.13.3's
``pkg/scheduler/plugins/predicates/predicates.go`` (``OnSessionOpen``: the predicate function's
``predicateByStablefilter``) runs the Kubernetes v1.33 ``nodeaffinity`` and ``tainttoleration`` Filter plugins in
that order, and each of their failures is ``UnschedulableAndUnresolvable``, so it stops at the first: one reason
per node. ``pkg/scheduler/actions/allocate/allocate.go`` (``Action.predicate``) checks resources before them.
"""

from __future__ import annotations

from typing import Any

#: k8s ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`` ``ErrReasonPod``
AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
#: Volcano ``pkg/scheduler/api/unschedule_info.go`` ``NodePodNumberExceeded``
POD_NUMBER_REASON = "node(s) pod number exceeded"
#: taint effects the filter looks at (``tainttoleration.Filter``'s ``filterPredicate``); PreferNoSchedule only scores
FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(toleration: dict, taint: dict) -> bool:
    """Whether one toleration tolerates one taint.

    k8s.io/api ``core/v1/toleration.go`` ``Toleration.ToleratesTaint``: an empty effect matches every effect, an
    empty key (only valid with ``Exists``) every key; ``Exists`` ignores the value, ``Equal`` (or no operator)
    compares it; any other operator tolerates nothing.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taint(taints: list[dict], tolerations: list[dict]) -> dict | None:
    """Return the first NoSchedule / NoExecute taint no toleration tolerates, or None.

    k8s ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`` ``TaintToleration.Filter`` with
    component-helpers ``scheduling/corev1/helpers.go`` ``FindMatchingUntoleratedTaint`` (taints in the Node's order).
    """
    for taint in taints or []:
        if taint.get("effect") not in FILTERED_EFFECTS:
            continue
        if not any(tolerates(t, taint) for t in tolerations or []):
            return taint
    return None


def _integer(text: Any) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def matches_expression(requirement: dict, labels: dict[str, str]) -> bool:
    """Whether a node's labels satisfy one ``matchExpressions`` requirement.

    component-helpers ``scheduling/corev1/nodeaffinity/nodeaffinity.go`` ``nodeSelectorRequirementsAsSelector``
    (and apimachinery ``labels.Requirement.Matches``): In / NotIn need values (NotIn also matches a missing label),
    Exists / DoesNotExist none, Gt / Lt exactly one integer, compared with the label's value as an integer. An
    invalid requirement makes its term match nothing (the lazy-error selector skips it).
    """
    key, operator = requirement.get("key", ""), requirement.get("operator", "")
    values = [str(v) for v in requirement.get("values") or []]
    present = key in labels
    if operator in ("In", "NotIn"):
        if not values:
            return False
        inside = present and labels[key] in values
        return inside if operator == "In" else not inside
    if operator in ("Exists", "DoesNotExist"):
        if values:
            return False
        return present if operator == "Exists" else not present
    if operator in ("Gt", "Lt"):
        if len(values) != 1 or not present:
            return False
        bound, value = _integer(values[0]), _integer(labels[key])
        if bound is None or value is None:
            return False
        return value > bound if operator == "Gt" else value < bound
    return False


def matches_field(requirement: dict, node_name: str) -> bool:
    """Whether a node satisfies one ``matchFields`` requirement: only ``metadata.name``, In / NotIn, one value.

    component-helpers ``nodeaffinity.go`` ``nodeSelectorRequirementsAsFieldSelector``.
    """
    values = [str(v) for v in requirement.get("values") or []]
    if requirement.get("key") != "metadata.name" or len(values) != 1:
        return False
    if requirement.get("operator") == "In":
        return node_name == values[0]
    if requirement.get("operator") == "NotIn":
        return node_name != values[0]
    return False


def matches_term(term: dict, node: dict) -> bool:
    """One ``nodeSelectorTerm``: its expressions and fields ANDed; an empty term matches nothing.

    component-helpers ``nodeaffinity.go`` ``newNodeSelectorTerm`` / ``nodeSelectorTerm.match``.
    """
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False
    labels = node["metadata"].get("labels") or {}
    name = node["metadata"]["name"]
    return all(matches_expression(r, labels) for r in expressions) and all(matches_field(r, name) for r in fields)


def matches_node_affinity(pod_spec: dict, node: dict) -> bool:
    """``nodeSelector`` ANDed with the required node affinity, whose terms are ORed.

    component-helpers ``nodeaffinity.go`` ``GetRequiredNodeAffinity`` / ``RequiredNodeAffinity.Match``, as
    k8s ``nodeaffinity/node_affinity.go`` ``NodeAffinity.Filter`` applies it (no ``addedAffinity``: Volcano's
    predicates plugin passes an empty one). A required affinity with no terms matches no node.
    """
    labels = node["metadata"].get("labels") or {}
    selector = pod_spec.get("nodeSelector") or {}
    if any(labels.get(k) != str(v) for k, v in selector.items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return True
    return any(matches_term(term, node) for term in required.get("nodeSelectorTerms") or [])


def fits(pod: dict, node: dict) -> str | None:
    """Why ``pod`` may not go to ``node`` by its placement rules (affinity first, then taints), or None.

    Volcano ``plugins/predicates/predicates.go`` ``OnSessionOpen`` (``predicateByStablefilter``: NodeAffinity, then
    TaintToleration, each stopping the check). The reason is the plugin's, e.g.
    ``node(s) had untolerated taint {nvidia.com/gpu: present}`` (k8s v1.33 ``TaintToleration.Filter``).
    Resources are not judged here.
    """
    spec = pod.get("spec") or {}
    if not matches_node_affinity(spec, node):
        return AFFINITY_REASON
    taint = untolerated_taint((node.get("spec") or {}).get("taints") or [], spec.get("tolerations") or [])
    if taint is not None:
        return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"
    return None


def fit_errors_message(node_count: int, reasons: list[str]) -> str:
    """Return a pod's message when no node passed: each node's reason counted, sorted as strings.

    Volcano ``pkg/scheduler/api/unschedule_info.go`` ``FitErrors.Error``:
    ``0/<n> nodes are unavailable: <count> <reason>, ....`` (``sortReasonsHistogram`` sorts the "count reason"
    strings).
    """
    if not reasons:
        return f"0/{node_count} nodes are unavailable"
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{node_count} nodes are unavailable: {', '.join(histogram)}."
