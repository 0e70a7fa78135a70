"""Package names imported on first use (PEP 562), so a package's light modules load without
TensorFlow (the scripts' --help and flag modules) while `from albert_tf.<pkg> import Name`
keeps working for the heavy ones; and the aliases a moved module or name keeps for one release."""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any, Callable, Mapping


def lazy_names(package: str, owners: Mapping[str, str],
               moved: Mapping[str, str] | None = None) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `owners` maps each lazy name to the submodule
    (relative to `package`) that defines it; `moved` maps a name that moved out of `package`
    to the module now holding it (a deprecated alias: its first use warns once, naming that
    module, and keeps the name in `package`); any other name is an AttributeError as usual.

    Example:
        __getattr__ = lazy_names(__name__, {"Trainer": "loop"})
    """

    def __getattr__(name: str) -> Any:
        if name in owners:
            return getattr(importlib.import_module(f"{package}.{owners[name]}"), name)
        if moved and name in moved:
            warnings.warn(f"{package}.{name} moved to {moved[name]}.{name}; import it from "
                          f"{moved[name]} (the old name goes in the next release)",
                          DeprecationWarning, stacklevel=2)
            value = getattr(importlib.import_module(moved[name]), name)
            # Kept: `from package import name` looks the name up twice, and warns once.
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def moved_module(old: str, new: str) -> None:
    """Called by the module `old` left behind when it moved to `new`: importing `old` gives
    `new` itself (the same objects, so patching either patches both), with one
    DeprecationWarning naming `new`. Kept for one release.

    Example (albert_tf/export/engines.py):
        moved_module(__name__, "albert_tf.serving.engines")
    """
    warnings.warn(f"{old} moved to {new}; import it from there (the old name goes in the next "
                  "release)", DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
