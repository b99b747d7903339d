"""Airflow version switches, as the cncf-kubernetes provider keeps them."""

from __future__ import annotations

from packaging.version import Version


def _airflow_version() -> tuple[int, int, int]:
    from airflow import __version__

    release = Version(__version__).release
    return (release + (0, 0, 0))[:3]  # type: ignore[return-value]


AIRFLOW_V_3_3_PLUS = _airflow_version() >= (3, 3, 0)
