"""How the emulated kubelet writes a pod's status: never an older status after a newer one."""

from __future__ import annotations

import threading

from airflow_provider_volcano_argo.sandbox.kubelet.pods import PodRunner


class _SlowFirstWrite:
    """An API whose first status PATCH stalls until released (a loaded API server); records what each wrote."""

    def __init__(self) -> None:
        self.written: list[bool] = []  # the Ready condition of each write, in the order they land
        self.first_sent = threading.Event()
        self.release = threading.Event()

    def patch(self, kind, name, body, namespace, subresource=None) -> dict:
        ready = next(c["status"] for c in body["status"]["conditions"] if c["type"] == "Ready") == "True"
        if not self.first_sent.is_set():
            self.first_sent.set()
            assert self.release.wait(10)
        self.written.append(ready)
        return {}


def test_a_status_computed_before_readiness_never_lands_after_the_ready_one():
    """The container's thread reports it running (not ready) while the pod's thread turns it ready and reports:
    the API server must be left with the ready status, whichever PATCH it would have finished first.
    """
    pod = {
        "metadata": {"name": "w-0", "namespace": "ns", "uid": "u"},
        "spec": {"containers": [{"name": "w", "readinessProbe": {"tcpSocket": {"port": 22}}}]},
    }
    api = _SlowFirstWrite()
    runner = PodRunner(pod, api, programs=None, logs=None, time_scale=0.1)
    runner.phase, runner.main[0].state = "Running", {"running": {}}
    first = threading.Thread(target=runner.report)  # computed not ready, then stalls on the wire
    first.start()
    assert api.first_sent.wait(10)
    runner.main[0].ready = True  # the readiness probe passed meanwhile
    second = threading.Thread(target=runner.report)
    second.start()
    second.join(0.5)  # unserialized, this write lands now, before the stalled one
    api.release.set()
    first.join(10)
    second.join(10)
    assert api.written[-1] is True, api.written
