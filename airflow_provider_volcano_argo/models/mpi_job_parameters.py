"""The parameters of the shipped ``volcano-mpi`` WorkflowTemplates, typed and checked before anything is created.

Plain values (names, counts, the image) go as text; argv, the pods' settings and the Job's extra fields go as
inert JSON (``models/inert_json.py``), which the template places as data. What each parameter means to a template
of one's own: the custom-template contract in the README.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_volcano_argo.models.inert_json import NotInertError, inert_json
from airflow_provider_volcano_argo.models.names import JOB_NAME_BUDGET
from airflow_provider_volcano_argo.models.params import (
    InvalidParameterError,
    check_dns_label,
    check_dns_subdomain,
    check_image,
    check_positive_int,
    check_quantity,
)
from airflow_provider_volcano_argo.models.pod_settings import ROLES, MPIPodSettings

DEFAULT_IMAGE = "volcanosh/example-mpi:0.0.3"
DEFAULT_INIT_IMAGE = "mcr.microsoft.com/oss/kubernetes/kubectl:v1.26.3"  # the seed's wait-for-workers image


def argv_words(field_name: str, value: Any) -> list[str]:
    """Return a list of argument strings (a string is split as a POSIX shell would, quotes honoured)."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = shlex.split(value)
        except ValueError as error:
            raise InvalidParameterError(field_name, f"cannot be split into words: {error}", value) from None
    if not isinstance(value, (list, tuple)):
        raise InvalidParameterError(field_name, "must be a list of argument strings", value)
    for i, word in enumerate(value):
        if not isinstance(word, str) or "\x00" in word:
            raise InvalidParameterError(f"{field_name}[{i}]", "must be text without NUL (an argv string)", word)
    return list(value)


def _json(field_name: str, value: Any) -> str:
    try:
        return inert_json(value)
    except NotInertError as error:
        raise InvalidParameterError(field_name, str(error)) from None


@dataclass
class VolcanoMPIJobParameters:
    """The Volcano Job parameters of the shipped ``volcano-mpi`` WorkflowTemplates."""

    job_name: str
    workers: int = 2
    slots_per_worker: int = 1
    image: str = DEFAULT_IMAGE
    mpi_command: str | list[str] = "mpi_hello_world"
    mpi_args: list[str] | None = None
    mpi_launcher_flags: list[str] | None = None
    queue: str = "default"
    min_available: int | None = None
    max_retry: int = 3
    gpus_per_worker: int = 0
    rdma_per_worker: int = 0
    cpu_per_worker: str = "100m"
    memory_per_worker: str = "128Mi"
    priority_class: str | None = None
    master_after_workers: bool = False
    init_image: str = DEFAULT_INIT_IMAGE
    ttl_seconds_after_finished: int | None = None
    pods: MPIPodSettings = field(default_factory=MPIPodSettings)

    def argv(self) -> list[str]:
        """Return what follows ``mpiexec --host ... -np N``: launcher flags, the program, its arguments."""
        program = argv_words("mpi_command", self.mpi_command)
        if not program:
            raise InvalidParameterError("mpi_command", "must name the program to run", self.mpi_command)
        return [
            *argv_words("mpi_launcher_flags", self.mpi_launcher_flags),
            *program,
            *argv_words("mpi_args", self.mpi_args),
        ]

    def validate(self) -> None:
        """Raise ``InvalidParameterError`` naming the first field that breaks a rule."""
        check_dns_label("job_name", self.job_name, JOB_NAME_BUDGET)
        check_positive_int("workers", self.workers)
        check_positive_int("slots_per_worker", self.slots_per_worker)
        check_image("image", self.image)
        check_image("init_image", self.init_image)
        self.argv()
        check_dns_label("volcano_queue", self.queue)  # the operator's name for it
        check_positive_int("max_retry", self.max_retry)
        check_positive_int("gpus_per_worker", self.gpus_per_worker, minimum=0)
        check_positive_int("rdma_per_worker", self.rdma_per_worker, minimum=0)
        check_quantity("cpu_per_worker", self.cpu_per_worker)
        check_quantity("memory_per_worker", self.memory_per_worker)
        if self.min_available is not None:
            check_positive_int("min_available", self.min_available)
            if self.min_available > self.total_pods:
                raise InvalidParameterError(
                    "min_available", f"must be at most workers + 1 = {self.total_pods}", self.min_available
                )
        if self.priority_class is not None:
            check_dns_subdomain("priority_class", self.priority_class)
        if self.ttl_seconds_after_finished is not None:
            check_positive_int("ttl_seconds_after_finished", self.ttl_seconds_after_finished, minimum=0)
        if not isinstance(self.master_after_workers, bool):
            raise InvalidParameterError("master_after_workers", "must be True or False", self.master_after_workers)

    @property
    def total_pods(self) -> int:
        return self.workers + 1

    def worker_resources(self) -> dict:
        """Return the workers' requests and limits from the per-worker settings (GPUs and RDMA are limits too)."""
        devices = {"nvidia.com/gpu": str(self.gpus_per_worker), "rdma/ib": str(self.rdma_per_worker)}
        return {
            "requests": {"cpu": self.cpu_per_worker, "memory": self.memory_per_worker, **devices},
            "limits": devices,
        }

    def job_spec(self) -> dict:
        """Return the Job spec fields that are left out unless set (Volcano's CRD refuses them empty)."""
        spec: dict[str, Any] = {}
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        if self.ttl_seconds_after_finished is not None:
            spec["ttlSecondsAfterFinished"] = self.ttl_seconds_after_finished
        return spec

    def to_workflow_parameters(self) -> dict[str, str]:
        """Return the template's parameters (validated first)."""
        self.validate()
        default_min = self.workers if self.master_after_workers else self.total_pods
        parameters = {
            "job-name": self.job_name,
            "workers": str(self.workers),
            "slots-per-worker": str(self.slots_per_worker),
            "np": str(self.workers * self.slots_per_worker),
            "image": self.image,
            "init-image": self.init_image,
            "queue": self.queue,
            "min-available": str(self.min_available or default_min),
            "max-retry": str(self.max_retry),
            "mpi-argv": _json("mpi_args", self.argv()),
            "volcano-job-spec": _json("ttl_seconds_after_finished", self.job_spec()),
        }
        roles = self.pods.role_parameters(self.worker_resources())
        for role in ROLES:
            for part, value in roles[role].items():
                parameters[f"{role}-{part}"] = _json(f"pod_overrides[{role!r}]", value)
        return parameters


#: the parameters the operator always sends (the custom-template contract); a user's ``parameters`` come beside them
SENT_PARAMETERS = frozenset(VolcanoMPIJobParameters(job_name="any").to_workflow_parameters())
