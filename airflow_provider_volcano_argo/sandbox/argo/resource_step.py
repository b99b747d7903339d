"""The ``resource`` template step: act on a manifest, then wait for its success or failure condition.

Follows argoproj/argo-workflows v3.7 ``workflow/executor/resource.go`` (resource actions and conditions). The
actions run in the controller, not in an executor pod, but **as the Workflow's service account**
(impersonation), so RBAC decides as on a cluster; conditions are re-checked whenever the created object changes
and every ``5 s * time_scale`` (upstream's ``RESOURCE_STATE_CHECK_INTERVAL``).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import yaml

from airflow_provider_volcano_argo.sandbox.argo.nodes import NODE_DONE, end_node
from airflow_provider_volcano_argo.sandbox.argo.rules import TemplateError, evaluate, json_path, substitute
from airflow_provider_volcano_argo.sandbox.controlplane.manifests import object_path
from airflow_provider_volcano_argo.sandbox.emulation.cluster import owner_reference
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, status_message

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.argo.nodes import WorkflowRun
    from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import KubeApi

DENIED_GRACE_SECONDS = 15.0


class ResourceSteps:
    """Run ``resource`` steps, remembering what each one created and which creates may have lost their reply."""

    def __init__(self, api: KubeApi, lock: threading.Lock):
        self.api = api
        self.created: dict[tuple[str, str], dict] = {}  # (workflow uid, node id) -> the resource step's object
        self.attempted: set[tuple[str, str]] = set()  # nodes whose create was sent (the reply may have been lost)
        self.denied_since: dict[tuple[str, str], float] = {}  # nodes whose status read is being refused
        self.lock = lock

    def forget(self, uid: str) -> None:
        """Drop what the steps of the Workflow ``uid`` created and attempted (it has ended); call under the lock."""
        for key in [k for k in self.created if k[0] == uid]:
            self.created.pop(key)
        self.attempted = {k for k in self.attempted if k[0] != uid}

    def run(self, run: WorkflowRun, template: dict, node_name: str, boundary: str | None, scope: dict) -> str:
        """Advance the step's node: act on the manifest once, then check its conditions; return the node's phase."""
        node = run.node(node_name, template, boundary, "Pod")
        if node["phase"] in NODE_DONE:
            return node["phase"]
        resource = template["resource"]
        ns = run.workflow["metadata"]["namespace"]
        sa = run.service_account(template)
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
                    return end_node(node, "Failed", f"main: Error (exit code 1): {status_message(exc)}")
            if action == "delete" or created is None:
                return end_node(node, "Succeeded")
            with self.lock:
                self.created[key] = created
            node["outputs"] = {"parameters": self._outputs(template, created)} if template.get("outputs") else {}
        success, failure = resource.get("successCondition"), resource.get("failureCondition")
        if not success and not failure:
            return end_node(node, "Succeeded")
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
                return end_node(
                    node,
                    "Failed",
                    "main: Error (exit code 64): The resource has been deleted while "
                    "its status was still being checked. Will not be retried",
                )
            return end_node(node, "Failed", f"main: Error (exit code 64): {status_message(exc)}")
        outcome, message = evaluate(success, failure, current)
        if outcome == "Failed":
            return end_node(node, "Failed", f"main: Error (exit code 64): {message}")
        if outcome == "Succeeded":
            return end_node(node, "Succeeded")
        run.requeue = True
        return "Running"

    def _still_transient(self, key: tuple[str, str]) -> bool:
        with self.lock:
            first = self.denied_since.setdefault(key, time.monotonic())
        return time.monotonic() - first < DENIED_GRACE_SECONDS

    def _earlier_attempt(self, run: WorkflowRun, key: tuple[str, str], action: str, manifest: dict) -> dict | None:
        """Return the object an earlier create for this node made when its reply was lost (a timeout under load).

        Upstream's executor would have recorded it before failing, so the step must not create a second one.
        """
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

    def _act(self, api: KubeApi, action: str, manifest: dict, strategy: str) -> dict | None:
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
        values = []
        for param in (template.get("outputs") or {}).get("parameters", []):
            path = ((param.get("valueFrom") or {}).get("jsonPath") or "").strip("{}").lstrip(".")
            values.append({"name": param["name"], "value": str(json_path(obj, path) if path else "")})
        return values
