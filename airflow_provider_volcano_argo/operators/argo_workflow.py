"""``ArgoWorkflowTemplateOperator``: submit a WorkflowTemplate (or an inline Workflow), follow every Volcano Job it
creates, stream the chosen task's log, and clean up. ``VolcanoMPIJobOperator`` is its single-job case.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from airflow.providers.common.compat.sdk import AirflowException
from airflow.sdk import BaseOperator

from airflow_provider_volcano_argo.errors import KubernetesApiError, TemplateNotFoundError
from airflow_provider_volcano_argo.follower import FollowSpec, WorkflowFollower
from airflow_provider_volcano_argo.hooks.volcano_argo import (
    WORKFLOW_TEMPLATES,
    WORKFLOWS,
    AsyncVolcanoArgoHook,
    VolcanoArgoHook,
)
from airflow_provider_volcano_argo.links.argo import ArgoWorkflowLink
from airflow_provider_volcano_argo.names import derive_workflow_name, task_instance_labels, task_instance_selector
from airflow_provider_volcano_argo.params import validate_workflow_parameters
from airflow_provider_volcano_argo.phases import WORKFLOW_DONE_PHASES
from airflow_provider_volcano_argo.triggers.volcano_workflow import ON_KILL_ACTIONS, VolcanoWorkflowTrigger

ON_FINISH_ACTIONS = ("delete_workflow", "delete_succeeded_workflow", "keep_workflow")
IDENTITY_KEY = "argo_workflow"


class ArgoWorkflowTemplateOperator(BaseOperator):
    """Submit an Argo Workflow from a WorkflowTemplate (``argo submit --from workflowtemplate/NAME -p k=v``) or an
    inline Workflow manifest, then follow it and the Volcano Jobs it creates until it ends.

    :param workflow_template: name of the WorkflowTemplate to submit from (templated).
    :param workflow: an inline Workflow manifest (dict or YAML string) instead of a template; not templated, so
        Argo's ``{{workflow.name}}``-style expressions pass through to Argo.
    :param workflow_file: path of a YAML file holding a Workflow manifest (templated path; the file's content is
        read at run time and not rendered by Jinja), e.g. upstream's ``20-job-DAG.yaml``.
    :param parameters: Workflow parameters, ``{name: value}`` (templated); validated before anything is created.
    :param namespace: namespace of the Workflow (default: the connection's, else ``default``).
    :param workflow_name: override the derived name (default: derived from dag/task/run/map index/try).
    :param log_task: Volcano task whose container log goes into the task log (default ``mpimaster``).
    :param log_container: container of that task (default: the task's name).
    :param stream_logs: stream that log while the job runs.
    :param log_poll_interval: read that log every so many seconds instead of holding a follow stream open (no
        connection held per run, for triggerers with hundreds of deferred runs; lines arrive up to that late).
    :param schedule_timeout: seconds a Volcano Job may wait for gang admission before the task fails.
    :param on_finish_action: ``delete_workflow`` (default), ``delete_succeeded_workflow`` or ``keep_workflow``;
        deleting the Workflow cascades to its Volcano Jobs and their pods.
    :param on_kill_action: ``delete_workflow`` (default), ``stop_workflow`` or ``keep_workflow``.
    :param deferrable: wait in the triggerer (default) or block the worker with the same behaviour.
    :param argo_base_url: Argo UI base URL for the extra link (else the connection extra ``argo_base_url``).
    :param kubernetes_conn_id: the cncf-kubernetes connection.
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
    )
    template_fields_renderers = {"parameters": "json"}
    operator_extra_links = (ArgoWorkflowLink(),)
    ui_color = "#f8cfb1"

    #: ``job`` ends on the named Volcano Job's terminal phase; ``workflow`` on the Workflow's.
    follow_mode = "workflow"

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
        on_finish_action: str = "delete_workflow",
        on_kill_action: str = "delete_workflow",
        deferrable: bool = True,
        argo_base_url: str | None = None,
        kubernetes_conn_id: str = "kubernetes_default",
        cluster_context: str | None = None,
        config_file: str | None = None,
        in_cluster: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if sum(x is not None for x in (workflow_template, workflow, workflow_file)) != 1:
            raise ValueError("give exactly one of workflow_template, workflow or workflow_file")
        if on_finish_action not in ON_FINISH_ACTIONS:
            raise ValueError(f"on_finish_action must be one of {ON_FINISH_ACTIONS}, got {on_finish_action!r}")
        if on_kill_action not in ON_KILL_ACTIONS:
            raise ValueError(f"on_kill_action must be one of {ON_KILL_ACTIONS}, got {on_kill_action!r}")
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
        self._followed: tuple[str, str] | None = None

    # -- pieces subclasses refine --------------------------------------------------------------------------
    @property
    def hook(self) -> VolcanoArgoHook:
        return VolcanoArgoHook(
            conn_id=self.kubernetes_conn_id,
            cluster_context=self.cluster_context,
            config_file=self.config_file,
            in_cluster=self.in_cluster,
        )

    def connection_kwargs(self) -> dict[str, Any]:
        return {
            "kubernetes_conn_id": self.kubernetes_conn_id,
            "cluster_context": self.cluster_context,
            "config_file": self.config_file,
            "in_cluster": self.in_cluster,
        }

    def workflow_parameters(self, context: Any) -> dict[str, str]:
        """The parameters to submit, validated (subclasses add their typed ones)."""
        return validate_workflow_parameters(self.parameters)

    def followed_job_name(self, parameters: dict[str, str]) -> str | None:
        """In ``job`` mode, the Volcano Job whose phase decides the outcome."""
        return None

    # -- submission -------------------------------------------------------------------------------------
    def build_workflow(self, context: Any, name: str, parameters: dict[str, str]) -> dict:
        """The Workflow object to create (``common.NewWorkflowFromWorkflowTemplate`` + submit options)."""
        ti = context["ti"]
        labels = {**self.labels, **task_instance_labels(ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number)}
        if self.workflow is not None or self.workflow_file is not None:
            body = self._inline_workflow()
            body.setdefault("apiVersion", "argoproj.io/v1alpha1")
            body.setdefault("kind", "Workflow")
            meta = body.setdefault("metadata", {})
            meta.pop("generateName", None)
        else:
            body = {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Workflow",
                "metadata": {"labels": {"workflows.argoproj.io/workflow-template": self.workflow_template}},
                "spec": {"workflowTemplateRef": {"name": self.workflow_template}},
            }
            meta = body["metadata"]
        meta["name"] = name
        meta.setdefault("labels", {}).update(labels)
        if parameters:
            spec = body.setdefault("spec", {})
            given = {p["name"]: p for p in (spec.get("arguments") or {}).get("parameters", [])}
            given.update({k: {"name": k, "value": v} for k, v in parameters.items()})
            spec.setdefault("arguments", {})["parameters"] = list(given.values())
        return body

    def _inline_workflow(self) -> dict:
        if self.workflow_file is not None:
            try:
                text = Path(self.workflow_file).read_text()
            except OSError as exc:
                raise AirflowException(f"workflow_file: cannot read {self.workflow_file!r}: {exc}") from exc
            source, manifest = f"workflow_file {self.workflow_file!r}", yaml.safe_load(text)
        else:
            source = "workflow"
            manifest = yaml.safe_load(self.workflow) if isinstance(self.workflow, str) else self.workflow
        if not isinstance(manifest, dict) or manifest.get("kind", "Workflow") != "Workflow":
            raise AirflowException(f"{source}: must hold one Argo Workflow manifest (kind: Workflow)")
        return copy.deepcopy(manifest)

    def _find_live_workflow(self, hook: VolcanoArgoHook, namespace: str, context: Any) -> dict | None:
        """Reattach: the Workflow an earlier try of this task instance left running, if any."""
        store = context.get("task_state_store")
        stored = store.get(IDENTITY_KEY) if store is not None else None
        if isinstance(stored, dict) and stored.get("name"):
            found = hook.get_object(WORKFLOWS, stored["name"], stored.get("namespace", namespace))
            if found and found["metadata"].get("uid") == stored.get("uid") and not _workflow_done(found):
                return found
        ti = context["ti"]
        selector = task_instance_selector(ti.dag_id, ti.task_id, ti.run_id, ti.map_index)
        live = [w for w in hook.list_objects(WORKFLOWS, namespace, selector) if not _workflow_done(w)]
        return max(live, key=lambda w: w["metadata"].get("creationTimestamp", ""), default=None)

    def _create(self, hook: VolcanoArgoHook, namespace: str, body: dict) -> dict:
        try:
            return hook.create_object(WORKFLOWS, body, namespace)
        except KubernetesApiError as exc:
            if exc.status != 409:
                raise
            existing = hook.get_object(WORKFLOWS, body["metadata"]["name"], namespace)
            mine = body["metadata"]["labels"]
            theirs = (existing or {}).get("metadata", {}).get("labels", {})
            ours = [k for k in mine if k.startswith("airflow.apache.org/")]
            if existing and all(theirs.get(k) == mine[k] for k in ours):
                self.log.info(
                    "Workflow %s already exists for this task instance: following it.", body["metadata"]["name"]
                )
                return existing
            raise AirflowException(
                f"Argo Workflow {body['metadata']['name']} already exists in {namespace} and belongs to another "
                "task instance; choose another workflow_name."
            ) from exc

    def _check_template(self, hook: VolcanoArgoHook, namespace: str) -> None:
        if self.workflow_template and hook.get_object(WORKFLOW_TEMPLATES, self.workflow_template, namespace) is None:
            raise TemplateNotFoundError(
                f"WorkflowTemplate {self.workflow_template!r} not found in namespace {namespace!r}. Install it with "
                f"`volcano-argo install-templates --namespace {namespace}` (or pass ensure_template=True with "
                "VolcanoMPIJobOperator); nothing was created."
            )

    def execute(self, context: Any) -> Any:
        hook = self.hook
        namespace = hook.resolve_namespace(self.namespace)
        self.namespace = namespace
        parameters = self.workflow_parameters(context)  # refuses bad input before any API call
        workflow = self._find_live_workflow(hook, namespace, context)
        if workflow is not None:
            self.log.info(
                "Reattaching to Argo Workflow %s left running by an earlier try.", workflow["metadata"]["name"]
            )
        else:
            self._check_template(hook, namespace)
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
        context["ti"].xcom_push(key="argo_workflow", value=identity)
        base_url = self.argo_base_url or (hook.conn_extras or {}).get("argo_base_url")
        ArgoWorkflowLink().persist(context, base_url, namespace, meta["name"])
        spec = FollowSpec(
            namespace=namespace,
            workflow_name=meta["name"],
            workflow_uid=meta["uid"],
            job_name=self.followed_job_name(_parameters_of(workflow)) if self.follow_mode == "job" else None,
            log_task=self.log_task,
            log_container=self.log_container,
            stream_logs=self.stream_logs,
            log_poll_interval=self.log_poll_interval,
            prefix_job_names=self.follow_mode == "workflow",
            schedule_timeout=self.schedule_timeout,
            deadline=_deadline(context, self.execution_timeout),
        )
        if not self.deferrable:
            follower = WorkflowFollower(AsyncVolcanoArgoHook(**_async_kwargs(self)), spec, emit=self.log.info)
            return self.execute_complete(context, asyncio.run(follower.run()))
        trigger = VolcanoWorkflowTrigger(
            spec=spec.to_dict(), on_kill_action=self.on_kill_action, connection=self.connection_kwargs()
        )
        timeout = None
        if spec.deadline is not None:  # a backstop after the trigger's own timeout event
            timeout = datetime.timedelta(seconds=max(spec.deadline - time.time(), 0) + 60)
        self.defer(trigger=trigger, method_name="execute_complete", timeout=timeout)

    # -- completion -------------------------------------------------------------------------------------
    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        """Build the XCom result, clean up per ``on_finish_action``, raise with diagnostics on failure."""
        self._followed = (event["workflow"]["name"], event["namespace"])
        result = summarize(event)
        succeeded = event["status"] == "success"
        try:
            if not succeeded:
                raise AirflowException(failure_message(event, self.log_task))
            self.log.info("%s", event["message"])
            return result
        finally:
            self._finish(succeeded)

    def _finish(self, succeeded: bool) -> None:
        if self._followed is None or self.on_finish_action == "keep_workflow":
            return
        if self.on_finish_action == "delete_succeeded_workflow" and not succeeded:
            self._stop()  # keep it for inspection, but stop anything still running
            return
        name, namespace = self._followed
        self._stop()
        if self.hook.delete_object(WORKFLOWS, name, namespace, propagation="Foreground"):
            self.log.info("Deleted Argo Workflow %s (its Volcano Jobs and pods follow by owner reference).", name)

    def _stop(self) -> None:
        if self._followed:
            self.hook.stop_workflow(*self._followed, strategy="Terminate")

    def on_kill(self) -> None:
        """Killed while running in the worker (blocking mode or before deferral): stop, then delete per policy."""
        if self._followed is None or self.on_kill_action == "keep_workflow":
            return
        name, namespace = self._followed
        self._stop()
        if self.on_kill_action == "delete_workflow":
            self.hook.delete_object(WORKFLOWS, name, namespace, propagation="Foreground")


def _workflow_done(workflow: dict) -> bool:
    return ((workflow.get("status") or {}).get("phase") or "") in WORKFLOW_DONE_PHASES


def _parameters_of(workflow: dict) -> dict[str, str]:
    return {
        p["name"]: str(p.get("value", ""))
        for p in ((workflow.get("spec") or {}).get("arguments") or {}).get("parameters", [])
    }


def _deadline(context: Any, execution_timeout: datetime.timedelta | None) -> float | None:
    """Absolute end of ``execution_timeout``, honoured while deferred (the task SDK does not, apache/airflow#67227)."""
    if not execution_timeout:
        return None
    start = getattr(context["ti"], "start_date", None) or datetime.datetime.now(datetime.timezone.utc)
    return start.timestamp() + execution_timeout.total_seconds()


def _async_kwargs(op: ArgoWorkflowTemplateOperator) -> dict[str, Any]:
    kwargs = op.connection_kwargs()
    return {"conn_id": kwargs.pop("kubernetes_conn_id"), **kwargs}


def summarize(event: dict[str, Any]) -> dict[str, Any]:
    """The XCom result: Workflow, Jobs, final phase, retries, task status counts, timings."""
    jobs = event.get("jobs", [])
    wf = event["workflow"]
    started, finished = wf.get("started_at"), wf.get("finished_at")
    first = jobs[0] if len(jobs) == 1 else None
    return {
        "status": event["status"],
        "namespace": event["namespace"],
        "workflow_name": wf["name"],
        "workflow_uid": wf["uid"],
        "workflow_phase": wf["phase"],
        "job_name": first["name"] if first else None,
        "phase": first["phase"] if first else wf["phase"],
        "retry_count": first["retry_count"] if first else None,
        "task_status_count": first["task_status_count"] if first else None,
        "jobs": jobs,
        "started_at": started or (first or {}).get("created_at"),
        "finished_at": finished or (first or {}).get("finished_at"),
        "duration_seconds": _duration(
            started or (first or {}).get("created_at"), finished or (first or {}).get("finished_at")
        ),
        "log_lines": event.get("lines_streamed", 0),
    }


def _duration(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    parse = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def failure_message(event: dict[str, Any], log_task: str) -> str:
    """Phase, the Volcano/Workflow message, scheduler reasons and the last lines of the followed log."""
    lines = [event["message"]]
    wf = event["workflow"]
    if wf.get("message"):
        lines.append(f"Argo Workflow {wf['name']} {wf.get('phase') or ''}: {wf['message']}")
    for job in event.get("jobs", []):
        lines.append(
            f"Volcano Job {job['name']}: phase {job['phase'] or 'unknown'}, retries {job['retry_count']}, "
            f"task status {job['task_status_count']}"
        )
    lines.extend(event.get("details") or [])
    for code in event.get("exit_codes") or []:
        lines.append(
            f"Container {code['container']} of pod {code['pod']} exited with code {code['exit_code']} "
            f"({code['reason'] or 'no reason'}; restarts: {code['restart_count']})"
        )
    for job, tail in (event.get("tails") or {}).items():
        if tail:
            lines.append(f"Last {len(tail)} lines of {log_task} ({job}):")
            lines.extend(f"  {line}" for line in tail)
    return "\n".join(lines)
