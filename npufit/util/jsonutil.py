"""JSON for result objects: numpy scalars/arrays and enums serialise without per-module glue."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

try:  # a fast encoder when installed (a regular dependency); the standard library otherwise
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    orjson = None


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
    """`indent=None`: compact, for machines (a 100k-node check report is written in a fraction of a second)."""
    if orjson is not None and indent in (None, 2):
        # dataclasses and datetimes go through json_default as with the standard encoder, so both write the same text
        opt = (
            orjson.OPT_SERIALIZE_NUMPY
            | orjson.OPT_NON_STR_KEYS
            | orjson.OPT_PASSTHROUGH_DATACLASS
            | orjson.OPT_PASSTHROUGH_DATETIME
            | (orjson.OPT_INDENT_2 if indent else 0)
        )
        try:
            return orjson.dumps(obj, default=json_default, option=opt).decode()
        except (TypeError, orjson.JSONEncodeError):
            pass  # e.g. an int beyond 64 bits: the standard encoder writes it
    if indent is None:
        return json.dumps(obj, separators=(",", ":"), default=json_default)
    return json.dumps(obj, indent=indent, default=json_default)
