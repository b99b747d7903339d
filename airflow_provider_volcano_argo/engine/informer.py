"""One watch per (connection, resource, namespace, shared selectors), fanned out to every follower of a process.

What client-go's shared informers do for controllers: a triggerer following N runs in one namespace holds three
watches (Workflows, Volcano Jobs, log-task pods) instead of 3 N, each an HTTP/1.1 connection with its own TLS
buffers (asyncio keeps a 256 KiB read buffer per TLS connection) and a watch the API server keeps open.
``SharedObjectWatcher`` takes the same arguments as ``ObjectWatcher`` and reports the same updates, filtered to
what its own selectors match; objects are cached without the fields no follower reads (``slim``). The shared
watches of a follower of what the provider submitted are narrowed by the provider's own label
(``models/selectors.OWNED_SELECTOR``); a sensor's are narrowed by the object's name (``per_object_on_server``).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.engine.reflector import ObjectWatcher
from airflow_provider_volcano_argo.models.selectors import SharedSelectors, WatchFilter, split_selectors

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook
    from airflow_provider_volcano_argo.models.resources import ApiResource

#: Heavy fields no follower reads, per resource: the pod templates and node trees of Jobs and Workflows.
_DROPPED_FIELDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "workflows": (
        ("spec",),
        ("status", "nodes"),
        ("status", "storedTemplates"),
        ("status", "storedWorkflowTemplateSpec"),
    ),
    "pods": (("spec",),),
}
#: What is kept of a dropped ``spec``, as the followers read it: a pod's restart policy (whether an ended container
#: may come back: ``models.container_instances.restarts``) and its node (the gang was allocated:
#: ``models.admission.pods_bound``; a pod stuck creating: ``models.pod_waiting.creating``).
_KEPT_SPEC_FIELDS: dict[str, tuple[str, ...]] = {"pods": ("restartPolicy", "nodeName")}


def slim(plural: str, obj: dict) -> dict:
    """Return a shallow copy of ``obj`` without ``managedFields`` and the heavy fields followers do not read."""
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    for path in _DROPPED_FIELDS.get(plural, ()):
        if len(path) == 1:
            dropped = out.pop(path[0], None)
            kept = {
                k: dropped[k] for k in _KEPT_SPEC_FIELDS.get(plural, ()) if isinstance(dropped, dict) and k in dropped
            }
            if path == ("spec",) and kept:
                out["spec"] = kept
        elif isinstance(out.get(path[0]), dict) and path[1] in out[path[0]]:
            out[path[0]] = {k: v for k, v in out[path[0]].items() if k != path[1]}
    return out


@dataclass(eq=False)
class _Subscriber:
    filter: WatchFilter
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)


class SharedWatch:
    """One ``ObjectWatcher`` whose updates go to every subscriber whose filter matches.

    It keeps the current (slimmed) objects, so a late subscriber starts from a complete list like a fresh watcher.
    """

    def __init__(self, hook: AsyncVolcanoArgoHook, resource: ApiResource, namespace: str, selectors: SharedSelectors):
        self.resource = resource
        self.objects: dict[str, dict] = {}
        self.synced = False
        self.subscribers: set[_Subscriber] = set()
        self.watcher = ObjectWatcher(
            hook,
            resource,
            namespace,
            self._on_update,
            field_selector=selectors.field or None,
            label_selector=selectors.label or None,
            transform=lambda obj: slim(resource.plural, obj),
        )
        self.task: asyncio.Task | None = None

    def subscribe(self, watch_filter: WatchFilter) -> _Subscriber:
        sub = _Subscriber(watch_filter)
        if self.synced:
            sub.queue.put_nowait(("SYNCED", {"items": self._matching(watch_filter)}))
        self.subscribers.add(sub)
        if self.task is None:
            self.task = asyncio.create_task(self.watcher.run())
            self.task.add_done_callback(self._ended)
        return sub

    def unsubscribe(self, sub: _Subscriber) -> bool:
        """Remove ``sub``; return True when it was the last one (the watch is then stopped)."""
        self.subscribers.discard(sub)
        if self.subscribers:
            return False
        if self.task is not None:
            self.task.cancel()
        return True

    def _matching(self, watch_filter: WatchFilter) -> list[dict]:
        if watch_filter.name:
            obj = self.objects.get(watch_filter.name)
            return [obj] if obj is not None and watch_filter.matches(obj) else []
        return [obj for obj in self.objects.values() if watch_filter.matches(obj)]

    async def _on_update(self, kind: str, obj: dict) -> None:
        if kind == "SYNCED":
            self.objects = {o["metadata"]["name"]: o for o in obj["items"]}  # slimmed page by page
            self.synced = True
            for sub in self.subscribers:
                sub.queue.put_nowait(("SYNCED", {"items": self._matching(sub.filter)}))
            return
        kept = slim(self.resource.plural, obj)
        if kind == "DELETED":
            self.objects.pop(kept["metadata"]["name"], None)
        else:
            self.objects[kept["metadata"]["name"]] = kept
        for sub in self.subscribers:
            if sub.filter.matches(kept):
                sub.queue.put_nowait((kind, kept))

    def _ended(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        error = task.exception() or RuntimeError(f"the shared watch on {self.resource.label} ended")
        for sub in self.subscribers:
            sub.queue.put_nowait(("ERROR", error))


_WATCHES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple, SharedWatch]] = weakref.WeakKeyDictionary()


def shared_watches() -> dict[tuple, SharedWatch]:
    """Return the shared watches open on the running loop (for tests and benchmarks)."""
    return _WATCHES.setdefault(asyncio.get_running_loop(), {})


def _identity(hook: AsyncVolcanoArgoHook) -> tuple:
    """Return what selects the credentials of a hook (triggers build their hooks from exactly these)."""
    config_dict = getattr(hook, "config_dict", None)
    return (hook.conn_id, hook.cluster_context, hook.config_file, hook.in_cluster, repr(config_dict))


@dataclass
class SharedObjectWatcher(ObjectWatcher):
    """Drop-in for ``ObjectWatcher`` that subscribes to the process's shared watch instead of opening its own.

    ``per_object_on_server``: the API server filters by the name and per-object labels too (``split_selectors``).
    """

    per_object_on_server: bool = False

    async def run(self) -> None:
        """Report updates until cancelled; errors of the shared watch (403, 404) propagate to every subscriber."""
        split = split_selectors(self.field_selector, self.label_selector, self.per_object_on_server)
        if split is None:  # a selector the shared watch cannot filter for: a watch of its own
            await super().run()
            return
        selectors, watch_filter = split
        key = (_identity(self.hook), self.resource, self.namespace, selectors)
        watches = shared_watches()
        watch = watches.get(key)
        if watch is None or (watch.task is not None and watch.task.done()):  # none yet, or it failed: retry
            watch = watches[key] = SharedWatch(self.hook, self.resource, self.namespace, selectors)
        sub = watch.subscribe(watch_filter)
        try:
            while True:
                kind, obj = await sub.queue.get()
                if kind == "ERROR":
                    raise obj
                await self.on_update(kind, obj)
        finally:
            if watch.unsubscribe(sub) and watches.get(key) is watch:
                del watches[key]
                if watch.task is not None:  # let it close its connection
                    await asyncio.wait([watch.task])
