"""``VolcanoMPIJobOperator``: one MPI run as a Volcano Job (mpimaster + N mpiworker, gang-scheduled).

It is submitted through the shipped ``volcano-mpi`` WorkflowTemplate, with the master's log in the task log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_volcano_argo.exceptions import TemplateOutdatedError
from airflow_provider_volcano_argo.models.mpi_job_parameters import (
    DEFAULT_IMAGE,
    DEFAULT_INIT_IMAGE,
    SENT_PARAMETERS,
    VolcanoMPIJobParameters,
)
from airflow_provider_volcano_argo.models.names import derive_job_name
from airflow_provider_volcano_argo.models.params import InvalidParameterError, validate_workflow_parameters
from airflow_provider_volcano_argo.models.pod_settings import DEFAULT_WORKING_DIR, MPIPodSettings
from airflow_provider_volcano_argo.models.policies import FollowMode
from airflow_provider_volcano_argo.models.submission import undeclared_parameters
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
    :param mpi_command: the program ``mpiexec`` runs, with arguments: a list of argv strings, or a string split
        as a POSIX shell would (``'solver --out="a b"'`` gives ``solver``, ``--out=a b``); nothing is run by a shell.
    :param mpi_args: more arguments of the program (argv strings, passed exactly as given).
    :param mpi_launcher_flags: ``mpiexec`` options before the program, e.g. ``["--bind-to", "core", "-x",
        "OMP_NUM_THREADS"]`` (Open MPI) or ``["-genv", "I_MPI_DEBUG", "5"]`` (MPICH, Intel MPI).
    :param volcano_queue: Volcano queue (``queue`` is taken by BaseOperator: the executor's queue).
    :param min_available: gang size (default ``workers + 1``; ``workers`` with ``master_after_workers``).
    :param max_retry: Volcano ``maxRetry``: runs of the whole gang before the job fails.
    :param gpus_per_worker: ``nvidia.com/gpu`` per worker.
    :param rdma_per_worker: ``rdma/ib`` per worker.
    :param cpu_per_worker: CPU request per worker (quantity).
    :param memory_per_worker: memory request per worker (quantity).
    :param priority_class: priorityClassName of the job.
    :param volumes: pod volumes (``V1Volume`` or dicts in the API's names) of master and workers.
    :param volume_mounts: mounts (``V1VolumeMount``) of the master and worker containers.
    :param env_vars: environment of the master and worker containers: a dict of names to text, or ``V1EnvVar``
        items (``secretKeyRef`` / ``configMapKeyRef`` values are read by the kubelet, never pass through Argo).
    :param env_from: ``V1EnvFromSource`` items (whole ConfigMaps / Secrets) for the master and worker containers.
    :param node_selector: node labels the pods must match.
    :param tolerations: ``V1Toleration`` items of the pods (GPU nodes are usually tainted).
    :param affinity: ``V1Affinity`` of the pods.
    :param image_pull_secrets: ``V1LocalObjectReference`` items, or names separated by commas.
    :param service_account_name: service account of master and workers (default: ``argo`` for the master,
        whose init container lists pods, and the namespace's default for workers).
    :param master_resources: ``V1ResourceRequirements`` of the master container (default: none).
    :param worker_resources: ``V1ResourceRequirements`` of the worker containers; its entries replace those the
        per-worker settings above give, name by name.
    :param pod_overrides: the rest, per role: ``{"mpimaster": {...}, "mpiworker": {...}}``, each a
        ``V1PodTemplateSpec`` (or dict) merged into the role's pod template (labels, annotations, pod spec fields,
        and fields of the role's container given as ``spec.containers[0]``); fields the template sets itself
        (name, image, command, args, ports, probe, init container, restart policy) are refused, naming what sets them.
    :param working_dir: working directory of the master and worker containers.
    :param init_image: image of the master's init container that waits for the workers (``kubectl``); set it
        where images come from a mirror.
    :param ttl_seconds_after_finished: Volcano deletes the Job (and its pods) this long after it ends.
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
        "mpi_args",
        "mpi_launcher_flags",
        "volumes",
        "volume_mounts",
        "env_vars",
        "env_from",
        "node_selector",
        "master_resources",
        "worker_resources",
        "working_dir",
        "init_image",
        "ttl_seconds_after_finished",
    )
    template_fields_renderers = {"env_vars": "py", "volumes": "py", "pod_overrides": "py"}
    follow_mode = FollowMode.JOB

    def __init__(
        self,
        *,
        job_name: str | None = None,
        workers: int = 2,
        slots_per_worker: int = 1,
        image: str = DEFAULT_IMAGE,
        mpi_command: str | list[str] = "mpi_hello_world",
        mpi_args: list[str] | None = None,
        mpi_launcher_flags: list[str] | None = None,
        volcano_queue: str = "default",
        min_available: int | None = None,
        max_retry: int = 3,
        gpus_per_worker: int = 0,
        rdma_per_worker: int = 0,
        cpu_per_worker: str = "100m",
        memory_per_worker: str = "128Mi",
        priority_class: str | None = None,
        volumes: list[Any] | None = None,
        volume_mounts: list[Any] | None = None,
        env_vars: list[Any] | dict[str, str] | None = None,
        env_from: list[Any] | None = None,
        node_selector: dict[str, str] | None = None,
        tolerations: list[Any] | None = None,
        affinity: Any = None,
        image_pull_secrets: list[Any] | str | None = None,
        service_account_name: str | None = None,
        master_resources: Any = None,
        worker_resources: Any = None,
        pod_overrides: dict[str, Any] | None = None,
        working_dir: str = DEFAULT_WORKING_DIR,
        init_image: str = DEFAULT_INIT_IMAGE,
        ttl_seconds_after_finished: int | None = None,
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
        self.mpi_args = mpi_args
        self.mpi_launcher_flags = mpi_launcher_flags
        self.volumes = volumes
        self.volume_mounts = volume_mounts
        self.env_vars = env_vars
        self.env_from = env_from
        self.node_selector = node_selector
        self.tolerations = tolerations
        self.affinity = affinity
        self.image_pull_secrets = image_pull_secrets
        self.service_account_name = service_account_name
        self.master_resources = master_resources
        self.worker_resources = worker_resources
        self.pod_overrides = pod_overrides
        self.working_dir = working_dir
        self.init_image = init_image
        self.ttl_seconds_after_finished = ttl_seconds_after_finished
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
            min_available=_optional_int(self.min_available),
            max_retry=_int(self.max_retry),
            gpus_per_worker=_int(self.gpus_per_worker),
            rdma_per_worker=_int(self.rdma_per_worker),
            cpu_per_worker=str(self.cpu_per_worker),
            memory_per_worker=str(self.memory_per_worker),
            priority_class=self.priority_class or None,
            master_after_workers=self.master_after_workers,
            mpi_args=self.mpi_args,
            mpi_launcher_flags=self.mpi_launcher_flags,
            init_image=self.init_image,
            ttl_seconds_after_finished=_optional_int(self.ttl_seconds_after_finished),
            pods=MPIPodSettings(
                volumes=self.volumes,
                volume_mounts=self.volume_mounts,
                env_vars=self.env_vars,
                env_from=self.env_from,
                node_selector=self.node_selector,
                tolerations=self.tolerations,
                affinity=self.affinity,
                image_pull_secrets=self.image_pull_secrets,
                service_account_name=self.service_account_name or None,
                master_resources=self.master_resources,
                worker_resources=self.worker_resources,
                pod_overrides=self.pod_overrides,
                working_dir=self.working_dir,
            ),
        )

    def workflow_parameters(self, context: Any) -> dict[str, str]:
        typed = self.job_parameters(context).to_workflow_parameters()
        return {**validate_workflow_parameters(self.parameters), **typed}

    def check_template(self, template: dict, parameters: dict[str, str]) -> None:
        """Refuse a shipped template installed by an older provider: it would ignore the parameters it lacks."""
        if self.workflow_template not in TEMPLATE_FILES:
            return  # a template of one's own uses the parameters it wants (the README's custom-template contract)
        missing = undeclared_parameters(template, {k: v for k, v in parameters.items() if k in SENT_PARAMETERS})
        if missing:
            namespace = template["metadata"].get("namespace", self.namespace)
            raise TemplateOutdatedError(
                f"WorkflowTemplate {namespace}/{self.workflow_template} lacks the parameters {', '.join(missing)} "
                "that this provider sends: it was installed by an older version and would ignore them. Update it "
                f"with `volcano-argo install-templates --namespace {namespace}` (or pass ensure_template=True); "
                "nothing was created."
            )

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


def _optional_int(value: Any) -> Any:
    """As ``_int``, with None for an unset value (Jinja renders None as "None")."""
    return None if value in (None, "", "None") else _int(value)
