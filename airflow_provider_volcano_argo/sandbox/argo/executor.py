"""``argoexec resource ACTION``: what the ``argoexec`` image does in a resource step's pod.

Follows argoproj/argo-workflows v3.7 ``cmd/argoexec/commands/resource.go`` (``execResource``: initialize the
WorkflowTaskResult, act, wait, save the outputs, finalize), ``workflow/executor/resource.go`` (``ExecResource``:
``kubectl ACTION`` retried on transient errors only; ``WaitResource``: a GET every ``RESOURCE_STATE_CHECK_INTERVAL``,
5 s, until a condition holds, transient errors polled through; ``SaveResourceParameters``), ``taskresult.go``
(``createTaskResult``, ``patchTaskResultLabels``) and ``cmd/argoexec/main.go`` (any error: exit 64, the error as
the termination message). It acts as the pod's service account, so RBAC decides as on a cluster.
"""

from __future__ import annotations

import json
import time

import urllib3

from airflow_provider_volcano_argo.sandbox.argo.goyaml import load_manifest
from airflow_provider_volcano_argo.sandbox.argo.rules import evaluate, json_path
from airflow_provider_volcano_argo.sandbox.controlplane.manifests import object_path
from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, status_message, status_reason
from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext, Program

EXECUTOR_IMAGE = "quay.io/argoproj/argoexec:v3.7.10"  # the controller's default executor image
CHECK_INTERVAL_SECONDS = 5.0  # RESOURCE_STATE_CHECK_INTERVAL's default
DENIED_GRACE_SECONDS = 15.0
TRANSIENT_STATUSES = (429, 503, 504)  # util/errors isTransientErr: TooManyRequests, ServiceUnavailable, timeouts
#: the same by the Status's reason (apimachinery's IsTooManyRequests, IsServiceUnavailable and IsTimeout check the
#: reason or the code; IsServerTimeout only the reason, on a 500: kube-apiserver's ServiceAccount admission refuses
#: a pod so while the account's token is not created yet, "No API token found ..., retry after ...")
TRANSIENT_REASONS = frozenset({"TooManyRequests", "ServiceUnavailable", "Timeout", "ServerTimeout"})
TASK_RESULTS = "/apis/argoproj.io/v1alpha1/namespaces/{ns}/workflowtaskresults"


#: isTransientNetworkErr: connection refused or reset, EOF, timeouts (the API server restarting)
NETWORK_ERRORS = (urllib3.exceptions.HTTPError, OSError)


def transient(exc: Exception) -> bool:
    """Tell whether Argo's ``util/errors`` ``IsTransientErr`` holds for ``exc`` (a retry is due, not a failure)."""
    if isinstance(exc, ApiException):
        return exc.status in TRANSIENT_STATUSES or status_reason(exc) in TRANSIENT_REASONS
    return isinstance(exc, NETWORK_ERRORS)


class StepError(Exception):
    """The step's error: argoexec exits 64 with it as the termination message."""


class ArgoexecProgram(Program):
    """Run ``argoexec resource ACTION`` from the pod's ``ARGO_TEMPLATE``."""

    def run(self, ctx: ContainerContext) -> int:
        env = ctx.env
        template = json.loads(env["ARGO_TEMPLATE"])
        action = (ctx.container.get("command") or ["", "", "create"])[2]
        api = ctx.pod_api
        results = TASK_RESULTS.format(ns=ctx.namespace)
        node_id = env["ARGO_NODE_ID"]
        errors: list[str] = []
        try:  # InitializeOutput: a refusal is recorded as the first error, and the step goes on
            _retrying(ctx, lambda: self._upsert_result(ctx, results, node_id, env, {}))
        except (ApiException, StepError) as exc:
            errors.append(_message(exc))
        try:
            created = self._exec_resource(ctx, action, template)
            if created is not None and action != "delete":
                self._wait_resource(ctx, template["resource"], created)
                outputs = _outputs(template, api.request("GET", object_path(ctx.api, created)))
                if outputs:
                    result = {"outputs": {"parameters": outputs}}
                    _retrying(ctx, lambda: self._upsert_result(ctx, results, node_id, env, result))
        except StepError as exc:
            errors.append(str(exc))
        except (ApiException, *NETWORK_ERRORS) as exc:
            errors.append(_message(exc))
        try:  # FinalizeOutput: a refusal is the step's error too
            patch = {"metadata": {"labels": {"workflows.argoproj.io/report-outputs-completed": "true"}}}
            _retrying(
                ctx,
                lambda: api.request(
                    "PATCH", f"{results}/{node_id}", body=patch, content_type="application/merge-patch+json"
                ),
            )
        except (ApiException, StepError) as exc:
            errors.append(_message(exc))
        if ctx.stopped.is_set():
            return 137
        for error in errors:  # AddError logs each
            ctx.write(f'level=error msg="executor error: {error}"')
        if errors:
            ctx.termination_message = errors[0]  # HandleError: the first error
            return 64
        return 0

    @staticmethod
    def _upsert_result(ctx: ContainerContext, results: str, node_id: str, env: dict, result: dict) -> None:
        body = {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "WorkflowTaskResult",
            "metadata": {
                "name": node_id,
                "labels": {
                    "workflows.argoproj.io/workflow": env["ARGO_WORKFLOW_NAME"],
                    "workflows.argoproj.io/report-outputs-completed": "false",
                },
                "ownerReferences": [
                    {
                        "apiVersion": "argoproj.io/v1alpha1",
                        "kind": "Workflow",
                        "name": env["ARGO_WORKFLOW_NAME"],
                        "uid": env["ARGO_WORKFLOW_UID"],
                    }
                ],
            },
            **result,
        }
        try:
            ctx.pod_api.request("POST", results, body=body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            ctx.pod_api.request(
                "PATCH", f"{results}/{node_id}", body=result, content_type="application/merge-patch+json"
            )

    def _exec_resource(self, ctx: ContainerContext, action: str, template: dict) -> dict | None:
        """Act on the manifest as ``kubectl ACTION -f manifest -o json`` does; retry transient errors only.

        ``retry.DefaultBackoff``: 4 tries, 10 ms apart and 5 times longer each time.
        """
        resource = template["resource"]
        manifest = load_manifest(resource.get("manifest", ""))  # kubectl reads it with sigs.k8s.io/yaml
        manifest.setdefault("metadata", {}).setdefault("namespace", ctx.namespace)
        ctx.write(f"kubectl {action} -f /tmp/manifest.yaml -o json")
        delay = 0.01
        for attempt in range(4):
            try:
                return _act(ctx, action, manifest, resource.get("mergeStrategy", "strategic"))
            except (ApiException, *NETWORK_ERRORS) as exc:
                if not transient(exc) or attempt == 3:
                    raise StepError(f"no more retries {_message(exc)}") from exc
            if not ctx.sleep(delay):
                raise StepError("terminated")
            delay *= 5
        return None

    @staticmethod
    def _check_refusal(exc: Exception, denied_since: float) -> None:
        """Raise the step's error for a non-transient failure of a status read, unless it is to be polled on."""
        if not isinstance(exc, ApiException):
            raise StepError(str(exc)) from exc
        if exc.status == 404:
            raise StepError(
                "The resource has been deleted while its status was still being checked. Will not be retried"
            ) from exc
        # Kubernetes 1.20 serves before its RBAC caches have synced after a restart (later versions gate readiness
        # on it): a refusal that clears within the grace is not the step's failure
        if exc.status in (401, 403) and time.monotonic() - denied_since < DENIED_GRACE_SECONDS:
            return
        raise StepError(status_message(exc)) from exc

    def _wait_resource(self, ctx: ContainerContext, resource: dict, created: dict) -> None:
        """Poll the object until a condition holds: transient errors and 401/403 within the grace are polled on."""
        success, failure = resource.get("successCondition"), resource.get("failureCondition")
        if not success and not failure:
            return
        ctx.write(f"Waiting for conditions: {success or ''}")
        path = object_path(ctx.api, created)
        denied_since: float | None = None
        while True:  # PollUntilContextCancel(immediate=true)
            try:
                current = ctx.pod_api.request("GET", path)
                denied_since = None
            except (ApiException, *NETWORK_ERRORS) as exc:
                if not transient(exc):  # transient ones are polled on (WaitResource: IsTransientErr)
                    denied_since = denied_since or time.monotonic()
                    self._check_refusal(exc, denied_since)
            else:
                outcome, message = evaluate(success, failure, current)
                if outcome == "Failed":
                    raise StepError(message)
                if outcome == "Succeeded":
                    ctx.write(f"Returning from successful wait for resource {created['metadata']['name']}")
                    return
            if not ctx.sleep(CHECK_INTERVAL_SECONDS * ctx.time_scale):
                raise StepError("terminated")


def _message(exc: Exception) -> str:
    return status_message(exc) if isinstance(exc, ApiException) else str(exc)


def _retrying(ctx: ContainerContext, call) -> None:
    """Call until it succeeds or fails for good, as ``InitializeOutput`` and ``FinalizeOutput`` do.

    ``retryutil.OnError``: transient errors are retried 1 s apart, twice longer each time, up to 30 s (scaled).
    """
    delay = 1.0
    while True:
        try:
            call()
            return
        except (ApiException, *NETWORK_ERRORS) as exc:
            if not transient(exc):
                if isinstance(exc, ApiException):
                    raise
                raise StepError(str(exc)) from exc
        if not ctx.sleep(delay * ctx.time_scale):
            raise StepError("terminated")
        delay = min(delay * 2, 30.0)


def _act(ctx: ContainerContext, action: str, manifest: dict, strategy: str) -> dict | None:
    api = ctx.pod_api
    if action == "create":
        return api.request("POST", object_path(ctx.api, manifest, with_name=False), body=manifest)
    if action == "delete":
        try:
            api.request("DELETE", object_path(ctx.api, manifest))
        except ApiException as exc:
            if exc.status != 404:
                raise
        return None
    if action == "get":
        return api.request("GET", object_path(ctx.api, manifest))
    if action in ("apply", "replace", "patch"):
        content = {"merge": "application/merge-patch+json", "json": "application/json-patch+json"}.get(
            strategy, "application/merge-patch+json"
        )
        try:
            return api.request("PATCH", object_path(ctx.api, manifest), body=manifest, content_type=content)
        except ApiException as exc:
            if exc.status != 404 or action == "patch":
                raise
        return api.request("POST", object_path(ctx.api, manifest, with_name=False), body=manifest)
    raise StepError(f"unsupported resource action {action}")


def _outputs(template: dict, obj: dict) -> list[dict]:
    values = []
    for param in (template.get("outputs") or {}).get("parameters", []):
        path = ((param.get("valueFrom") or {}).get("jsonPath") or "").strip("{}").lstrip(".")
        values.append({"name": param["name"], "value": str(json_path(obj, path) if path else "")})
    return values
