"""Deprecated module: the provider's errors are in ``airflow_provider_volcano_argo.exceptions``."""

from __future__ import annotations

from airflow_provider_volcano_argo._deprecated import moved_names

_NEW = "airflow_provider_volcano_argo.exceptions"

__getattr__ = moved_names(
    __name__,
    {
        # cncf-kubernetes has a KubernetesApiError of its own: ours is now VolcanoArgoApiError
        "KubernetesApiError": f"{_NEW}:VolcanoArgoApiError",
        "VolcanoArgoError": f"{_NEW}:VolcanoArgoError",
        "TemplateNotFoundError": f"{_NEW}:TemplateNotFoundError",
        "api_error_message": f"{_NEW}:api_error_message",
        "explain_api_error": f"{_NEW}:explain_api_error",
    },
)
