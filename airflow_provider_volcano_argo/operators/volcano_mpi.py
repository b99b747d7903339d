"""``VolcanoMPIJobOperator``: one MPI run as a Volcano Job (mpimaster + N mpiworker, gang-scheduled).

It is submitted through the shipped ``volcano-mpi`` WorkflowTemplate, with the master's log in the task log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_volcano_argo.models.names import derive_job_name
from airflow_provider_volcano_argo.models.params import (
    InvalidParameterError,
    VolcanoMPIJobParameters,
    validate_workflow_parameters,
)
from airflow_provider_volcano_argo.models.policies import FollowMode
from airflow_provider_volcano_argo.operators.argo_workflow import ArgoWorkflowTemplateOperator
from airflow_provider_volcano_argo.templates import (
    DEFAULT_TEMPLATE,
    MASTER_AFTER_WORKERS_TEMPLATE,
    TEMPLATE_FILES,
    workflow_templates,
)


class VolcanoMPIJobOperator(ArgoWorkflowTemplateOperator):
    """Run an MPI program on Volcano through Argo and wait (deferred by default) for the job's end.

    Submits a Workflow from ``workflow_template`` (default ``volcano-mpi``, or
    ``volcano-mpi-master-after-workers`` with ``master_after_workers``) with the Volcano Job parameters below,
    follows the Volcano Job's ``status.state.phase`` to ``Completed`` (success) or ``Failed`` / ``Terminated`` /
    ``Aborted`` (failure), and streams the ``mpimaster`` container's log into the task log. Every value is
    validated before anything is created. Returns (XCom) a dict with the Workflow and Job names, uid, namespace,
    final phase, retry count, task status counts, start/end times and duration.

    :param job_name: Volcano Job name (default: derived from dag/task/run/map index/try; DNS-1123, <= 48 chars).
    :param workers: number of ``mpiworker`` pods.
    :param slots_per_worker: MPI slots per worker; ``np = workers * slots_per_worker``.
    :param image: container image of master and workers.
    :param mpi_command: program and arguments run by ``mpiexec`` (plain words only).
    :param volcano_queue: Volcano queue (``queue`` is taken by BaseOperator: the executor's queue).
    :param min_available: gang size (default ``workers + 1``; ``workers`` with ``master_after_workers``).
    :param max_retry: Volcano ``maxRetry``: runs of the whole gang before the job fails.
    :param gpus_per_worker: ``nvidia.com/gpu`` per worker.
    :param rdma_per_worker: ``rdma/ib`` per worker.
    :param cpu_per_worker: CPU request per worker (quantity).
    :param memory_per_worker: memory request per worker (quantity).
    :param priority_class: priorityClassName of the job.
    :param master_after_workers: create the master only once workers run (Volcano ``dependsOn``).
    :param ensure_template: create or update the shipped WorkflowTemplate before submitting (needs the
        ``volcano-argo-airflow-installer`` Role).
    :param parameters: extra parameters, for custom templates with more of them.

    The remaining arguments are those of ``ArgoWorkflowTemplateOperator`` (namespace, connection,
    ``schedule_timeout``, ``on_finish_action``, ``on_kill_action``, ``deferrable``, ``argo_base_url``, ...).
    """

    template_fields: Sequence[str] = (
        *ArgoWorkflowTemplateOperator.template_fields,
        "job_name",
        "workers",
        "slots_per_worker",
        "image",
        "mpi_command",
        "volcano_queue",
        "min_available",
        "max_retry",
        "gpus_per_worker",
        "rdma_per_worker",
        "cpu_per_worker",
        "memory_per_worker",
        "priority_class",
    )
    follow_mode = FollowMode.JOB

    def __init__(
        self,
        *,
        job_name: str | None = None,
        workers: int = 2,
        slots_per_worker: int = 1,
        image: str = "volcanosh/example-mpi:0.0.3",
        mpi_command: str = "mpi_hello_world",
        volcano_queue: str = "default",
        min_available: int | None = None,
        max_retry: int = 3,
        gpus_per_worker: int = 0,
        rdma_per_worker: int = 0,
        cpu_per_worker: str = "100m",
        memory_per_worker: str = "128Mi",
        priority_class: str | None = None,
        master_after_workers: bool = False,
        ensure_template: bool = False,
        workflow_template: str | None = None,
        **kwargs: Any,
    ) -> None:
        template = workflow_template or (MASTER_AFTER_WORKERS_TEMPLATE if master_after_workers else DEFAULT_TEMPLATE)
        super().__init__(workflow_template=template, **kwargs)
        self.job_name = job_name
        self.workers = workers
        self.slots_per_worker = slots_per_worker
        self.image = image
        self.mpi_command = mpi_command
        self.volcano_queue = volcano_queue
        self.min_available = min_available
        self.max_retry = max_retry
        self.gpus_per_worker = gpus_per_worker
        self.rdma_per_worker = rdma_per_worker
        self.cpu_per_worker = cpu_per_worker
        self.memory_per_worker = memory_per_worker
        self.priority_class = priority_class
        self.master_after_workers = master_after_workers
        self.ensure_template = ensure_template

    def job_parameters(self, context: Any) -> VolcanoMPIJobParameters:
        """Return the typed Volcano Job parameters after templating (Jinja renders numbers as strings)."""
        ti = context["ti"]
        name = self.job_name or derive_job_name(ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number)
        return VolcanoMPIJobParameters(
            job_name=name,
            workers=_int(self.workers),
            slots_per_worker=_int(self.slots_per_worker),
            image=self.image,
            mpi_command=self.mpi_command,
            queue=self.volcano_queue,
            min_available=None if self.min_available in (None, "", "None") else _int(self.min_available),
            max_retry=_int(self.max_retry),
            gpus_per_worker=_int(self.gpus_per_worker),
            rdma_per_worker=_int(self.rdma_per_worker),
            cpu_per_worker=str(self.cpu_per_worker),
            memory_per_worker=str(self.memory_per_worker),
            priority_class=self.priority_class or None,
            master_after_workers=self.master_after_workers,
        )

    def workflow_parameters(self, context: Any) -> dict[str, str]:
        typed = self.job_parameters(context).to_workflow_parameters()
        return {**validate_workflow_parameters(self.parameters), **typed}

    def followed_job_name(self, parameters: dict[str, str]) -> str | None:
        return parameters.get("job-name")

    def execute(self, context: Any) -> Any:
        if self.ensure_template:
            self.workflow_parameters(context)  # refuse bad input before touching the cluster
            if self.workflow_template not in TEMPLATE_FILES:
                raise InvalidParameterError(
                    "ensure_template",
                    f"installs only the shipped templates ({', '.join(TEMPLATE_FILES)}); install "
                    f"{self.workflow_template!r} yourself and leave ensure_template off",
                    True,
                )
            hook = self.hook
            for body in workflow_templates((self.workflow_template,), hook.resolve_namespace(self.namespace)):
                self.log.info("%s", hook.apply_workflow_template(body))
        return super().execute(context)


def _int(value: Any) -> Any:
    """Turn a Jinja-rendered number back into an int; leave anything else for validation to refuse."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value
