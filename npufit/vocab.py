"""The words the verbs take and their defaults, stated once: the library checks values against these, the CLI
offers them as choices. Plain tuples and strings that import nothing, so building the command-line parser stays
free of numpy and onnx.
"""

from __future__ import annotations

# The target a command-line verb judges for when none is given (check, fix, split, scan, probe); it says so in its
# output. The library has no default: every verb that judges for a target takes it as a required argument.
DEFAULT_TARGET = "hailo8"

# How a float model is judged (check, fix, split, scan, compare: --judge): as its int8 conversion on an int8-only
# target (auto), always as its int8 conversion, or the float graph as it is.
JUDGES = ("auto", "int8", "float")
JUDGE = "auto"

# Whose placement a verb reads (npufit.placement): the installed compiler's where one runs here, else npufit's
# prediction (auto); the prediction only (never: `--predict`); the compiler's or a one-line error (required).
MEASURE_MODES = ("auto", "never", "required")
MEASURE_MODE = "auto"
MEASURE_TIMEOUT_S = 300.0  # a compile that runs longer is stopped and the prediction shown, marked as such

# Which compiler run measures the placement (`check --measure JUDGE`): the compile (auto, compile), or Vela's
# supported-operator checks through its library (vela-checks: TFLite on Ethos-U, no compile).
MEASURE_JUDGES = ("auto", "vela-checks", "compile")
MEASURE_JUDGE = "auto"

# How `split` cuts (library and CLI). With start/end nodes given and no mode, the mode is "explicit".
SPLIT_MODES = ("best", "prefix", "segments", "explicit", "auto")
SPLIT_MODE = "best"
SPLIT_MIN_NODES = 8  # segments: the smallest NPU region that becomes its own stage

# The pipeline's split step differs on purpose: its branch goes on with one stage model, the plan's first NPU stage,
# so it offers the two modes that name one and by default cuts the NPU prefix (the model's head, whose share of the
# MACs `min_npu_macs_pct` judges); in segments mode every NPU region, however small, is a stage the branch can take.
# The step always passes both settings to `split` (tests/test_vocab.py).
PIPELINE_SPLIT_MODES = ("prefix", "segments")
PIPELINE_SPLIT_MODE = "prefix"
PIPELINE_SPLIT_MIN_NODES = 1

# Where batches of independent work run (scan, probe, compile of many models, pipeline cells).
EXECUTORS = ("inprocess", "pool", "ray")
EXECUTOR = "pool"
PIPELINE_EXECUTOR = "inprocess"  # a pipeline's cells one after the other unless asked

QUANTIZE_METHODS = ("minmax", "entropy", "percentile")  # activation range calibration (quantize --method)
QUANTIZE_METHOD = "minmax"
QUANTIZE_ACTIVATIONS = ("int8", "uint8")  # activation type, the default first (weights are int8)

# Output formats (--format): every result renders table / JSON / Markdown; some also one HTML page.
FORMAT = "table"
FORMATS = ("table", "json", "markdown")
PAGE_FORMATS = (*FORMATS, "html")  # check, split, bench
SCAN_FORMATS = ("table", "json", "jsonl", "csv", "html")
STATUS_FORMATS = ("table", "json")  # doctor, env list
TARGETS_FORMATS = ("table", "markdown")
