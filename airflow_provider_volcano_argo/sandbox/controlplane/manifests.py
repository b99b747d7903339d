"""Apply arbitrary manifests (any apiVersion/kind), finding each kind's REST path through API discovery."""

from __future__ import annotations

import threading

from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import ApiException, KubeApi

_discovery: dict[tuple[int, str], dict[str, tuple[str, bool]]] = {}
_lock = threading.Lock()


def _resources(api: KubeApi, api_version: str) -> dict[str, tuple[str, bool]]:
    """Map kind -> (plural, namespaced) for one group/version, cached per client."""
    key = (id(api), api_version)
    with _lock:
        if key not in _discovery:
            path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            listing = api.request("GET", path)
            _discovery[key] = {
                r["kind"]: (r["name"], r["namespaced"]) for r in listing.get("resources", []) if "/" not in r["name"]
            }
        return _discovery[key]


def object_path(api: KubeApi, manifest: dict, with_name: bool = True) -> str:
    """Return the REST path of ``manifest`` (its collection when ``with_name`` is False)."""
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    found = _resources(api, api_version).get(kind)
    if found is None:
        with _lock:
            _discovery.pop((id(api), api_version), None)  # a CRD may have appeared since
        found = _resources(api, api_version).get(kind)
    if found is None:
        raise ValueError(f"the server does not serve kind {kind} in {api_version}")
    plural, namespaced = found
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    meta = manifest.get("metadata", {})
    if namespaced:
        base += f"/namespaces/{meta.get('namespace') or 'default'}"
    base += f"/{plural}"
    return f"{base}/{meta['name']}" if with_name else base


def apply_manifest(api: KubeApi, manifest: dict) -> dict:
    """Create ``manifest``; if it exists, merge-patch it (``kubectl apply`` without the last-applied bookkeeping)."""
    try:
        return api.request("POST", object_path(api, manifest, with_name=False), body=manifest)
    except ApiException as exc:
        if exc.status != 409 or not manifest.get("metadata", {}).get("name"):
            raise
    return api.request("PATCH", object_path(api, manifest), body=manifest, content_type="application/merge-patch+json")


def delete_manifest(api: KubeApi, manifest: dict, propagation: str = "Background") -> None:
    """Delete the object ``manifest`` names; a missing object is fine."""
    try:
        api.request("DELETE", object_path(api, manifest), body={"propagationPolicy": propagation})
    except ApiException as exc:
        if exc.status != 404:
            raise
