"""Label and field selectors: the ones the provider builds, and how a shared watch splits them.

The API server filters one part for the shared watch, each subscriber the other part locally.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_volcano_argo.models.names import VOLCANO_JOB_NAME_LABEL, VOLCANO_TASK_SPEC_LABEL

#: Labels that pick out one object's pods: left to the local filter, so the watch is shared across jobs.
PER_OBJECT_LABELS = frozenset({VOLCANO_JOB_NAME_LABEL})


def name_selector(name: str) -> str:
    """Return the field selector of the object named ``name``."""
    return f"metadata.name={name}"


def task_pods_selector(task: str, job: str | None = None) -> str:
    """Return the label selector of the pods of Volcano task ``task`` (of every Job, or of ``job`` only)."""
    selector = f"{VOLCANO_TASK_SPEC_LABEL}={task}"
    return f"{selector},{VOLCANO_JOB_NAME_LABEL}={job}" if job else selector


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


def split_selectors(field_selector: str | None, label_selector: str | None) -> tuple[str, WatchFilter] | None:
    """Return (the label selector the shared watch uses, the local filter); None when they cannot be split."""
    name = object_name_filter(field_selector)
    labels = parse_equality_selector(label_selector)
    if name is None or labels is None:
        return None
    shared = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in PER_OBJECT_LABELS)
    local = tuple(sorted((k, v) for k, v in labels.items() if k in PER_OBJECT_LABELS))
    return shared, WatchFilter(name, local)
