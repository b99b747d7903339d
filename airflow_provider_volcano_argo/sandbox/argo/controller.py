"""The emulated Argo workflow-controller: runs Workflows (from a WorkflowTemplate or inline) with ``dag``,
``steps``, ``resource`` and ``container`` templates.

Follows argoproj/argo-workflows v3.7 ``workflow/controller/operator.go`` (phases, nodes, shutdown, deadlines),
``dag.go`` / ``steps.go`` (ordering), ``workflowpod.go`` (pods: name v2, labels, annotations, container ``main``)
and ``workflow/executor/resource.go`` (resource actions and conditions). Resource actions run in the controller,
not in an executor pod, but **as the Workflow's service account** (impersonation), so RBAC decides as on a
cluster; conditions are re-checked whenever the created object changes and every ``5 s * time_scale`` (upstream's
``RESOURCE_STATE_CHECK_INTERVAL``).
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time

import yaml

from airflow_provider_volcano_argo.sandbox.argo.rules import (
    TemplateError,
    evaluate,
    input_scope,
    join_spec,
    node_id,
    pod_name,
    substitute,
    workflow_scope,
)
from airflow_provider_volcano_argo.sandbox.controlplane.manifests import object_path
from airflow_provider_volcano_argo.sandbox.emulation.cluster import Cluster, now_rfc3339, owner_reference
from airflow_provider_volcano_argo.sandbox.emulation.informer import RESYNC_SECONDS, Controller
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException

log = logging.getLogger(__name__)
DONE = ("Succeeded", "Failed", "Error")
NODE_DONE = ("Succeeded", "Failed", "Error", "Skipped", "Omitted")
DENIED_GRACE_SECONDS = 15.0


def _api_message(exc: ApiException) -> str:
    try:
        return json.loads(exc.body)["message"]
    except (ValueError, KeyError, TypeError):
        return str(exc.reason)


class _Run:
    """One reconcile of one Workflow: the nodes as they are, and what changed."""

    def __init__(self, workflow: dict, spec: dict):
        self.workflow = workflow
        self.spec = spec
        self.name = workflow["metadata"]["name"]
        self.nodes: dict = copy.deepcopy((workflow.get("status") or {}).get("nodes") or {})
        self.templates = {t["name"]: t for t in spec.get("templates", [])}
        self.requeue = False


class WorkflowController(Controller):
    """Reconciles ``argoproj.io`` Workflows."""

    name = "argo-workflow-controller"

    def __init__(self, cluster: Cluster, time_scale: float = 1.0):
        super().__init__(cluster.stop, resync_seconds=RESYNC_SECONDS * time_scale)
        self.cluster = cluster
        self.api = cluster.api
        self.poll_seconds = 5.0 * time_scale
        self.created: dict[tuple[str, str], dict] = {}  # (workflow uid, node id) -> the resource step's object
        self.attempted: set[tuple[str, str]] = set()  # nodes whose create was sent (the reply may have been lost)
        self.denied_since: dict[tuple[str, str], float] = {}  # nodes whose status read is being refused
        self.finished: set[str] = set()  # uids of Workflows this controller has ended
        self.lock = threading.Lock()

    def start(self) -> None:
        self.workflows = self.cluster.informer("workflows")
        self.pods = self.cluster.informer("pods")
        self.jobs = self.cluster.informer("vcjobs")
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
        run = _Run(workflow, spec)
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
            phase = self._execute(run, spec["entrypoint"], run.name, None, {}, scope)
        except TemplateError as exc:
            self._finish(workflow, run.nodes, "Error", str(exc), started)
            return None
        if phase in NODE_DONE:
            root = run.nodes.get(run.name, {})
            message = root.get("message", "") if phase != "Succeeded" else ""
            self._finish(workflow, run.nodes, "Succeeded" if phase == "Succeeded" else "Failed", message, started)
            return None
        # as upstream's status.storedWorkflowTemplateSpec: the template is read once, at the start
        status = {"phase": "Running", "startedAt": started, "nodes": run.nodes, "progress": _progress(run.nodes)}
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

    # -- nodes ----------------------------------------------------------------------------------------------
    def _node(self, run: _Run, name: str, template: dict, boundary: str | None, kind: str) -> dict:
        nid = node_id(run.name, name)
        if nid not in run.nodes:
            run.nodes[nid] = {
                "id": nid,
                "name": name,
                "displayName": name.split(".")[-1].split("]")[-1] or name,
                "type": kind,
                "templateName": template["name"],
                "phase": "Running",
                "startedAt": now_rfc3339(),
                "children": [],
            }
            if boundary:
                run.nodes[nid]["boundaryID"] = boundary
        return run.nodes[nid]

    def _link(self, run: _Run, parent: dict, child_name: str) -> None:
        child = node_id(run.name, child_name)
        if child not in parent["children"]:
            parent["children"].append(child)

    @staticmethod
    def _end(node: dict, phase: str, message: str = "") -> str:
        if node["phase"] not in NODE_DONE:
            node["phase"] = phase
            node["finishedAt"] = now_rfc3339()
            if message:
                node["message"] = message
        return node["phase"]

    def _execute(
        self,
        run: _Run,
        template_name: str,
        node_name: str,
        boundary: str | None,
        arguments: dict,
        outer: dict[str, str],
    ) -> str:
        template = run.templates.get(template_name)
        if template is None:
            raise TemplateError(f"template {template_name} not found")
        scope = input_scope(template, arguments, outer)
        if "dag" in template:
            return self._dag(run, template, node_name, boundary, scope)
        if "steps" in template:
            return self._steps(run, template, node_name, boundary, scope)
        if "resource" in template:
            return self._resource(run, template, node_name, boundary, scope)
        if "container" in template or "script" in template:
            return self._container(run, template, node_name, boundary, scope)
        raise TemplateError(f"template {template_name} has no supported type (dag, steps, resource, container)")

    def _dag(self, run: _Run, template: dict, node_name: str, boundary: str | None, scope: dict) -> str:
        node = self._node(run, node_name, template, boundary, "DAG")
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
                    self._link(run, node, child)
                    phases[name] = self._execute(
                        run, task["template"], child, node["id"], task.get("arguments") or {}, scope
                    )
        if len(phases) == len(tasks) and all(p in NODE_DONE for p in phases.values()):
            failed = [n for n, p in phases.items() if p in ("Failed", "Error")]
            if failed:
                message = run.nodes.get(node_id(run.name, f"{node_name}.{failed[0]}"), {}).get("message", "")
                return self._end(node, "Failed", message)
            return self._end(node, "Succeeded")
        return "Running"

    def _steps(self, run: _Run, template: dict, node_name: str, boundary: str | None, scope: dict) -> str:
        node = self._node(run, node_name, template, boundary, "Steps")
        if node["phase"] in NODE_DONE:
            return node["phase"]
        for index, group in enumerate(template["steps"]):
            group_name = f"{node_name}[{index}]"
            self._link(run, node, group_name)
            group_node = self._node(run, group_name, {"name": template["name"]}, node["id"], "StepGroup")
            phases = []
            for step in group:
                child = f"{group_name}.{step['name']}"
                self._link(run, group_node, child)
                phases.append(
                    self._execute(run, step["template"], child, node["id"], step.get("arguments") or {}, scope)
                )
            if not all(p in NODE_DONE for p in phases):
                return "Running"
            failed = [p for p in phases if p in ("Failed", "Error")]
            self._end(group_node, "Failed" if failed else "Succeeded")
            if failed:
                return self._end(node, "Failed", f"child '{group_node['id']}' failed")
        return self._end(node, "Succeeded")

    # -- leaves ---------------------------------------------------------------------------------------------
    def _service_account(self, run: _Run, template: dict) -> str:
        return template.get("serviceAccountName") or run.spec.get("serviceAccountName") or "default"

    def _resource(self, run: _Run, template: dict, node_name: str, boundary: str | None, scope: dict) -> str:
        node = self._node(run, node_name, template, boundary, "Pod")
        if node["phase"] in NODE_DONE:
            return node["phase"]
        resource = template["resource"]
        ns = run.workflow["metadata"]["namespace"]
        sa = self._service_account(run, template)
        as_sa = self.api.impersonating(f"system:serviceaccount:{ns}:{sa}", ["system:serviceaccounts"])
        key = (run.workflow["metadata"]["uid"], node["id"])
        with self.lock:
            created = self.created.get(key)
        if created is None:
            manifest = yaml.safe_load(substitute(resource.get("manifest", ""), scope))
            manifest.setdefault("metadata", {}).setdefault("namespace", ns)
            if resource.get("setOwnerReference"):
                manifest["metadata"].setdefault("ownerReferences", []).append(owner_reference(run.workflow))
            action = resource.get("action", "create")
            created = self._earlier_attempt(run, key, action, manifest)
            try:
                with self.lock:
                    self.attempted.add(key)
                if created is None:
                    created = self._act(as_sa, action, manifest, resource.get("mergeStrategy", "strategic"))
            except ApiException as exc:
                created = self._earlier_attempt(run, key, action, manifest) if exc.status == 409 else None
                if created is None:
                    return self._end(node, "Failed", f"main: Error (exit code 1): {_api_message(exc)}")
            if action == "delete" or created is None:
                return self._end(node, "Succeeded")
            with self.lock:
                self.created[key] = created
            node["outputs"] = {"parameters": self._outputs(template, created)} if template.get("outputs") else {}
        success, failure = resource.get("successCondition"), resource.get("failureCondition")
        if not success and not failure:
            return self._end(node, "Succeeded")
        try:
            current = as_sa.request("GET", object_path(self.api, created))
            with self.lock:
                self.denied_since.pop(key, None)
        except ApiException as exc:
            if exc.status in (401, 403) and self._still_transient(key):
                # Kubernetes 1.20 serves before its RBAC caches have synced after a restart (later versions
                # gate readiness on it): a refusal that clears within the grace is not the step's failure
                run.requeue = True
                return "Running"
            if exc.status == 404:
                return self._end(
                    node,
                    "Failed",
                    "main: Error (exit code 64): The resource has been deleted while "
                    "its status was still being checked. Will not be retried",
                )
            return self._end(node, "Failed", f"main: Error (exit code 64): {_api_message(exc)}")
        outcome, message = evaluate(success, failure, current)
        if outcome == "Failed":
            return self._end(node, "Failed", f"main: Error (exit code 64): {message}")
        if outcome == "Succeeded":
            return self._end(node, "Succeeded")
        run.requeue = True
        return "Running"

    def _still_transient(self, key: tuple[str, str]) -> bool:
        with self.lock:
            first = self.denied_since.setdefault(key, time.monotonic())
        return time.monotonic() - first < DENIED_GRACE_SECONDS

    def _earlier_attempt(self, run: _Run, key: tuple[str, str], action: str, manifest: dict) -> dict | None:
        """The object an earlier create for this node made when its reply was lost (a timeout under load):
        upstream's executor would have recorded it before failing, so the step must not create a second one."""
        with self.lock:
            if action != "create" or key not in self.attempted:
                return None
        meta = manifest["metadata"]
        uid = run.workflow["metadata"]["uid"]
        listing = self.api.request("GET", object_path(self.api, manifest, with_name=False))
        for item in listing.get("items", []):
            name = item["metadata"]["name"]
            owned = any(r.get("uid") == uid for r in item["metadata"].get("ownerReferences") or [])
            if owned and (
                name == meta.get("name") or (meta.get("generateName") and name.startswith(meta["generateName"]))
            ):
                return item
        return None

    def _act(self, api, action: str, manifest: dict, strategy: str) -> dict | None:
        if action == "create":
            return api.request("POST", object_path(self.api, manifest, with_name=False), body=manifest)
        if action == "delete":
            try:
                api.request("DELETE", object_path(self.api, manifest))
            except ApiException as exc:
                if exc.status != 404:
                    raise
            return None
        if action == "get":
            return api.request("GET", object_path(self.api, manifest))
        if action in ("apply", "replace", "patch"):
            content = {"merge": "application/merge-patch+json", "json": "application/json-patch+json"}.get(
                strategy, "application/merge-patch+json"
            )
            try:
                return api.request("PATCH", object_path(self.api, manifest), body=manifest, content_type=content)
            except ApiException as exc:
                if exc.status != 404 or action == "patch":
                    raise
            return api.request("POST", object_path(self.api, manifest, with_name=False), body=manifest)
        raise TemplateError(f"unsupported resource action {action}")

    @staticmethod
    def _outputs(template: dict, obj: dict) -> list[dict]:
        from airflow_provider_volcano_argo.sandbox.argo.rules import json_path

        values = []
        for param in (template.get("outputs") or {}).get("parameters", []):
            path = ((param.get("valueFrom") or {}).get("jsonPath") or "").strip("{}").lstrip(".")
            values.append({"name": param["name"], "value": str(json_path(obj, path) if path else "")})
        return values

    def _container(self, run: _Run, template: dict, node_name: str, boundary: str | None, scope: dict) -> str:
        node = self._node(run, node_name, template, boundary, "Pod")
        if node["phase"] in NODE_DONE:
            return node["phase"]
        ns = run.workflow["metadata"]["namespace"]
        name = pod_name(run.name, template["name"], node_name)
        pod = self.pods.get(ns, name)
        if pod is None:
            container = copy.deepcopy(substitute(template.get("container") or template.get("script"), scope))
            container["name"] = "main"
            if "script" in template:
                container.setdefault("command", ["sh"])
                container["args"] = [*container.get("args", []), "-c", container.pop("source", "")]
            spec = {
                "containers": [container],
                "restartPolicy": "Never",
                "serviceAccountName": self._service_account(run, template),
            }
            if template.get("activeDeadlineSeconds") is not None:
                spec["activeDeadlineSeconds"] = int(template["activeDeadlineSeconds"])
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "labels": {"workflows.argoproj.io/workflow": run.name, "workflows.argoproj.io/completed": "false"},
                    "annotations": {
                        "workflows.argoproj.io/node-name": node_name,
                        "workflows.argoproj.io/node-id": node["id"],
                        "kubectl.kubernetes.io/default-container": "main",
                    },
                    "ownerReferences": [owner_reference(run.workflow)],
                },
                "spec": spec,
            }
            try:
                self.api.create("pods", body, ns)
            except ApiException as exc:
                if exc.status != 409:
                    return self._end(node, "Error", _api_message(exc))
            return "Running"
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if phase in ("Succeeded", "Failed"):
            ended = (
                next(
                    (
                        c.get("state", {}).get("terminated")
                        for c in (pod.get("status") or {}).get("containerStatuses", [])
                        if c.get("name") == "main"
                    ),
                    None,
                )
                or {}
            )
            code = int(ended.get("exitCode", 0 if phase == "Succeeded" else 1))
            node["outputs"] = {"exitCode": str(code)}
            reason = (pod.get("status") or {}).get("reason")
            message = (
                ""
                if phase == "Succeeded"
                else (
                    "Pod was active on the node longer than the specified deadline"
                    if reason == "DeadlineExceeded"
                    else f"Error (exit code {code})"
                )
            )
            self._label_completed(pod)
            return self._end(node, phase, message)
        return "Running"

    def _label_completed(self, pod: dict) -> None:
        meta = pod["metadata"]
        if meta.get("labels", {}).get("workflows.argoproj.io/completed") != "true":
            patch = {"metadata": {"labels": {"workflows.argoproj.io/completed": "true"}}}
            try:
                self.api.patch("pods", meta["name"], patch, meta["namespace"])
            except ApiException:
                pass

    # -- shutdown, status -----------------------------------------------------------------------------------
    def _stop_nodes(self, run: _Run, message: str) -> None:
        ns = run.workflow["metadata"]["namespace"]
        for node in run.nodes.values():
            if node["phase"] in NODE_DONE:
                continue
            template = run.templates.get(node["templateName"], {})
            if node["type"] == "Pod" and ("container" in template or "script" in template):
                self.api.delete(
                    "pods", pod_name(run.name, node["templateName"], node["name"]), ns, grace_period_seconds=0
                )
            self._end(node, "Failed", message)

    def _finish(self, workflow: dict, nodes: dict, phase: str, message: str, started: str | None = None) -> None:
        status = {
            "phase": phase,
            "startedAt": started or now_rfc3339(),
            "finishedAt": now_rfc3339(),
            "nodes": nodes,
            "progress": _progress(nodes),
            "conditions": [{"type": "Completed", "status": "True"}],
        }
        if message:
            status["message"] = message
        self._write(workflow, status, completed=True)
        with self.lock:
            uid = workflow["metadata"]["uid"]
            self.finished.add(uid)
            for key in [k for k in self.created if k[0] == uid]:
                self.created.pop(key)
            self.attempted = {k for k in self.attempted if k[0] != uid}

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
    import datetime

    begun = datetime.datetime.fromisoformat(started.replace("Z", "+00:00"))
    return (datetime.datetime.now(datetime.timezone.utc) - begun).total_seconds()


def _progress(nodes: dict) -> str:
    pods = [n for n in nodes.values() if n.get("type") == "Pod"]
    return f"{sum(1 for n in pods if n['phase'] == 'Succeeded')}/{len(pods)}"
