"""Keep the import paths of 0.1 working after a name moved: a module ``__getattr__`` that warns, then forwards."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def moved_names(old_module: str, moves: dict[str, str]) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` resolving ``moves`` (old name -> ``new.module:NewName``) with a warning."""

    def __getattr__(name: str) -> Any:
        target = moves.get(name)
        if target is None:
            raise AttributeError(f"module {old_module!r} has no attribute {name!r}")
        module, _, new_name = target.partition(":")
        from airflow.exceptions import AirflowProviderDeprecationWarning

        warnings.warn(
            f"{old_module}.{name} is deprecated: use {module}.{new_name}",
            AirflowProviderDeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(module), new_name)

    return __getattr__
