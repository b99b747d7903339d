"""Watch objects the way client-go's reflector does: list, then watch from the list's resourceVersion.

After a dropped connection the watch resumes from the last version seen; on ``410 Gone`` it lists again.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_provider_volcano_argo.engine.reconnect import Reconnect
from airflow_provider_volcano_argo.exceptions import ApiGoneError, ApiNotFoundError

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.hooks.volcano_argo import AsyncVolcanoArgoHook
    from airflow_provider_volcano_argo.models.resources import ApiResource

#: Objects per list request (client-go's pager default).
LIST_PAGE_SIZE = 500

#: Each watch asks the server to end it after a random time in [1, 2) x this, as client-go's reflector does
#: (``minWatchTimeout``, k8s.io/client-go/tools/cache/reflector.go): watches of many clients do not all
#: re-open at once, and a run of a few minutes mostly needs no second watch.
MIN_WATCH_TIMEOUT_SECONDS = 300


def watch_timeout_seconds(minimum: int = MIN_WATCH_TIMEOUT_SECONDS) -> int:
    """Return the ``timeoutSeconds`` of the next watch request: random in ``[minimum, 2 * minimum)``."""
    return int(minimum * (random.random() + 1.0))


#: A watcher reports (event type, object) for ADDED / MODIFIED / DELETED, and after each (re)list
#: ("SYNCED", {"items": [...]}): the complete current set, so that deletions missed while disconnected show.
Update = tuple[str, dict]


@dataclass
class WatchStats:
    """Counters a benchmark or a test can read: how many requests a watcher made."""

    lists: int = 0
    watches: int = 0
    reconnects: int = 0
    relists_after_gone: int = 0


@dataclass
class ObjectWatcher:
    """Feeds ``on_update`` with every change of the objects matching the selectors in one namespace."""

    hook: AsyncVolcanoArgoHook
    resource: ApiResource
    namespace: str
    on_update: Callable[[str, dict], Awaitable[None]]
    field_selector: str | None = None
    label_selector: str | None = None
    watch_timeout_seconds: int | None = None  # None: client-go's random 5-10 min
    transform: Callable[[dict], dict] | None = None  # applied to listed objects page by page
    stats: WatchStats = field(default_factory=WatchStats)

    async def run(self) -> None:
        """Run until cancelled. Permanent errors (a lasting 403, 404 on the resource type) propagate."""
        version: str | None = None
        reconnect = Reconnect(f"watch on {self.resource.label}")
        listed = False
        while True:
            try:
                if version is None:
                    version = await self._relist()
                    listed = True
                async for event in self.hook.watch_objects(
                    self.resource,
                    self.namespace,
                    version,
                    field_selector=self.field_selector,
                    label_selector=self.label_selector,
                    timeout_seconds=self.watch_timeout_seconds or watch_timeout_seconds(),
                ):
                    obj = event["object"]
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event["type"] != "BOOKMARK":
                        await self.on_update(event["type"], obj)
                    reconnect.reset()
                self.stats.watches += 1  # the server closed the watch at its timeout: resume
            except ApiGoneError:
                self.stats.relists_after_gone += 1
                version = None
            except Exception as exc:  # the reconnect policy re-raises what is not transient
                if isinstance(exc, ApiNotFoundError) and not listed:
                    raise  # the resource type is not served (CRD missing): say so at once
                self.stats.reconnects += 1
                await reconnect.recover(exc)

    async def _relist(self) -> str:
        """List in pages (as client-go's pager does), each page through ``transform`` before the next is read.

        A namespace with thousands of objects never sits in memory whole; the first page's version is the snapshot's.
        """
        items: list[dict] = []
        version: str | None = None
        token: str | None = None
        while True:
            self.stats.lists += 1
            page = await self.hook.list_objects(
                self.resource,
                self.namespace,
                field_selector=self.field_selector,
                label_selector=self.label_selector,
                limit=LIST_PAGE_SIZE,
                continue_token=token,
            )
            version = version or page["metadata"]["resourceVersion"]
            items.extend(self.transform(obj) if self.transform else obj for obj in page.get("items", []))
            token = page["metadata"].get("continue")
            if not token:
                break
        await self.on_update("SYNCED", {"items": items})
        return version
