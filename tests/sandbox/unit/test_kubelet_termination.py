"""How the emulated kubelet ends a pod's containers: the grace period, PID 1 and SIGTERM, dependsOn readiness."""

from __future__ import annotations

import threading

import pytest

from airflow_provider_volcano_argo.sandbox.kubelet.pods import grace_seconds
from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext, ScriptedProgram
from airflow_provider_volcano_argo.sandbox.kubelet.shell import ShellProgram
from airflow_provider_volcano_argo.sandbox.volcano.actions import dependency_ready


class _Stopped(threading.Event):
    """The container's stop event; ``blocked`` tells that the program waits on it (it reached a blocking line)."""

    def __init__(self) -> None:
        super().__init__()
        self.blocked = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.blocked.set()
        return super().wait(timeout)


def _context(script: str) -> ContainerContext:
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}}
    container = {"name": "c", "command": ["/bin/sh", "-c", script]}
    return ContainerContext(pod, container, lambda line: None, _Stopped(), api=None)


def _run_until_blocked(program, ctx: ContainerContext) -> threading.Thread:
    thread = threading.Thread(target=program.run, args=(ctx,), daemon=True)
    thread.start()
    assert ctx.stopped.blocked.wait(10)
    return thread


def _signal_and_check(ctx: ContainerContext, thread: threading.Thread, handles: bool) -> None:
    assert ctx.handles_sigterm is handles
    ctx.sigterm()
    assert ctx.stopped.is_set() is handles  # SIGTERM ends the program only where PID 1 handles it
    ctx.sigkill()  # the grace period is over
    thread.join(10)
    assert not thread.is_alive()


@pytest.mark.parametrize(
    ("metadata", "spec", "expected"),
    [
        ({"deletionGracePeriodSeconds": 20}, {"terminationGracePeriodSeconds": 30}, 20.0),  # the deletion's own
        ({}, {"terminationGracePeriodSeconds": 30}, 30.0),
        ({"deletionGracePeriodSeconds": 0}, {}, 2.0),  # minimumGracePeriodInSeconds
        ({}, {}, 2.0),
    ],
)
def test_grace_period_as_kill_container_takes_it(metadata, spec, expected):
    assert grace_seconds({"metadata": metadata, "spec": spec}) == expected


@pytest.mark.parametrize(
    ("script", "handles"),
    [
        ("mkdir -p /var/run/sshd\n/usr/sbin/sshd -D", False),  # sh stays PID 1: SIGTERM dropped
        ("mkdir -p /var/run/sshd\nexec /usr/sbin/sshd -D", True),
        ("exec sleep 3600", False),  # coreutils sleep keeps SIGTERM's default action, dropped for PID 1
    ],
)
def test_sigterm_reaches_only_a_pid_1_that_handles_it(script, handles):
    ctx = _context(script)
    _signal_and_check(ctx, _run_until_blocked(ShellProgram(), ctx), handles)


@pytest.mark.parametrize("ignores", [False, True])
def test_a_scripted_program_handles_sigterm_unless_told_not_to(ignores):
    ctx = _context("")
    _signal_and_check(
        ctx, _run_until_blocked(ScriptedProgram(duration=3600, ignores_sigterm=ignores), ctx), not ignores
    )


def test_depends_on_counts_succeeded_or_running_and_ready_pods():
    def pod(phase: str, *ready: bool) -> dict:
        return {"status": {"phase": phase, "containerStatuses": [{"ready": r} for r in ready]}}

    assert dependency_ready(pod("Succeeded", False))
    assert dependency_ready(pod("Running", True, True))
    assert not dependency_ready(pod("Running", True, False))
    assert not dependency_ready(pod("Pending", True))
