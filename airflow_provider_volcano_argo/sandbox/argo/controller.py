"""The emulated Argo workflow-controller.

Runs Workflows (from a WorkflowTemplate or inline) with ``dag``, ``steps``, ``resource`` and ``container``
templates. Follows argoproj/argo-workflows v3.7 ``workflow/controller/operator.go`` (phases, shutdown, deadlines,
status) and ``dag.go`` / ``steps.go`` (ordering). Nodes are kept by ``argo/nodes.py``; the leaves run in
``argo/resource_step.py`` (``workflow/executor/resource.go``) and ``argo/container_step.py`` (``workflowpod.go``).
"""

from __future__ import annotations

import datetime
import logging
import threading
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.sandbox.argo.container_step import ContainerSteps
from airflow_provider_volcano_argo.sandbox.argo.nodes import NODE_DONE, WorkflowRun, end_node, progress
from airflow_provider_volcano_argo.sandbox.argo.resource_step import ResourceSteps
from airflow_provider_volcano_argo.sandbox.argo.rules import TemplateError, join_spec, node_id, pod_name, workflow_scope
from airflow_provider_volcano_argo.sandbox.argo.substitution import SubstitutionError, process_args
from airflow_provider_volcano_argo.sandbox.argo.validate import POD_TYPES, validate_workflow
from airflow_provider_volcano_argo.sandbox.emulation.cluster import now_rfc3339
from airflow_provider_volcano_argo.sandbox.emulation.informer import RESYNC_SECONDS, Controller
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.emulation.cluster import Cluster

log = logging.getLogger(__name__)
DONE = ("Succeeded", "Failed", "Error")


class WorkflowController(Controller):
    """Reconciles ``argoproj.io`` Workflows."""

    name = "argo-workflow-controller"

    def __init__(self, cluster: Cluster, time_scale: float = 1.0):
        super().__init__(cluster.stop, resync_seconds=RESYNC_SECONDS * time_scale)
        self.cluster = cluster
        self.api = cluster.api
        self.poll_seconds = 5.0 * time_scale
        self.finished: set[str] = set()  # uids of Workflows this controller has ended
        self.lock = threading.Lock()

    def start(self) -> None:
        self.workflows = self.cluster.informer("workflows")
        self.pods = self.cluster.informer("pods")
        self.jobs = self.cluster.informer("vcjobs")
        self.containers = ContainerSteps(self.api, self.pods)
        self.resources = ResourceSteps(self.api, self.pods)
        self.workflows.subscribe(lambda k, o, old: self.enqueue((o["metadata"]["namespace"], o["metadata"]["name"])))
        self.pods.subscribe(self._on_owned)
        self.jobs.subscribe(self._on_owned)
        super().start()

    def keys(self) -> list:
        return [
            (w["metadata"]["namespace"], w["metadata"]["name"])
            for w in self.workflows.items()
            if (w.get("status") or {}).get("phase") not in DONE
        ]

    def _on_owned(self, kind: str, obj: dict, old: dict | None) -> None:
        labels = obj["metadata"].get("labels", {})
        name = labels.get("workflows.argoproj.io/workflow")
        if not name:
            for ref in obj["metadata"].get("ownerReferences", []) or []:
                if ref.get("kind") == "Workflow":
                    name = ref["name"]
        if name:
            self.enqueue((obj["metadata"]["namespace"], name))

    # -- reconcile ----------------------------------------------------------------------------------------
    def reconcile(self, key: tuple[str, str]) -> float | None:
        workflow = self.workflows.get(*key)
        if workflow is None or (workflow.get("status") or {}).get("phase") in DONE:
            return None
        with self.lock:
            if workflow["metadata"]["uid"] in self.finished:
                return None  # the cache has not seen our final status yet: running it again would re-create
        if workflow["metadata"].get("deletionTimestamp"):
            return None
        try:
            spec = self._spec(workflow)
            scope = workflow_scope(workflow, spec)
        except TemplateError as exc:
            self._finish(workflow, {}, "Error", str(exc))
            return None
        run = WorkflowRun(workflow, spec)
        if not (workflow.get("status") or {}).get("phase"):  # setExecWorkflow: the one-time validation
            try:
                validate_workflow(run.templates, spec["entrypoint"], spec.get("arguments") or {}, scope)
            except TemplateError as exc:
                self._finish(workflow, {}, "Failed", f"invalid spec: {exc}")
                return None
        status = workflow.get("status") or {}
        started = status.get("startedAt") or now_rfc3339()
        shutdown = spec.get("shutdown")
        deadline = spec.get("activeDeadlineSeconds")
        if shutdown:
            self._stop_nodes(run, f"workflow shutdown with strategy:  {shutdown}")
            self._finish(workflow, run.nodes, "Failed", f"Stopped with strategy '{shutdown}'", started)
            return None
        if deadline is not None and _age(started) > float(deadline):
            self._stop_nodes(run, "Step exceeded its deadline")
            self._finish(workflow, run.nodes, "Failed", "Step exceeded its deadline", started)
            return None
        try:
            phase = self._execute(run, spec["entrypoint"], run.name, None, spec.get("arguments") or {}, scope)
        except TemplateError as exc:
            self._finish(workflow, run.nodes, "Error", str(exc), started)
            return None
        if phase in NODE_DONE:
            root = run.nodes.get(run.name, {})
            message = root.get("message", "") if phase != "Succeeded" else ""
            self._finish(workflow, run.nodes, "Succeeded" if phase == "Succeeded" else "Failed", message, started)
            return None
        # as upstream's status.storedWorkflowTemplateSpec: the template is read once, at the start
        status = {"phase": "Running", "startedAt": started, "nodes": run.nodes, "progress": progress(run.nodes)}
        if (workflow.get("spec") or {}).get("workflowTemplateRef"):
            status["storedWorkflowTemplateSpec"] = {k: v for k, v in spec.items() if k != "shutdown"}
        self._write(workflow, status)
        return self.poll_seconds if run.requeue else max(self.poll_seconds, self.resync_seconds)

    def _spec(self, workflow: dict) -> dict:
        spec = workflow.get("spec") or {}
        ref = spec.get("workflowTemplateRef")
        template_spec = (workflow.get("status") or {}).get("storedWorkflowTemplateSpec")
        if ref and template_spec is None:
            ns = workflow["metadata"]["namespace"]
            kind = "clusterworkflowtemplates" if ref.get("clusterScope") else "workflowtemplates"
            template = self.api.get_or_none(kind, ref["name"], None if ref.get("clusterScope") else ns)
            if template is None:
                raise TemplateError(f'workflowtemplates.argoproj.io "{ref["name"]}" not found')
            template_spec = template.get("spec") or {}
        joined = join_spec(spec, template_spec)
        if not joined.get("entrypoint"):
            raise TemplateError("spec.entrypoint is required")
        return joined

    # -- templates ------------------------------------------------------------------------------------------
    def _execute(
        self,
        run: WorkflowRun,
        template_name: str,
        node_name: str,
        boundary: str | None,
        arguments: dict,
        scope: dict[str, str],
    ) -> str:
        """``executeTemplate``: the template processed (``ProcessArgs``: ``argo/substitution.py``), then run.

        ``scope`` holds the globals only: a template sees its own inputs, never its caller's.
        """
        template = run.templates.get(template_name)
        if template is None:
            raise TemplateError(f"template {template_name} not found")
        local = {"pod.name": pod_name(run.name, template_name, node_name)} if set(POD_TYPES) & set(template) else {}
        try:
            template = process_args(template, arguments, scope, local)
        except SubstitutionError as exc:
            raise TemplateError(str(exc)) from exc
        if "dag" in template:
            return self._dag(run, template, node_name, boundary, scope)
        if "steps" in template:
            return self._steps(run, template, node_name, boundary, scope)
        if "resource" in template:
            return self.resources.run(run, template, node_name, boundary)
        if "container" in template or "script" in template:
            return self.containers.run(run, template, node_name, boundary)
        raise TemplateError(f"template {template_name} has no supported type (dag, steps, resource, container)")

    def _dag(self, run: WorkflowRun, template: dict, node_name: str, boundary: str | None, scope: dict) -> str:
        node = run.node(node_name, template, boundary, "DAG")
        if node["phase"] in NODE_DONE:
            return node["phase"]
        tasks = {t["name"]: t for t in template["dag"]["tasks"]}
        phases: dict[str, str] = {}
        for _ in range(len(tasks) + 1):  # tasks whose dependencies end in this pass start in the same pass
            for name, task in tasks.items():
                if name in phases:
                    continue
                deps = task.get("dependencies") or []
                if any(phases.get(d) in ("Failed", "Error", "Omitted") for d in deps):
                    phases[name] = "Omitted"
                elif all(phases.get(d) == "Succeeded" for d in deps):
                    child = f"{node_name}.{name}"
                    run.link(node, child)
                    phases[name] = self._execute(
                        run, task["template"], child, node["id"], task.get("arguments") or {}, scope
                    )
        if len(phases) == len(tasks) and all(p in NODE_DONE for p in phases.values()):
            failed = [n for n, p in phases.items() if p in ("Failed", "Error")]
            if failed:
                message = run.nodes.get(node_id(run.name, f"{node_name}.{failed[0]}"), {}).get("message", "")
                return end_node(node, "Failed", message)
            return end_node(node, "Succeeded")
        return "Running"

    def _steps(self, run: WorkflowRun, template: dict, node_name: str, boundary: str | None, scope: dict) -> str:
        node = run.node(node_name, template, boundary, "Steps")
        if node["phase"] in NODE_DONE:
            return node["phase"]
        for index, group in enumerate(template["steps"]):
            group_name = f"{node_name}[{index}]"
            run.link(node, group_name)
            group_node = run.node(group_name, {"name": template["name"]}, node["id"], "StepGroup")
            phases = []
            for step in group:
                child = f"{group_name}.{step['name']}"
                run.link(group_node, child)
                phases.append(
                    self._execute(run, step["template"], child, node["id"], step.get("arguments") or {}, scope)
                )
            if not all(p in NODE_DONE for p in phases):
                return "Running"
            failed = [p for p in phases if p in ("Failed", "Error")]
            end_node(group_node, "Failed" if failed else "Succeeded")
            if failed:
                return end_node(node, "Failed", f"child '{group_node['id']}' failed")
        return end_node(node, "Succeeded")

    # -- shutdown, status -----------------------------------------------------------------------------------
    def _stop_nodes(self, run: WorkflowRun, message: str) -> None:
        ns = run.workflow["metadata"]["namespace"]
        for node in run.nodes.values():
            if node["phase"] in NODE_DONE:
                continue
            template = run.templates.get(node["templateName"], {})
            if node["type"] == "Pod" and ({"container", "script", "resource"} & set(template)):
                self.api.delete(
                    "pods", pod_name(run.name, node["templateName"], node["name"]), ns, grace_period_seconds=0
                )
            end_node(node, "Failed", message)

    def _finish(self, workflow: dict, nodes: dict, phase: str, message: str, started: str | None = None) -> None:
        status = {
            "phase": phase,
            "startedAt": started or now_rfc3339(),
            "finishedAt": now_rfc3339(),
            "nodes": nodes,
            "progress": progress(nodes),
            "conditions": [{"type": "Completed", "status": "True"}],
        }
        if message:
            status["message"] = message
        self._write(workflow, status, completed=True)
        with self.lock:
            uid = workflow["metadata"]["uid"]
            self.finished.add(uid)

    def _write(self, workflow: dict, status: dict, completed: bool = False) -> None:
        old = workflow.get("status") or {}
        if all(old.get(k) == v for k, v in status.items()):
            return
        meta = workflow["metadata"]
        patch = {
            "metadata": {
                "labels": {
                    "workflows.argoproj.io/phase": status["phase"],
                    "workflows.argoproj.io/completed": "true" if completed else "false",
                }
            },
            "status": status,
        }
        try:
            self.api.patch("workflows", meta["name"], patch, meta["namespace"])
        except ApiException as exc:
            if exc.status != 404:
                log.debug("workflow %s: %s", meta["name"], exc)


def _age(started: str) -> float:
    begun = datetime.datetime.fromisoformat(started.replace("Z", "+00:00"))
    return (datetime.datetime.now(datetime.timezone.utc) - begun).total_seconds()
