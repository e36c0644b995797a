"""check: run a target over a graph -> CheckReport (per-node verdicts, partitions, boundaries).

`predict` is the prediction. The verb `npufit.check(...)` is npufit.compilers.measure.check: this prediction plus,
when asked, the real compiler's placement (the attribute `npufit.check` is that function, not this package).
"""

from .engine import check_graph, predict
from .partitions import Boundary, Partition
from .result import SCHEMA, CheckReport, NodeResult, Reason

__all__ = ["predict", "check_graph", "CheckReport", "NodeResult", "Reason", "Partition", "Boundary", "SCHEMA"]
