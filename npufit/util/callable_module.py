"""Let `npufit.check(...)` work although `npufit.check` is also a package.

Importing a subpackage sets it as an attribute of its parent, which would shadow the library
function of the same name. Making the package module itself callable keeps both spellings
(`npufit.check(model, target)` and `from npufit.check import check`) working.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable


def make_callable(module_name: str, func: Callable | None = None) -> None:
    """Calling the module calls `func`; without one, the root's API entry of the same name (`npufit._API`), found at
    the first call: the function may live in a higher layer than the package (npufit.check -> compilers.measure)."""
    mod = sys.modules[module_name]
    found: list[Callable] = [func] if func is not None else []

    def target() -> Callable:
        if not found:
            root = importlib.import_module(module_name.split(".")[0])
            where, attr = root._API[module_name.rsplit(".", 1)[1]]
            found.append(getattr(importlib.import_module(where), attr))
        return found[0]

    class _CallableModule(types.ModuleType):
        def __call__(self, *args, **kwargs):
            return target()(*args, **kwargs)

    mod.__class__ = _CallableModule
