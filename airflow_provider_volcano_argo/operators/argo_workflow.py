"""``ArgoWorkflowTemplateOperator``: submit a WorkflowTemplate (or an inline Workflow) and follow it.

It follows every Volcano Job the Workflow creates, streams the chosen task's log, and cleans up;
``VolcanoMPIJobOperator`` is its single-job case. It defers to ``triggers/argo_workflow.py``.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from airflow.providers.common.compat.sdk import AirflowException
from airflow.sdk import BaseOperator

from airflow_provider_volcano_argo.engine.workflow_follower import WorkflowFollower
from airflow_provider_volcano_argo.exceptions import ApiConflictError, TemplateNotFoundError
from airflow_provider_volcano_argo.hooks.connection import DEFAULT_CONN_ID, KubernetesConnectionFields
from airflow_provider_volcano_argo.links.argo import ArgoWorkflowLink
from airflow_provider_volcano_argo.models import owned_labels
from airflow_provider_volcano_argo.models.follow import FollowSpec, run_ended
from airflow_provider_volcano_argo.models.names import (
    derive_workflow_name,
    same_task_instance,
    task_instance_labels,
    task_instance_selector,
)
from airflow_provider_volcano_argo.models.params import validate_submission, validate_workflow_parameters
from airflow_provider_volcano_argo.models.phases import workflow_done
from airflow_provider_volcano_argo.models.policies import (
    CleanupSteps,
    FollowMode,
    OnFinishAction,
    OnKillAction,
    finish_steps,
    kill_steps,
    parse_policy,
)
from airflow_provider_volcano_argo.models.reaping import IDENTITY_XCOM_KEY, TaskTry, reaper_annotations
from airflow_provider_volcano_argo.models.resources import WORKFLOW_TEMPLATES, WORKFLOWS
from airflow_provider_volcano_argo.models.results import FollowEvent, failure_message, summarize
from airflow_provider_volcano_argo.models.submission import (
    submitted_parameters,
    with_submission,
    workflow_from_manifest,
    workflow_from_template,
)
from airflow_provider_volcano_argo.templates import TEMPLATE_FILES, yaml_documents
from airflow_provider_volcano_argo.triggers.argo_workflow import ArgoWorkflowTrigger

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.volcano_argo import VolcanoArgoHook

ON_FINISH_ACTIONS = tuple(action.value for action in OnFinishAction)
ON_KILL_ACTIONS = tuple(action.value for action in OnKillAction)
IDENTITY_KEY = IDENTITY_XCOM_KEY
#: ``task_state_store`` key of a successful result, kept for a try after a success that was not recorded.
OUTCOME_KEY = "argo_workflow_outcome"
#: ``next_method`` of a task Airflow resumes only to fail it (``airflow.sdk.bases.operator.TRIGGER_FAIL_REPR``).
TRIGGER_FAIL_REPR = "__fail__"


class ArgoWorkflowTemplateOperator(KubernetesConnectionFields, BaseOperator):
    """Submit an Argo Workflow and follow it and the Volcano Jobs it creates until it ends.

    The Workflow comes from a WorkflowTemplate (``argo submit --from workflowtemplate/NAME``) or an inline manifest.

    :param workflow_template: name of the WorkflowTemplate to submit from (templated).
    :param workflow: an inline Workflow manifest (dict or YAML string) instead of a template; not templated, so
        Argo's ``{{workflow.name}}``-style expressions pass through to Argo.
    :param workflow_file: path of a YAML file holding a Workflow manifest (templated path, relative to the DAG
        file's folder; the file's content is read at run time and not rendered by Jinja), e.g. upstream's
        ``20-job-DAG.yaml``.
    :param parameters: Workflow parameters, ``{name: value}`` (templated); validated before anything is created.
    :param namespace: namespace of the Workflow (default: the connection's, else ``default``).
    :param workflow_name: override the derived name (default: derived from dag/task/run/map index/try).
    :param log_task: Volcano task whose container log goes into the task log (default ``mpimaster``).
    :param log_container: container of that task (default: the task's name).
    :param stream_logs: stream that log while the job runs.
    :param log_poll_interval: read that log every so many seconds instead of holding a follow stream open (no
        connection held per run, for triggerers with hundreds of deferred runs; lines arrive up to that late).
    :param schedule_timeout: seconds each attempt of a Volcano Job may wait in Pending for gang admission (its
        PodGroup scheduled or its pods bound) before the task fails.
    :param on_finish_action: ``delete_workflow`` (default), ``delete_succeeded_workflow`` or ``keep_workflow``;
        deleting the Workflow cascades to its Volcano Jobs and their pods.
    :param on_kill_action: ``delete_workflow`` (default), ``stop_workflow`` or ``keep_workflow``.
    :param deferrable: wait in the triggerer (default) or block the worker with the same behaviour.
    :param argo_base_url: Argo UI base URL for the extra link (else the connection extra ``argo_base_url``).
    :param kubernetes_conn_id: the cncf-kubernetes connection.
    :param cluster_context: kubeconfig context, overriding the connection's.
    :param config_file: kubeconfig path, overriding the connection's.
    :param in_cluster: use the pod's service account, overriding the connection's.
    :param durable: a later try of the task instance follows the Workflow an earlier try left running instead of
        submitting another, and returns the result an earlier try reached but could not record (kept in
        ``task_state_store``, Airflow >= 3.3, as Airflow's ``ResumableJobMixin`` does); False: every try submits
        anew. Named as KubernetesPodOperator names it.
    """

    # ``workflow`` is not templated: Argo's own ``{{...}}`` expressions in a manifest are not Jinja's
    template_fields: Sequence[str] = (
        "workflow_template",
        "workflow_file",
        "parameters",
        "namespace",
        "workflow_name",
        "labels",
        "kubernetes_conn_id",
        "config_file",
    )
    template_fields_renderers = {"parameters": "json"}
    operator_extra_links = (ArgoWorkflowLink(),)
    ui_color = "#f8cfb1"

    #: ``job`` ends on the named Volcano Job's terminal phase; ``workflow`` on the Workflow's.
    follow_mode = FollowMode.WORKFLOW

    def __init__(
        self,
        *,
        workflow_template: str | None = None,
        workflow: dict | str | None = None,
        workflow_file: str | None = None,
        parameters: dict[str, Any] | None = None,
        namespace: str | None = None,
        workflow_name: str | None = None,
        labels: dict[str, str] | None = None,
        log_task: str = "mpimaster",
        log_container: str | None = None,
        stream_logs: bool = True,
        log_poll_interval: float | None = None,
        schedule_timeout: float | None = None,
        on_finish_action: str = OnFinishAction.DELETE_WORKFLOW.value,
        on_kill_action: str = OnKillAction.DELETE_WORKFLOW.value,
        deferrable: bool = True,
        argo_base_url: str | None = None,
        kubernetes_conn_id: str = DEFAULT_CONN_ID,
        cluster_context: str | None = None,
        config_file: str | None = None,
        in_cluster: bool | None = None,
        durable: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if sum(x is not None for x in (workflow_template, workflow, workflow_file)) != 1:
            raise ValueError("give exactly one of workflow_template, workflow or workflow_file")
        parse_policy(OnFinishAction, "on_finish_action", on_finish_action)
        parse_policy(OnKillAction, "on_kill_action", on_kill_action)
        if log_poll_interval is not None and not log_poll_interval > 0:
            raise ValueError(f"log_poll_interval must be a number of seconds > 0 or None, got {log_poll_interval!r}")
        self.workflow_template = workflow_template
        self.workflow = workflow
        self.workflow_file = workflow_file
        self.parameters = parameters or {}
        self.namespace = namespace
        self.workflow_name = workflow_name
        self.labels = labels or {}
        self.log_task = log_task
        self.log_container = log_container
        self.stream_logs = stream_logs
        self.log_poll_interval = log_poll_interval
        self.schedule_timeout = schedule_timeout
        self.on_finish_action = on_finish_action
        self.on_kill_action = on_kill_action
        self.deferrable = deferrable
        self.argo_base_url = argo_base_url
        self.kubernetes_conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context
        self.config_file = config_file
        self.in_cluster = in_cluster
        self.durable = durable
        self._followed: tuple[str, str] | None = None
        self._killed = False
        self._template: dict | None = None  # the WorkflowTemplate read before submitting

    # -- pieces subclasses refine --------------------------------------------------------------------------
    def workflow_parameters(self, context: Any) -> dict[str, str]:
        """Return the parameters to submit, validated (subclasses add their typed ones)."""
        return validate_workflow_parameters(self.parameters)

    def followed_job_name(self, parameters: dict[str, str]) -> str | None:
        """Return the Volcano Job whose phase decides the outcome (``job`` mode)."""
        return None

    # -- submission -------------------------------------------------------------------------------------
    def build_workflow(self, context: Any, name: str, parameters: dict[str, str]) -> dict:
        """Return the Workflow object to create (``common.NewWorkflowFromWorkflowTemplate`` + submit options)."""
        ti = context["ti"]
        labels = {**self.labels, **task_instance_labels(ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number)}
        # the labels may hold hashes of long values: `volcano-argo gc` reads the full identity and the kill policy
        task = TaskTry(ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number)
        annotations = reaper_annotations(task, self.on_kill_action, self.durable)
        if self.workflow is not None or self.workflow_file is not None:
            body = self._inline_workflow()
        else:
            body = workflow_from_template(self.workflow_template)
        return with_submission(body, name, labels, parameters, annotations)

    def _inline_workflow(self) -> dict:
        if self.workflow_file is not None:
            path = Path(self.workflow_file)
            if not path.is_absolute() and self.has_dag():  # as DAG files name their own files, not the worker's cwd
                path = Path(self.dag.folder) / path
            try:
                text = path.read_text()
            except OSError as exc:
                raise AirflowException(f"workflow_file: cannot read {self.workflow_file!r}: {exc}") from exc
            source, manifest = f"workflow_file {self.workflow_file!r}", yaml.safe_load(text)
        else:
            source = "workflow"
            manifest = yaml.safe_load(self.workflow) if isinstance(self.workflow, str) else self.workflow
        try:
            return workflow_from_manifest(manifest, source)
        except ValueError as exc:
            raise AirflowException(str(exc)) from None

    def _find_live_workflow(self, hook: VolcanoArgoHook, namespace: str, context: Any) -> dict | None:
        """Return the Workflow an earlier try of this task instance left running, if any (reattach)."""
        store = context.get("task_state_store")
        stored = store.get(IDENTITY_KEY) if store is not None else None
        if isinstance(stored, dict) and stored.get("name"):
            found = hook.get_object(WORKFLOWS, stored["name"], stored.get("namespace", namespace))
            if found and found["metadata"].get("uid") == stored.get("uid") and not workflow_done(found):
                return found
        ti = context["ti"]
        selector = task_instance_selector(ti.dag_id, ti.task_id, ti.run_id, ti.map_index)
        live = [w for w in hook.list_objects(WORKFLOWS, namespace, selector) if not workflow_done(w)]
        return max(live, key=lambda w: w["metadata"].get("creationTimestamp", ""), default=None)

    def _create(self, hook: VolcanoArgoHook, namespace: str, body: dict) -> dict:
        try:
            return hook.create_object(WORKFLOWS, body, namespace)
        except ApiConflictError as exc:
            existing = hook.get_object(WORKFLOWS, body["metadata"]["name"], namespace)
            theirs = (existing or {}).get("metadata", {}).get("labels", {})
            if existing and same_task_instance(body["metadata"]["labels"], theirs):
                self.log.info(
                    "Workflow %s already exists for this task instance: following it.", body["metadata"]["name"]
                )
                return existing
            raise AirflowException(
                f"Argo Workflow {body['metadata']['name']} already exists in {namespace} and belongs to another "
                "task instance; choose another workflow_name."
            ) from exc

    def _check_template(self, hook: VolcanoArgoHook, namespace: str, parameters: dict[str, str]) -> None:
        if not self.workflow_template:
            return
        template = self._template = hook.get_object(WORKFLOW_TEMPLATES, self.workflow_template, namespace)
        if template is None:
            raise TemplateNotFoundError(
                f"WorkflowTemplate {self.workflow_template!r} not found in namespace {namespace!r}. Install it with "
                f"`volcano-argo install-templates --namespace {namespace}` (or pass ensure_template=True with "
                "VolcanoMPIJobOperator); nothing was created."
            )
        self.check_template(template, parameters)

    def check_template(self, template: dict, parameters: dict[str, str]) -> None:
        """Raise if the WorkflowTemplate cannot run with ``parameters`` (a subclass's contract); here: no check."""

    def _labelled(self, hook: VolcanoArgoHook, namespace: str, workflow: dict) -> list[str]:
        """Return which of the run's objects carry the provider's label (``FollowSpec.labelled``); log the rest.

        A template without it is not refused: it costs namespace-wide watches, not a wrong result (README).
        """
        ref = owned_labels.template_ref(workflow)
        template = self._template if ref and ref == (self._template or {}).get("metadata", {}).get("name") else None
        if ref and template is None and not (workflow.get("status") or {}).get("storedWorkflowTemplateSpec"):
            template = hook.get_object(WORKFLOW_TEMPLATES, ref, namespace)  # a reattach: not read before
        kinds = set(owned_labels.labelled_kinds(owned_labels.run_spec(workflow, template), yaml_documents))
        kinds |= {owned_labels.LABELLED_WORKFLOW} if owned_labels.carries_owned_label(workflow) else set()
        source = f"WorkflowTemplate {namespace}/{ref}" if ref else f"Argo Workflow {workflow['metadata']['name']}"
        if note := owned_labels.unlabelled_note(source, namespace, frozenset(kinds), shipped=ref in TEMPLATE_FILES):
            self.log.info("%s", note)
        return sorted(kinds)

    def execute(self, context: Any) -> Any:
        hook = self.hook
        namespace = hook.resolve_namespace(self.namespace)
        self.namespace = namespace
        validate_submission(namespace, self.workflow_name, self.labels)  # bad input is refused before any API call
        parameters = self.workflow_parameters(context)
        store = context.get("task_state_store") if self.durable else None
        outcome = store.get(OUTCOME_KEY) if store is not None else None
        if isinstance(outcome, dict) and outcome.get("status") == "success":
            self.log.info(
                "An earlier try of this task instance succeeded (Argo Workflow %s) but could not record it: "
                "returning its result instead of running again (durable=False runs every try anew).",
                outcome.get("workflow_name"),
            )
            return outcome
        workflow = self._find_live_workflow(hook, namespace, context) if self.durable else None
        if workflow is not None:
            self.log.info(
                "Reattaching to Argo Workflow %s left running by an earlier try.", workflow["metadata"]["name"]
            )
        else:
            self._check_template(hook, namespace, parameters)
            ti = context["ti"]
            name = self.workflow_name or derive_workflow_name(
                self.workflow_template or "workflow", ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number
            )
            workflow = self._create(hook, namespace, self.build_workflow(context, name, parameters))
            self.log.info("Submitted Argo Workflow %s in %s.", name, namespace)
        meta = workflow["metadata"]
        self._followed = (meta["name"], namespace)
        identity = {"name": meta["name"], "namespace": namespace, "uid": meta["uid"]}
        store = context.get("task_state_store")
        if store is not None:
            store.set(IDENTITY_KEY, identity)
        context["ti"].xcom_push(key=IDENTITY_KEY, value=identity)
        base_url = self.argo_base_url or (hook.conn_extras or {}).get("argo_base_url")
        ArgoWorkflowLink().persist(context, base_url, namespace, meta["name"])
        job_name = (
            self.followed_job_name(submitted_parameters(workflow)) if self.follow_mode == FollowMode.JOB else None
        )
        spec = FollowSpec(
            namespace=namespace,
            workflow_name=meta["name"],
            workflow_uid=meta["uid"],
            job_name=job_name,
            log_task=self.log_task,
            log_container=self.log_container,
            stream_logs=self.stream_logs,
            log_poll_interval=self.log_poll_interval,
            prefix_job_names=self.follow_mode == FollowMode.WORKFLOW,
            schedule_timeout=self.schedule_timeout,
            deadline=_deadline(context, self.execution_timeout),
            labelled=self._labelled(hook, namespace, workflow),
        )
        if not self.deferrable:
            follower = WorkflowFollower(self.connection.async_hook(), spec, emit=self.log.info)
            return self.execute_complete(context, asyncio.run(follower.run()))
        trigger = ArgoWorkflowTrigger(
            spec=spec.to_dict(),
            on_kill_action=OnKillAction(self.on_kill_action).value,
            connection=self.connection.to_dict(),
        )
        timeout = None
        if spec.deadline is not None:  # a backstop after the trigger's own timeout event
            timeout = datetime.timedelta(seconds=max(spec.deadline - time.time(), 0) + 60)
        self.defer(trigger=trigger, method_name="execute_complete", timeout=timeout)

    # -- completion -------------------------------------------------------------------------------------
    def execute_complete(self, context: Any, event: FollowEvent) -> dict[str, Any]:
        """Build the XCom result, clean up per ``on_finish_action``, raise with diagnostics on failure."""
        self._followed = (event["workflow"]["name"], event["namespace"])
        result = summarize(event)
        succeeded = event["status"] == "success"
        try:
            if not succeeded:
                raise AirflowException(failure_message(event, self.log_task))
            self.log.info("%s", event["message"])
            store = context.get("task_state_store") if self.durable else None
            if store is not None:  # before the Workflow goes: a try after a worker lost here returns it
                store.set(OUTCOME_KEY, result)
            return result
        finally:
            if not self._killed:  # blocking mode goes on after on_kill: the kill's policy stands, not the finish's
                phase, ended = event["workflow"].get("phase", ""), run_ended(event.get("reason", ""))
                self._clean_up(finish_steps(self.on_finish_action, succeeded, ended, workflow_phase=phase))

    def resume_execution(self, next_method: str, next_kwargs: dict[str, Any] | None, context: Any) -> Any:
        """Resume after deferral, or clean up first when Airflow resumes the task only to fail it.

        That is ``__fail__``: Airflow's own deferral timeout, or a trigger that crashed. No event will ever clean
        that run up, so it is stopped (and deleted) per ``on_finish_action`` here.
        """
        if next_method == TRIGGER_FAIL_REPR:
            identity = context["ti"].xcom_pull(task_ids=context["ti"].task_id, key=IDENTITY_KEY)
            if isinstance(identity, dict) and identity.get("name"):
                self._followed = (identity["name"], identity["namespace"])
                try:
                    self._clean_up(finish_steps(self.on_finish_action, succeeded=False, run_ended=False))
                except Exception:
                    self.log.exception("Could not stop Argo Workflow %s", identity["name"])
        return super().resume_execution(next_method, next_kwargs, context)

    def _clean_up(self, steps: CleanupSteps) -> None:
        if self._followed is None or not steps.needed:
            return
        name, namespace = self._followed
        if self.hook.clean_up_workflow(name, namespace, steps):
            self.log.info("Deleted Argo Workflow %s (its Volcano Jobs and pods follow by owner reference).", name)

    def on_kill(self) -> None:
        """Stop the Workflow, then delete it per policy (killed in the worker: blocking mode or before deferral)."""
        self._killed = True
        self._clean_up(kill_steps(self.on_kill_action))


def _deadline(context: Any, execution_timeout: datetime.timedelta | None) -> float | None:
    """Return the absolute end of ``execution_timeout`` (not honoured while deferred: apache/airflow#67227)."""
    if not execution_timeout:
        return None
    start = getattr(context["ti"], "start_date", None) or datetime.datetime.now(datetime.timezone.utc)
    return start.timestamp() + execution_timeout.total_seconds()
