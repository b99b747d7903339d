"""Shared informers and a work-queue controller base for the emulated controllers.

Follows client-go's pattern (``tools/cache`` informers + ``util/workqueue``): list, then watch from the list's
resourceVersion, relist on ``410 Gone`` or a broken connection, and hand object keys to reconcilers.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, KubeApi

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name); namespace is "" for cluster-scoped objects


def key_of(obj: dict) -> Key:
    meta = obj.get("metadata", {})
    return meta.get("namespace", ""), meta["name"]


class Informer:
    """Keeps an up-to-date local copy of one resource kind and tells subscribers what changed."""

    def __init__(self, api: KubeApi, kind: str, stop: threading.Event):
        self.api = api
        self.kind = kind
        self.stop = stop
        self.cache: dict[Key, dict] = {}
        self.lock = threading.RLock()
        self.synced = threading.Event()
        self.handlers: list[Callable[[str, dict, dict | None], None]] = []
        self.thread = threading.Thread(target=self._run, name=f"informer-{kind}", daemon=True)

    def subscribe(self, handler: Callable[[str, dict, dict | None], None]) -> None:
        """``handler(event_type, obj, old_obj)`` runs on every ADDED / MODIFIED / DELETED."""
        self.handlers.append(handler)

    def start(self) -> None:
        self.thread.start()

    def get(self, namespace: str, name: str) -> dict | None:
        with self.lock:
            return self.cache.get((namespace, name))

    def items(self, namespace: str | None = None, predicate: Callable[[dict], bool] | None = None) -> list[dict]:
        with self.lock:
            values = list(self.cache.values())
        return [
            o
            for o in values
            if (namespace is None or o["metadata"].get("namespace", "") == namespace)
            and (not predicate or predicate(o))
        ]

    def _notify(self, event: str, obj: dict, old: dict | None) -> None:
        for handler in self.handlers:
            try:
                handler(event, obj, old)
            except Exception:  # a subscriber's bug must not stop the informer
                log.exception("informer %s handler failed", self.kind)

    def _relist(self) -> str:
        listing = self.api.list(self.kind)
        fresh = {key_of(o): o for o in listing.get("items", [])}
        with self.lock:
            old = self.cache
            self.cache = fresh
        for key, obj in fresh.items():
            previous = old.get(key)
            if previous is None or previous["metadata"].get("resourceVersion") != obj["metadata"].get(
                "resourceVersion"
            ):
                self._notify("ADDED" if previous is None else "MODIFIED", obj, previous)
        for key, obj in old.items():
            if key not in fresh:
                self._notify("DELETED", obj, obj)
        self.synced.set()
        return listing["metadata"]["resourceVersion"]

    def _run(self) -> None:
        version = None
        while not self.stop.is_set():
            try:
                if version is None:
                    version = self._relist()
                for event in self.api.watch(self.kind, version, timeout_seconds=30):
                    if self.stop.is_set():
                        return
                    kind, obj = event["type"], event["object"]
                    if kind == "ERROR":
                        version = None  # 410 Gone and friends: relist
                        break
                    version = obj["metadata"]["resourceVersion"]
                    if kind == "BOOKMARK":
                        continue
                    key = key_of(obj)
                    with self.lock:
                        old = self.cache.get(key)
                        if kind == "DELETED":
                            self.cache.pop(key, None)
                        else:
                            self.cache[key] = obj
                    self._notify(kind, obj, old)
            except Exception as exc:  # connection refused while the API server restarts, timeouts
                if self.stop.is_set():
                    return
                if isinstance(exc, ApiException) and exc.status == 410:
                    version = None
                log.debug("informer %s: %s; retrying", self.kind, exc)
                self.stop.wait(0.5)


#: A controller looks at every key again this often without an event, times the sandbox's ``time_scale`` (1 s in
#: tests): a safety net for events missed while the API server restarts (upstream's controllers are driven by
#: events too). At hundreds of objects a 1 s resync was most of the sandbox's CPU.
RESYNC_SECONDS = 10.0


class Controller:
    """A reconcile loop over a set of keys, as a client-go controller with a rate-limited work queue."""

    name = "controller"

    def __init__(self, stop: threading.Event, resync_seconds: float = 1.0):
        """Set up the queue; nothing runs before ``start()``.

        ``resync_seconds``: how often every key is looked at again without an event (a safety net; the sandbox
        scales it with its ``time_scale``).
        """
        self.stopping = stop
        self.resync_seconds = resync_seconds
        self._queue: dict[Any, float] = {}  # key -> when it is due
        # the same, ordered by due time; entries whose key was re-queued earlier are skipped when they come up (a
        # scan of the whole queue per key made every controller quadratic in the number of objects)
        self._heap: list[tuple[float, int, Any]] = []
        self._sequence = itertools.count()
        self._cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def enqueue(self, key: Any, delay: float = 0.0) -> None:
        due = time.monotonic() + delay
        with self._cond:
            current = self._queue.get(key)
            if current is None or due < current:
                self._queue[key] = due
                heapq.heappush(self._heap, (due, next(self._sequence), key))
            self._cond.notify()

    def keys(self) -> list[Any]:
        """Every key to reconcile on a periodic resync."""
        return []

    def reconcile(self, key: Any) -> float | None:
        """Bring ``key`` to its desired state; return seconds until it should be looked at again, or None."""
        raise NotImplementedError

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Stop reconciling (the shared stop event of the cluster usually does this for every controller)."""
        self.stopping.set()
        with self._cond:
            self._cond.notify_all()

    def _next(self) -> Any:
        with self._cond:
            while not self.stopping.is_set():
                now = time.monotonic()
                while self._heap:
                    due, _, key = self._heap[0]
                    if self._queue.get(key) != due:
                        heapq.heappop(self._heap)  # stale: the key was taken or re-queued for earlier
                    elif due <= now:
                        heapq.heappop(self._heap)
                        del self._queue[key]
                        return key
                    else:
                        break
                wait = min(self._heap[0][0] - now if self._heap else self.resync_seconds, self.resync_seconds)
                self._cond.wait(max(wait, 0.005))
        return None

    def _run(self) -> None:
        last_resync = 0.0
        while not self.stopping.is_set():
            if time.monotonic() - last_resync >= self.resync_seconds:
                last_resync = time.monotonic()
                for key in self.keys():
                    self.enqueue(key)
            key = self._next()
            if key is None:
                return
            try:
                again = self.reconcile(key)
            except Exception as exc:
                if not self.stopping.is_set():
                    log.debug("%s: reconcile %s failed: %s", self.name, key, exc, exc_info=True)
                again = 0.5
            if again is not None:
                self.enqueue(key, again)
