"""Let `npufit.check(...)` work although `npufit.check` is also a package.

Importing a subpackage sets it as an attribute of its parent, which would shadow the library
function of the same name. Making the package module itself callable keeps both spellings
(`npufit.check(model, target)` and `from npufit.check import check`) working.
"""
from __future__ import annotations

import sys
import types
from collections.abc import Callable


def make_callable(module_name: str, func: Callable) -> None:
    mod = sys.modules[module_name]

    class _CallableModule(types.ModuleType):
        def __call__(self, *args, **kwargs):
            return func(*args, **kwargs)

    mod.__class__ = _CallableModule
