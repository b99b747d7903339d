"""The kubectl image's scripts in the upstream example, run with the pod's service account (so RBAC applies).

Recognised (not interpreted in general): ``echo`` lines, ``kubectl wait pod -l SEL --for=condition=Ready
--timeout=Ns`` (prints ``pod/<name> condition met`` per pod, like kubectl; exits 1 with kubectl's message on
timeout or a refused request), and the follow-logs script (find the pod by ``-l``, wait for Running / Succeeded /
Failed, then ``kubectl logs -f -c CONTAINER POD``), with the script's echo lines in the script's order.
"""

from __future__ import annotations

import json
import re
import shlex
import time

from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException
from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext, Program
from airflow_provider_volcano_argo.sandbox.kubelet.shell import logical_lines, script_of


def _selector(line: str) -> str:
    words = shlex.split(line)
    for i, word in enumerate(words):
        if word == "-l" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--selector="):
            return word.split("=", 1)[1]
    return ""


def _refusal(exc: ApiException) -> str:
    try:
        message = json.loads(exc.body)["message"]
    except (ValueError, KeyError, TypeError):
        message = str(exc.reason)
    return f"Error from server ({exc.reason}): {message}"


def _ready(pod: dict) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class KubectlProgram(Program):
    """Runs the supported kubectl scripts."""

    def run(self, ctx: ContainerContext) -> int:
        lines = logical_lines(script_of(ctx.container))
        follow = any("kubectl logs" in line for line in lines)
        pod_name = ""
        for line in lines:
            if ctx.stopped.is_set():
                return 137
            if line.startswith("exec "):
                # kubectl replaces bash as PID 1; a Go program exits on SIGTERM (bash as PID 1 ignores it)
                ctx.handles_sigterm = True
                line = line[len("exec ") :]
            if line.startswith("echo "):
                text = " ".join(shlex.split(line)[1:]).replace("$POD", pod_name).replace("${POD}", pod_name)
                if follow and "Pod phase" in text:
                    continue  # printed with the phase below
                ctx.write(text)
            elif "kubectl wait" in line:
                code = self._wait(ctx, line)
                if code:
                    return code
            elif follow and "kubectl get pods" in line:
                pod_name = self._find(ctx, _selector(line))
                if not pod_name:
                    return 137
            elif follow and "kubectl get pod " in line:
                phase = self._phase(ctx, pod_name)
                if not phase:
                    return 137
                ctx.write(f"Pod phase: {phase}")
            elif "kubectl logs" in line:
                container = re.search(r"-c\s+(\S+)", line)
                self._logs(ctx, pod_name, container.group(1) if container else "")
        return 0

    def _wait(self, ctx: ContainerContext, line: str) -> int:
        timeout = re.search(r"--timeout=(\d+)s", line)
        deadline = time.monotonic() + (int(timeout.group(1)) if timeout else 30)
        selector = _selector(line)
        while True:
            try:
                pods = ctx.pod_api.list("pods", ctx.namespace, label_selector=selector)["items"]
            except ApiException as exc:
                ctx.write(_refusal(exc))
                return 1
            if pods and all(_ready(p) for p in pods):
                for pod in pods:
                    ctx.write(f"pod/{pod['metadata']['name']} condition met")
                return 0
            if time.monotonic() > deadline:
                waiting = next((p["metadata"]["name"] for p in pods if not _ready(p)), "")
                ctx.write(
                    f"error: timed out waiting for the condition on pods/{waiting}"
                    if waiting
                    else "error: no matching resources found"
                )
                return 1
            if not ctx.sleep(0.5):
                return 137

    def _find(self, ctx: ContainerContext, selector: str) -> str:
        while not ctx.stopped.is_set():
            try:
                pods = ctx.pod_api.list("pods", ctx.namespace, label_selector=selector)["items"]
            except ApiException:
                pods = []  # the script hides errors (2>/dev/null) and keeps trying
            if pods:
                return pods[0]["metadata"]["name"]
            ctx.sleep(2 * ctx.time_scale)
        return ""

    def _phase(self, ctx: ContainerContext, pod_name: str) -> str:
        while not ctx.stopped.is_set():
            try:
                phase = (ctx.pod_api.get("pods", pod_name, ctx.namespace).get("status") or {}).get("phase", "")
            except ApiException:
                phase = ""
            if phase in ("Running", "Succeeded", "Failed"):
                return phase
            ctx.sleep(2 * ctx.time_scale)
        return ""

    def _logs(self, ctx: ContainerContext, pod_name: str, container: str) -> None:
        query = {"follow": True, "container": container} if container else {"follow": True}
        try:
            response = ctx.pod_api.request(
                "GET", f"/api/v1/namespaces/{ctx.namespace}/pods/{pod_name}/log", query=query, timeout=None, stream=True
            )
        except ApiException as exc:
            ctx.write(_refusal(exc))
            return  # `|| true` in the script
        buffer = b""
        for chunk in response.stream(65536, decode_content=False):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                ctx.write(line.decode("utf-8", "replace"))
            if ctx.stopped.is_set():
                break
        response.release_conn()
