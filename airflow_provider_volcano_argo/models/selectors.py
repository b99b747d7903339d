"""Label and field selectors: the ones the provider builds, and how a shared watch splits them.

The API server filters one part for the shared watch, each subscriber the other part locally. A follower of what the
provider submitted narrows its shared watches by the label the provider puts on its Workflows, Jobs and pods
(``OWNED_SELECTOR``), so that what else a namespace holds never reaches it; a sensor, following an object the
provider did not submit, sends its whole selector (the object's name) to the API server instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_volcano_argo.models.names import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    VOLCANO_JOB_NAME_LABEL,
    VOLCANO_TASK_SPEC_LABEL,
)

#: Labels that pick out one object's pods: left to the local filter, so the watch is shared across jobs.
PER_OBJECT_LABELS = frozenset({VOLCANO_JOB_NAME_LABEL})
#: The label selector of what the provider created: Workflows (``task_instance_labels``), and the Volcano Jobs and
#: pods of the shipped templates (and of templates that follow the custom-template contract).
OWNED_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"


def name_selector(name: str) -> str:
    """Return the field selector of the object named ``name``."""
    return f"metadata.name={name}"


def task_pods_selector(task: str, job: str | None = None, owned: bool = False) -> str:
    """Return the label selector of the pods of Volcano task ``task`` (of every Job, or of ``job`` only).

    ``owned``: only pods that carry the provider's label (``OWNED_SELECTOR``).
    """
    selector = f"{VOLCANO_TASK_SPEC_LABEL}={task}"
    if job:
        selector = f"{selector},{VOLCANO_JOB_NAME_LABEL}={job}"
    return with_owned(selector, owned)


def with_owned(label_selector: str | None, owned: bool) -> str | None:
    """Return ``label_selector`` with ``OWNED_SELECTOR`` added when ``owned`` (else as it is)."""
    if not owned:
        return label_selector
    return f"{label_selector},{OWNED_SELECTOR}" if label_selector else OWNED_SELECTOR


def parse_equality_selector(selector: str | None) -> dict[str, str] | None:
    """Return ``a=b,c=d`` as a dict; None when the selector uses more than equality (it is then not split)."""
    terms: dict[str, str] = {}
    for term in (selector or "").split(","):
        term = term.strip()
        if not term:
            continue
        key, sep, value = term.partition("=")
        if not sep or key.endswith(("!", "=")) or value.startswith("=") or " " in term:
            return None
        terms[key] = value
    return terms


def object_name_filter(field_selector: str | None) -> str | None:
    """Return the name of a ``metadata.name=NAME`` field selector; '' for no selector; None for anything else."""
    if not field_selector:
        return ""
    key, sep, value = field_selector.partition("=")
    if key == "metadata.name" and sep and "," not in value and value and not value.startswith("="):
        return value
    return None


@dataclass(frozen=True)
class WatchFilter:
    """Which objects of a shared watch one subscriber gets: by name and label equality."""

    name: str = ""
    labels: tuple[tuple[str, str], ...] = ()

    def matches(self, obj: dict) -> bool:
        meta = obj.get("metadata") or {}
        if self.name and meta.get("name") != self.name:
            return False
        have = meta.get("labels") or {}
        return all(have.get(key) == value for key, value in self.labels)


@dataclass(frozen=True)
class SharedSelectors:
    """What the API server filters for a shared watch: its label and field selectors ('' for none)."""

    label: str = ""
    field: str = ""


def split_selectors(
    field_selector: str | None, label_selector: str | None, per_object_on_server: bool = False
) -> tuple[SharedSelectors, WatchFilter] | None:
    """Return (what the shared watch asks the server for, the local filter); None when they cannot be split.

    The object's name and the per-object labels are filtered locally, so that one watch serves every follower of
    a namespace; with ``per_object_on_server`` the server filters everything (one watch per object, shared only
    by the followers of that object): for objects that carry no label the provider owns.
    """
    name = object_name_filter(field_selector)
    labels = parse_equality_selector(label_selector)
    if name is None or labels is None:
        return None
    if per_object_on_server:
        label = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        return SharedSelectors(label, name_selector(name) if name else ""), WatchFilter()
    shared = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in PER_OBJECT_LABELS)
    local = tuple(sorted((k, v) for k, v in labels.items() if k in PER_OBJECT_LABELS))
    return SharedSelectors(shared), WatchFilter(name, local)
