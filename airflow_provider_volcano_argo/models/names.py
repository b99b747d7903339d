"""Names of Workflows and Volcano Jobs, the labels that tie a Workflow to its task instance, and the keys read.

The label and annotation keys the provider reads (Volcano's and its own) are here too.

Names are derived from dag_id, task_id, run_id, map_index and try number: the same for one try (so a re-run
of ``execute`` in that try meets its own Workflow with a 409 and adopts it), different for every other try,
run or mapped index (parallel runs never collide, and a retry never re-creates a Volcano Job under a name
whose old pods may still be terminating, volcano#3770). A retry finds a live Workflow of an earlier try by
the task-instance labels, which leave out the try number.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 63
#: Volcano's webhook checks pod names ``<job>-<task>-<index>`` against 63 characters; keep room for the
#: longest task name we create (``mpiworker``) and a four-digit index.
JOB_NAME_BUDGET = MAX_NAME - len("-mpiworker-") - 4
LABEL_PREFIX = "airflow.apache.org/"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "airflow-provider-volcano-argo"
#: Where a follower keeps its log cursors, on the Workflow (a restarted triggerer takes them up).
CURSOR_ANNOTATION = "volcano-argo.airflow.apache.org/log-cursors"
#: Where a sensor's trigger keeps them: an XCom of the sensor's task instance (the Job it follows is not ours).
CURSOR_XCOM_KEY = "volcano_argo_log_cursors"
#: Labels and annotations Volcano's job controller puts on a Job's pods (pkg/controllers/job/helpers).
VOLCANO_JOB_NAME_LABEL = "volcano.sh/job-name"
VOLCANO_TASK_SPEC_LABEL = "volcano.sh/task-spec"
VOLCANO_RETRY_COUNT_ANNOTATION = "volcano.sh/job-retry-count"
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _digest(*parts: object, length: int = 10) -> str:
    data = "\x1f".join(str(p) for p in parts).encode()
    return hashlib.sha256(data).hexdigest()[:length]


def _dns_prefix(text: str, limit: int) -> str:
    """Return a lowercase DNS-1123 fragment of ``text`` (letters, digits, '-'), at most ``limit`` characters."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].strip("-")


def derive_name(
    prefix: str, dag_id: str, task_id: str, run_id: str, map_index: int, try_number: int, limit: int = MAX_NAME
) -> str:
    """Return ``<readable prefix>-<hash of the task-instance try>``: a DNS-1123 label of <= ``limit`` characters."""
    digest = _digest(dag_id, task_id, run_id, map_index, try_number)
    readable = _dns_prefix(f"{prefix}-{task_id}", limit - len(digest) - 1)
    return f"{readable}-{digest}" if readable else f"t-{digest}"


def derive_workflow_name(template: str, dag_id: str, task_id: str, run_id: str, map_index: int, try_number: int) -> str:
    """Return the Workflow's name for one try of a task instance."""
    return derive_name(template, dag_id, task_id, run_id, map_index, try_number)


def derive_job_name(dag_id: str, task_id: str, run_id: str, map_index: int, try_number: int) -> str:
    """Return the Volcano Job's name for one try, short enough for Volcano's pod names."""
    return derive_name("mpi", dag_id, task_id, run_id, map_index, try_number, limit=JOB_NAME_BUDGET)


def safe_label_value(value: object) -> str:
    """Return a valid label value (<= 63, ``[A-Za-z0-9._-]``, alphanumeric ends) naming ``value`` unambiguously."""
    text = str(value)
    if len(text) <= MAX_NAME and _LABEL_VALUE.fullmatch(text):
        return text
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")
    digest = _digest(text, length=8)
    head = cleaned[: MAX_NAME - len(digest) - 1].rstrip("-._")
    return f"{head}-{digest}" if head else digest


def task_instance_labels(dag_id: str, task_id: str, run_id: str, map_index: int, try_number: int) -> dict[str, str]:
    """Return the labels on the Workflow that identify the task instance and try."""
    return {
        **_identity(dag_id, task_id, run_id, map_index),
        f"{LABEL_PREFIX}try-number": str(try_number),
        MANAGED_BY_LABEL: MANAGED_BY,
    }


def _identity(dag_id: str, task_id: str, run_id: str, map_index: int) -> dict[str, str]:
    return {
        f"{LABEL_PREFIX}dag-id": safe_label_value(dag_id),
        f"{LABEL_PREFIX}task-id": safe_label_value(task_id),
        f"{LABEL_PREFIX}run-id": safe_label_value(run_id),
        f"{LABEL_PREFIX}map-index": str(map_index) if map_index >= 0 else "none",  # "-1" is no valid label value
    }


def same_task_instance(mine: dict[str, str], theirs: dict[str, str]) -> bool:
    """Tell whether two label sets carry the same task-instance labels (a 409 on create is then our own)."""
    return all(theirs.get(key) == value for key, value in mine.items() if key.startswith(LABEL_PREFIX))


def podgroup_name(job: dict) -> str:
    """Return the name of a Volcano Job's PodGroup (``<job>-<uid>``, ``generateRelatedPodGroupName``)."""
    return f"{job['metadata']['name']}-{job['metadata']['uid']}"


def task_instance_selector(dag_id: str, task_id: str, run_id: str, map_index: int) -> str:
    """Return the label selector of every try of a task instance."""
    return ",".join(f"{k}={v}" for k, v in _identity(dag_id, task_id, run_id, map_index).items())
