"""`npufit.<verb>(...)` for verbs whose name is also a subpackage (pipeline, targets, report, doctor).

After `import npufit.pipeline` the attribute `npufit.pipeline` is the module, so a plain function of that name
cannot exist beside it; the module itself is made callable instead, keeping the library one-to-one with the CLI.
"""
from __future__ import annotations

import sys
import types
from typing import Any, Callable


def make_callable(module_name: str, func: Callable[..., Any]) -> None:
    """Calling module `module_name` calls `func` (its verb's library function)."""

    class VerbModule(types.ModuleType):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)

    sys.modules[module_name].__class__ = VerbModule
