"""check: run a target over a graph -> CheckReport (per-node verdicts, partitions, boundaries).

`npufit.check(...)` is npufit.compilers.measure.check: this prediction plus, when asked, the real compiler's placement.
"""

from .engine import check, check_graph
from .partitions import Boundary, Partition
from .result import SCHEMA, CheckReport, NodeResult, Reason

__all__ = ["check", "check_graph", "CheckReport", "NodeResult", "Reason", "Partition", "Boundary", "SCHEMA"]

from ..util.callable_module import make_callable  # noqa: E402

make_callable(__name__)  # npufit.check(...): the API entry, which can also measure (compilers/measure.py)
