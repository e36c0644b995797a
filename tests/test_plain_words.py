"""Everything a user reads names a source by what it is and gives one sentence per reason.

Scanned with the one list of internal words in tests/plain_words.py: every rule sentence, reason, hint, note,
composite text, piece of evidence and source description of every target; the generated docs/targets pages; the
docs/guide pages and the README; and real reports in every format (table, Markdown, JSON, HTML) and `explain`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from npufit.targets import available_targets, get_profile
from npufit.targets.explain import rule_index

from .plain_words import jargon, profile_texts, source_keys

ROOT = Path(__file__).resolve().parent.parent
MAX_SENTENCE = 200  # characters: about three lines of the "why" column
# a full stop that ends a sentence inside the text ("e.g." and "i.e." do not)
_SENTENCE_BREAK = re.compile(r"(?<!e\.g)(?<!i\.e)(?<!\bvs)\.\s+[A-Z]")


def test_the_scan_finds_each_kind_of_internal_word_and_passes_plain_ones():
    keys = source_keys()
    for bad in ("(seed 000)", "seeds/002", "the seed-000 evidence", "H-I98", "(H10-A)", "CAL-R sweep", "N-LIB",
                "R-PDF §4.1", "PROBE-V", "RKNN-C", "see targets.md §4a", "hailo_rules.py", "tokens.py",
                "npufit/targets/hailo/rules.py", "before this stop", "provided by the report work", "seed000"):
        assert jargon(bad, keys), bad
    for ok in ("random (seed 0)", "--seed 0", "RF-DETR", "Faster R-CNN", "CONV_2D", "rknn-toolkit2 2.5.0",
               "ONNX opset 11", "docs/probe/rk3588-matrix.md", "python -m npufit.zoo.hailo_zoo", "Hailo Model Zoo",
               "the Hailo-8 op test of a user's project", "a measured Vela 5.2.0 compile",
               "[targets](docs/guide/targets.md)"):
        assert not jargon(ok, keys), ok


@pytest.mark.parametrize("target", available_targets())
def test_every_text_of_a_profile_is_in_plain_words(target):
    keys = source_keys()
    bad = [(where, kind, hits) for where, kind, text in profile_texts(get_profile(target)) if (hits := jargon(text, keys))]
    assert not bad, bad


@pytest.mark.parametrize("target", available_targets())
def test_a_reason_is_one_sentence(target):
    """The row a user reads beside a node: one sentence (evidence goes to `npufit explain`); notes likewise."""
    long = []
    for where, kind, text in profile_texts(get_profile(target)):
        if kind in ("sentence", "profile note") and (len(text) > MAX_SENTENCE or _SENTENCE_BREAK.search(text)):
            long.append((where, len(text), text))
    assert not long, long


def test_the_sentence_check_catches_a_paragraph():
    assert _SENTENCE_BREAK.search("Tensors above rank 4 fail. Evidence conflicts: the Zoo compiles them")
    assert not _SENTENCE_BREAK.search("a one-position slice, e.g. the class token x[:, 0]")


def test_docs_pages_guides_and_readme_are_in_plain_words():
    keys = source_keys()
    pages = [ROOT / "README.md", ROOT / "docs" / "compilers.md", ROOT / "docs" / "pipeline.md",
             *sorted((ROOT / "docs" / "guide").glob("*.md")),
             *sorted((ROOT / "docs" / "targets").glob("*.md"))]
    bad = []
    for page in pages:
        for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if hits := jargon(line, keys):
                bad.append(f"{page.relative_to(ROOT)}:{i}: {hits}")
    assert not bad, "\n".join(bad)


def test_every_rule_with_evidence_is_on_its_docs_page():
    for name in ("hailo8", "rk3588", "ethos-u55-256"):
        page = (ROOT / "docs" / "targets" / f"{name}.md").read_text(encoding="utf-8")
        for rid, info in rule_index(get_profile(name)).items():
            if info.evidence:
                assert f"- `{rid}`: {info.evidence}" in page.replace("\\|", "|"), rid


# -- real reports --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A YOLOv8n-shaped detector (the rank-3 head Hailo-8 rejects), a TopK k=4 head, a stateful int8 TFLite."""
    from npufit.convert.tflite_writer import TFLiteBuilder

    from .hint_models import topk_model
    from .report_models import yolov8n_like
    from .tflite_models import stateful_conv

    d = tmp_path_factory.mktemp("plain")
    b = TFLiteBuilder()
    x, out = stateful_conv(b)
    b.io([x], [out])
    (d / "stateful.tflite").write_bytes(b.build())
    return {
        "yolo": yolov8n_like(d / "yolo.onnx"),
        "topk": topk_model(d / "topk4.onnx", 4),
        "stateful": d / "stateful.tflite",
    }


CASES = [("yolo", "hailo8", "auto"), ("yolo", "ethos-n78", "auto"), ("topk", "hailo8", "auto"),
         ("topk", "rk3576", "auto"), ("stateful", "ethos-u55-256", "auto"), ("yolo", "ethos-u85-256", "float")]


@pytest.mark.parametrize("model,target,judge", CASES)
def test_a_report_in_every_format_is_plain_and_gives_each_reason_its_rule_id(models, model, target, judge):
    import npufit

    report = npufit.check(models[model], target, judge=judge)
    keys = source_keys()
    for fmt in ("table", "markdown", "json", "html"):
        text = report.render(fmt)
        assert not jargon(text, keys), (fmt, jargon(text, keys))
    d = json.loads(report.to_json())
    table = report.render("table")
    named = {r["rule"] for n in d["nodes"] for r in n["reasons"]}
    assert named, "the case has nodes off the NPU"
    for r in named - {"body"}:
        ev = d["evidence"][r]  # the evidence behind every rule a reason names, under its own key
        assert ev["sentence"] and all(not jargon(s, keys) for s in ev["sources"]), r
    for n in d["nodes"]:
        for r in n["reasons"]:
            assert "source" not in r  # a source key is never printed: the evidence names it by its description
    assert "npufit explain " in table


def test_the_hailo_yolo_head_reads_in_one_sentence_per_row(models):
    """The YOLO Reshape row was ~30 lines of evidence; now the sentence, the measured detail and the rule id."""
    import npufit

    report = npufit.check(models["yolo"], "hailo8")
    reshape = next(n for n in report.failing if n.op_type == "Reshape")
    (reason,) = [r for r in reshape.reasons if r.rule == "hailo8.shuffle.rank3"]
    assert len(reason.text) <= MAX_SENTENCE and "Evidence conflicts" not in reason.text
    evidence = report.evidence["hailo8.shuffle.rank3"]
    assert "Hailo Model Zoo" in evidence["evidence"] and evidence["sources"]
    notes = report.target["notes"]
    assert all("listed below" not in n and "evidence" not in n for n in notes), notes


def test_explain_prints_the_sentence_limits_hints_and_evidence_of_every_rule_in_plain_words():
    import npufit

    keys = source_keys()
    for name in ("hailo8", "ethos-n78", "ethos-u55-256", "rk3588", "rv1106"):
        for rid in rule_index(get_profile(name)):
            e = npufit.explain(rid)
            for fmt in ("table", "markdown"):
                assert not jargon(e.render(fmt), keys), (rid, fmt)
    text = npufit.explain("hailo8.shuffle.rank3").render()
    assert "Reshape, Flatten, Transpose" in text and "shuffle_bad_ranks = 3" in text
    assert "Hailo Model Zoo" in text and "YOLO" in text and "sources:" in text


def test_explain_cli_and_its_errors():
    run = [sys.executable, "-m", "npufit", "explain"]
    r = subprocess.run([*run, "rk3588.op.TopK", "--format", "json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["schema"] == "npufit.explain/1" and d["verdict"] == "cpu" and d["ops"] == ["TopK"]
    assert any("k = 1" in f and "--rules topk1_to_argmax" in f for f in d["fix"])
    r = subprocess.run([*run, "shuffle.rank3"], capture_output=True, text=True)
    assert r.returncode == 2 and "hailo8.shuffle.rank3" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([*run, "hailo8.no.such.rule"], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_every_command_help_is_in_plain_words():
    from npufit.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    keys = source_keys()
    for name, text in [("npufit", parser.format_help())] + [(n, p.format_help()) for n, p in sub.choices.items()]:
        assert not jargon(text, keys), (name, jargon(text, keys))
