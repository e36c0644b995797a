"""JSON for result objects: numpy scalars/arrays and enums serialise without per-module glue."""
from __future__ import annotations

import json
from enum import Enum
from typing import Any


def json_default(o: Any):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Enum):
        return o.value
    return str(o)


def dumps(obj: Any, indent: int | None = 2) -> str:
    return json.dumps(obj, indent=indent, default=json_default)
