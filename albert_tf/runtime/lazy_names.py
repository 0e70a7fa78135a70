"""Package names imported on first use (PEP 562), so a package's light modules load without
TensorFlow (the scripts' --help and flag modules) while `from albert_tf.<pkg> import Name`
keeps working for the heavy ones."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_names(package: str, owners: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `owners` maps each lazy name to the submodule
    (relative to `package`) that defines it; any other name is an AttributeError as usual.

    Example:
        __getattr__ = lazy_names(__name__, {"Trainer": "loop"})
    """

    def __getattr__(name: str) -> Any:
        if name in owners:
            return getattr(importlib.import_module(f"{package}.{owners[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
