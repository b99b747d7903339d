"""Stream the logs of one Volcano task's pods: one ``InstanceStream`` per container instance the pod watch shows.

Every instance of the pods of the Jobs it is told about, oldest attempt first, each under a header naming the
attempt; once the outcome is known the streams read to their instances' ends (``drain``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.engine.informer import SharedObjectWatcher, slim
from airflow_provider_volcano_argo.engine.pod_logs import TAIL_LINES, InstanceStream
from airflow_provider_volcano_argo.models.container_instances import (
    instance_finished,
    instance_started_at,
    job_of_pod,
    log_instances,
    log_read,
    started_instances,
)
from airflow_provider_volcano_argo.models.resources import PODS
from airflow_provider_volcano_argo.models.results import bounded_tails

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook
    from airflow_provider_volcano_argo.models.log_cursor import CursorBook

#: Once the outcome is known, logs are read on until no line arrived for this long; when the run did not end by
#: itself (objects deleted from outside, execution_timeout reached), for this long in all: deleted pods may take a
#: whole grace period to die, and a master still printing would keep an idle-based drain going for ever.
DRAIN_SECONDS = 30.0
BOUNDED_DRAIN_SECONDS = 2.0


class PodLogForwarder:
    """Watches the pods of one Volcano task (``label_selector``) and streams their ``container``'s logs.

    Every instance in the pods of the ``jobs()`` it is told about, oldest attempt first, each under a header naming
    the attempt.
    """

    def __init__(
        self,
        hook: AsyncVolcanoArgoHook,
        namespace: str,
        label_selector: str,
        container: str,
        jobs: Callable[[], set[str]],
        book: CursorBook,
        emit: Callable[[str], None],
        prefix_job_names: bool = False,
        on_change: Callable[[], None] | None = None,
        poll_interval: float | None = None,
        per_object_on_server: bool = False,
    ):
        self.hook, self.namespace, self.label_selector = hook, namespace, label_selector
        self.per_object_on_server = per_object_on_server  # pods that carry no label of ours (a sensor's)
        self.container, self.jobs, self.book, self.emit = container, jobs, book, emit
        self.prefix_job_names, self.poll_interval = prefix_job_names, poll_interval
        self.on_change = on_change or (lambda: None)
        self.pods: dict[str, dict] = {}
        self.streams: dict[str, tuple[asyncio.Task, InstanceStream]] = {}
        self.stream_jobs: dict[str, str] = {}
        # when the watch showed each instance start, having shown its pod before without it (models/log_start.py)
        self.start_seen: dict[str, float] = {}
        # per pod name, the stream started last: the next instance under that name (a restart in the pod, or the
        # pod re-created by RestartJob) waits for it, so that no line comes under another instance's header
        self.last_stream_of: dict[str, asyncio.Task] = {}
        self.synced = False  # the pods have been listed once: every instance that exists has a stream
        self.paused = False
        self._pod_news = asyncio.Event()  # set (and replaced) at each update of the pod watch: wakes waiting streams

    def watcher(self) -> SharedObjectWatcher:
        return SharedObjectWatcher(
            self.hook,
            PODS,
            self.namespace,
            self._on_pod,
            label_selector=self.label_selector,
            per_object_on_server=self.per_object_on_server,
        )

    async def _on_pod(self, kind: str, obj: dict) -> None:
        items = obj["items"] if kind == "SYNCED" else [obj]
        if kind == "SYNCED":
            self.pods = {}
        for pod in items:
            uid = pod["metadata"]["uid"]
            if kind == "DELETED":
                self.pods.pop(uid, None)
                continue
            old = self.pods.get(uid)
            if kind != "SYNCED" and old is not None:  # a list (first, or after a lost watch) may come late
                for key in started_instances(pod, self.container) - started_instances(old, self.container):
                    self.start_seen.setdefault(key, time.monotonic())
            self.pods[uid] = pod
        self.start_streams()
        self.synced = self.synced or kind == "SYNCED"
        self._tell_news()
        self.on_change()

    def catch_up(self, pods: Iterable[dict]) -> None:
        """Take in pods listed once the outcome was known; stream the instances the pod watch had not shown yet.

        No order holds between two watches: the Job's may show its end before the pod watch delivers a master that
        started and ended within moments. A list made after the watches stopped is the most recent state (no
        ``resourceVersion``): its pods replace the cached ones, the others stay (a deleted pod's stream gets 404).
        """
        for pod in pods:
            uid = pod["metadata"]["uid"]
            if uid in self.pods or started_instances(pod, self.container):
                self.pods[uid] = slim(PODS.plural, pod)
        self.start_streams()
        self._tell_news()

    def _tell_news(self) -> None:
        """Wake the streams waiting for the pods to change (``InstanceStream._wait_for_end``)."""
        news, self._pod_news = self._pod_news, asyncio.Event()
        news.set()

    def start_streams(self) -> None:
        """Start a stream for every instance that has started and is not streamed or done yet.

        Not while ``paused``: the owner is still loading the cursors of an earlier follower.
        """
        if self.paused:
            return
        for pod, instance in log_instances(self.pods.values(), self.container, self.jobs()):
            key = instance.key
            if key in self.streams or key in self.book.done:
                continue
            job = job_of_pod(pod)
            name = pod["metadata"]["name"]
            stream = InstanceStream(
                hook=self.hook,
                namespace=self.namespace,
                pod=pod["metadata"]["name"],
                container=self.container,
                key=key,
                book=self.book,
                emit=self.emit,
                is_finished=lambda k=key: instance_finished(self.pods.values(), k),
                prefix=f"[{job}] " if self.prefix_job_names else "",
                header=instance.header(job, self.prefix_job_names),
                poll_interval=self.poll_interval,
                where=lambda k=key: log_read(self.pods.values(), k),
                after=self.last_stream_of.get(name),
                started_at=lambda k=key: instance_started_at(self.pods.values(), k),
                start_seen_at=self.start_seen.get(key),
                pod_news=lambda: self._pod_news,
            )
            self.streams[key] = (asyncio.create_task(stream.run()), stream)
            self.last_stream_of[name] = self.streams[key][0]
            self.stream_jobs[key] = job

    async def drain(self, bounded: bool = False) -> None:
        """Let the streams read up to the end of their instances while they make progress.

        Stop when no line arrived for ``DRAIN_SECONDS`` (a long backlog is read to its end, a stalled stream cannot
        hold the outcome back), or after ``BOUNDED_DRAIN_SECONDS`` in all when ``bounded`` (the run did not end).
        """
        tasks = [task for task, _ in self.streams.values() if not task.done()]
        if bounded:
            if tasks:
                await asyncio.wait(tasks, timeout=BOUNDED_DRAIN_SECONDS)
        else:
            pending = set(tasks)
            while pending:
                before = self.lines_emitted
                _, pending = await asyncio.wait(pending, timeout=DRAIN_SECONDS)
                if self.lines_emitted == before:
                    break
        self.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # their connections are closed

    def raise_failure(self) -> None:
        """Re-raise what ended a stream abnormally (e.g. a lasting 403 on ``pods/log``), so the run fails."""
        for task, _ in self.streams.values():
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    def cancel(self) -> None:
        for task, _ in self.streams.values():
            if not task.done():
                task.cancel()

    def tails(self) -> dict[str, list[str]]:
        """Return the last lines shown per job (for failure diagnostics), within the event's byte budget."""
        tails: dict[str, list[str]] = {}
        for key, (_, stream) in self.streams.items():
            tails.setdefault(self.stream_jobs[key], []).extend(stream.tail)
        return bounded_tails({job: lines[-TAIL_LINES:] for job, lines in tails.items()})

    @property
    def lines_emitted(self) -> int:
        return sum(stream.lines_emitted for _, stream in self.streams.values())
