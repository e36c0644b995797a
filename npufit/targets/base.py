"""A target is data (limits, an op table) plus small rule functions.

Borrowed from Vela: the sentence a user reads when a rule fails is the documentation line,
formatted from the same limits the rule checks. Improved: the sentence is an explicit field,
every rule is evaluated (not just the first), and results are values, not prints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..graph import Graph, NodeView


class Verdict(str, Enum):
    NPU = "npu"  # runs on the accelerator
    CPU = "cpu"  # the vendor toolchain places it on the host by itself
    UNSUPPORTED = "unsupported"  # the toolchain rejects it: cut or rewrite the model
    FOLDED = "folded"  # computed at compile time from constants / static shapes: runs nowhere

    def __str__(self) -> str:  # pragma: no cover - cosmetic
        return self.value


class Executes(str, Enum):
    """What the target's NPU computes in, the one fact every verb reads to decide how a float model is judged."""

    INT8 = "int8"  # int8 only (Ethos-U, Ethos-N): a float model reaches it as its int8 conversion
    FP16_INT8 = "fp16+int8"  # float16 and int8 builds (RK3588): a float model is judged as it is
    QUANTIZES_ITSELF = "quantizes itself"  # the vendor compiler quantizes float models inside its flow (Hailo DFC)

    def __str__(self) -> str:  # pragma: no cover - cosmetic
        return self.value


class Fallback(str, Enum):
    """What happens to a node the NPU cannot take (the CPU-fallback model every verb reads)."""

    NONE = "none"  # nothing runs on the host inside the vendor binary (Hailo HEF): cut it away with `npufit split`
    CPU = "cpu"  # the vendor toolchain schedules it on the host CPU by itself (Vela/TFLM, RKNN runtime, Arm NN)

    def __str__(self) -> str:  # pragma: no cover - cosmetic
        return self.value


SEVERITY = {Verdict.FOLDED: -1, Verdict.NPU: 0, Verdict.CPU: 1, Verdict.UNSUPPORTED: 2}


def worst(*verdicts: Verdict) -> Verdict:
    return max(verdicts, key=SEVERITY.__getitem__)


# The rule contract. A rule's check is a module-level function
#     def check(node: NodeView, lim: Limits) -> str | None
# that reads the node (through its NodeView only) and the profile's limits, and returns None when the node satisfies
# the rule, else a short detail ("got kernel 9x9"). A table of its profile besides the limits (an operator list) is a
# keyword-only argument bound with functools.partial. A gate is `def gate(graph: Graph, lim: Limits) -> bool`.
# tests/test_targets_rule_contract.py holds every profile's rules to it.
Limits = Mapping[str, Any]
CheckFn = Callable[[NodeView, Limits], "str | None"]
GateFn = Callable[[Graph, Limits], bool]


@dataclass(frozen=True)
class Hint:
    """A fix hint shown only where `when(node)` holds: a rewrite that applies to this node (TopK with k = 1), a step
    that helps this model (quantize a float model, not an int8 one). `rules`: the `npufit fix` rules it suggests,
    suggested only where it holds too. A plain string hint always applies."""

    text: str
    when: Callable[[NodeView], bool]
    rules: tuple[str, ...] = ()


FixHints = Sequence["str | Hint"]


def hint_rules(fix: FixHints) -> tuple[str, ...]:
    """The `npufit fix` rules the conditional hints of `fix` name (a profile links them to its failures)."""
    return tuple(r for h in fix if isinstance(h, Hint) for r in h.rules)


def hints_for(node: NodeView, fix: FixHints, fix_rules: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The hint texts and `npufit fix` rules that apply to `node`: every plain hint, each Hint whose `when` holds."""
    texts: list[str] = []
    rules = list(fix_rules)
    for h in fix:
        if isinstance(h, str):
            texts.append(h)
        elif h.when(node):
            texts.append(h.text)
            rules.extend(r for r in h.rules if r not in rules)
    return tuple(texts), tuple(rules)


def conditional(fix: FixHints) -> bool:
    return any(not isinstance(h, str) for h in fix)


@dataclass(frozen=True)
class Rule:
    id: str  # stable id, e.g. "hailo8.reducemax.keepdims"
    # constraint: ONE plain sentence a user reads beside the node (tests/test_plain_words.py); every number in it is a
    # {limit} field from Profile.limits (a quoted vendor message may carry its own; tests/test_targets_sentences.py)
    text: str
    check: CheckFn
    on_fail: Verdict = Verdict.UNSUPPORTED
    fix: tuple[str | Hint, ...] = ()  # hints shown to the user (a Hint only where its precondition holds)
    source: str = ""  # key of Profile.sources: users read its description, never the key
    fix_rules: tuple[str, ...] = ()  # names of `npufit fix` rewrite rules that address it
    # gate(graph, limits) -> False when `check` passes every node of the graph (its first test is about the whole
    # graph: its format, whether any shape is dynamic); asked once per check, which then leaves the rule out
    gate: GateFn | None = None
    # what the sentence rests on, in plain words (measurements, vendor messages, conflicting evidence): shown by
    # `npufit explain RULE_ID`, the docs pages and the JSON report's "evidence", never in the table row
    evidence: str = ""

    def sentence(self, limits: Mapping[str, Any]) -> str:
        try:
            return self.text.format(**limits)
        except (KeyError, IndexError, ValueError):
            return self.text


@dataclass(frozen=True)
class RuleMaker:
    """The one way a family writes its rules: `r = RuleMaker(profile_name, family_verdict, family_source)`, then
    `r("conv.kernel", sentence, check, fix, source, fix_rules, on_fail=..., gate=...)` is the Rule
    "<profile_name>.conv.kernel", with the family's verdict for a broken rule and its usual source unless given."""

    prefix: str  # the profile name rule ids start with
    on_fail: Verdict  # what a broken rule means on this family's toolchain
    source: str = ""

    def __call__(
        self,
        rid: str,
        text: str,
        check: CheckFn,
        fix: FixHints = (),
        source: str | None = None,
        fix_rules: Sequence[str] = (),
        *,
        on_fail: Verdict | None = None,
        gate: GateFn | None = None,
        evidence: str = "",
    ) -> Rule:
        src = self.source if source is None else source
        verdict = self.on_fail if on_fail is None else on_fail
        return Rule(f"{self.prefix}.{rid}", text, check, verdict, tuple(fix), src, tuple(fix_rules), gate, evidence)


@dataclass(frozen=True)
class OpSupport:
    """How a target treats one op type when none of its rules fail."""

    op: str
    status: Verdict
    rules: tuple[Rule, ...] = ()
    reason: str = ""  # why, when status is cpu/unsupported (one plain sentence)
    fix: tuple[str | Hint, ...] = ()
    source: str = ""  # key of Profile.sources
    note: str = ""  # shown in the support matrix
    fix_rules: tuple[str, ...] = ()
    evidence: str = ""  # what the verdict rests on, in plain words (see Rule.evidence)


@dataclass(frozen=True)
class CompositeMatch:
    nodes: tuple[NodeView, ...]
    detail: str = ""  # e.g. "axes=[2] keepdims=0"


@dataclass(frozen=True)
class Composite:
    """A multi-node unit judged as one (GELU from Erf, LayerNorm from reductions, mean->reshape->Linear)."""

    id: str
    name: str
    text: str  # one plain sentence shown for every node of the match
    match: Callable[[Graph], list[CompositeMatch]]
    verdict: Verdict
    fix: tuple[str | Hint, ...] = ()
    source: str = ""  # key of Profile.sources
    fix_rules: tuple[str, ...] = ()
    evidence: str = ""  # what the verdict rests on, in plain words (see Rule.evidence)


@dataclass
class Profile:
    name: str  # e.g. "hailo8"
    title: str  # e.g. "Hailo-8 (Hailo Dataflow Compiler 3.x)"
    vendor: str
    summary: str
    fallback: Fallback  # NONE: cut unsupported nodes away (split); CPU: the toolchain runs them on the host itself
    limits: dict[str, Any]
    ops: dict[str, OpSupport]
    unknown: OpSupport  # for op types not in the table
    executes: Executes  # int8 only / fp16+int8 / quantizes itself: decides how a float model is judged
    family: str  # targets that share a toolchain and its rewrite needs ("ethos-u"): docs group by it
    compiler: str  # the name of the npufit.toolchains record of the compiler that builds for it
    graph_rules: tuple[Rule, ...] = ()  # apply to every non-folded node (dtype, batch, rank, static shapes)
    composites: tuple[Composite, ...] = ()
    # source key (what rules, ops and composites name in `source`) -> what it is, in plain words ("Hailo Model Zoo
    # 2.12 network configurations"): users read the description, never the key
    sources: dict[str, str] = field(default_factory=dict)
    input_formats: tuple[str, ...] = ("onnx",)  # model formats its vendor toolchain takes
    # model formats npufit's rules judge for it: ONNX everywhere (through the ONNX->TFLite op mapping where the
    # toolchain
    # compiles TFLite), TFLite only where its TFLite path is modelled
    judged_formats: tuple[str, ...] = ("onnx",)
    # Optional: map a NodeView to the op key used in `ops` (e.g. ONNX -> TFLite vocabulary for Ethos-U).
    op_key: Callable[[NodeView], str] | None = None
    notes: tuple[str, ...] = ()  # one plain sentence each, at the top of every report and docs page
    # notes about one model format ("onnx", "tflite"): shown only on reports of a model in that format
    format_notes: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def notes_for(self, fmt: str) -> list[str]:
        return [*self.notes, *self.format_notes.get(fmt, ())]
    aliases: tuple[str, ...] = ()  # other names `get_profile` accepts (vendor spellings, configurations of one NPU)
    # `check --measure` judges that give per-node placement for it, in the order "auto" tries them ("vela-checks"
    # applies to TFLite models only); () when its compiler reports no placement
    measure_judges: tuple[str, ...] = ("compile",)
    # vendor runtime that runs its compiled NPU stages in a split chain, and the Python module providing it
    # ("" : none modelled; ONNX Runtime CPU stands in and the chain says so)
    runtime: str = ""
    runtime_module: str = ""
    # `npufit fix` default rules (names in npufit.rewrite.registry) besides those named in fix_rules, and their options
    rewrite_rules: tuple[str, ...] = ()
    rewrite_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    label: str = ""  # short column label where every target shares one screen (check grid); defaults to name
    # ops of a TFLite model its compiler runs even when every input is a constant (Vela folds no op it does not
    # support: a float16 weight's DEQUANTIZE stays a CPU op); () when it folds them like npufit does
    runs_constant_ops: tuple[str, ...] = ()
    # figures `split` ranks cuts with where this target states its own (npufit.split.cost.GENERIC keys), its cap on
    # the default plan's NPU stages ("max_npu_stages") and "sources": figure -> where it comes from; {}: generic
    split_costs: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<Profile {self.name}: {self.title}, {len(self.ops)} ops, {len(self.rules())} rules>"

    def __post_init__(self) -> None:
        self.fallback = Fallback(self.fallback)  # "cpu"/"none" spelled as text are accepted; a typo fails here

    @property
    def short(self) -> str:
        return self.label or self.name

    @property
    def formats_text(self) -> str:
        """The formats its toolchain takes, and which of them npufit cannot judge (one wording for table and docs)."""
        other = [f for f in self.input_formats if f not in self.judged_formats]
        note = f" (npufit judges {', '.join(self.judged_formats)} models only: not {', '.join(other)})" if other else ""
        return ", ".join(self.input_formats) + note

    def support_for(self, node: NodeView) -> OpSupport:
        key = self.op_key(node) if self.op_key else node.key
        return self.ops.get(key) or self.unknown

    def rules(self) -> list[Rule]:
        out = list(self.graph_rules)
        for s in self.ops.values():
            out.extend(s.rules)
        return out

    def source_text(self, key: str) -> str:
        """What the source `key` is, in the words a user reads."""
        return self.sources.get(key, key)


# -- small helpers shared by rule functions -------------------------------------------


def spatial(node: NodeView, name: str, default: int = 1) -> list[int]:
    """A per-spatial-axis attribute (kernel_shape, strides, dilations) as a list."""
    v = node.attr(name)
    if v is None:
        w = node.input(1)
        nsp = (len(w.shape) - 2) if (w is not None and w.shape) else 2
        return [default] * max(nsp, 1)
    return [int(x) for x in v]


def kernel_shape(node: NodeView) -> list[int]:
    k = node.attr("kernel_shape")
    if k is not None:
        return [int(x) for x in k]
    w = node.input(1)
    if w is not None and w.shape and len(w.shape) > 2:
        return [int(x) if isinstance(x, int) else -1 for x in w.shape[2:]]
    return []


def fmt_list(v: Sequence[Any]) -> str:
    return "x".join(str(x) for x in v)


def in_range(values: Sequence[int], lo: int, hi: int) -> bool:
    return all(lo <= v <= hi for v in values)
