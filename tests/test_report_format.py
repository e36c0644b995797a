"""The one number formatter and the text cutters every renderer uses (report/style.py)."""

from __future__ import annotations

import pytest

from npufit.report.html_reasons import more
from npufit.report.style import clip_path, clip_words, human_count, num


@pytest.mark.parametrize(
    "value, text",
    [
        (23500.4, "23,500"),
        (6411.2, "6,411"),
        (6411, "6,411"),
        (59.0, "59.0"),
        (42.66, "42.7"),
        (3.14159, "3.14"),
        (0.0123, "0.0123"),
        (0.5, "0.500"),
        (1.2e-7, "1.2e-07"),
        (0.0, "0"),
        (float("nan"), "-"),
        (None, "-"),
        (True, "-"),
    ],
)
def test_num(value, text):
    assert num(value) == text


def test_units_and_counts():
    assert num(0.4128, "ms") == "0.413 ms" and num(23500.4, "inferences/s") == "23,500 inferences/s"
    assert human_count(3179352384) == "3.18 G" and human_count(4610) == "4.61 k" and human_count(980) == "980"


def test_text_is_cut_between_words():
    text = "Ops that move or resize the batch axis are rejected by the Hailo parser"
    for limit in range(12, len(text)):
        short = clip_words(text, limit)
        assert len(short) <= limit and short.endswith("…")
        head = short[:-1]
        assert text.startswith(head) and text[len(head)] == " "  # the next character starts a new word
    assert clip_words(text, 200) == text
    assert clip_path("/m/model/decoder/layers.0/cross_attn/Reshape_3", 24) == "…/cross_attn/Reshape_3"
    html = more(text * 5, 100)
    assert html.startswith('<details class="more"><summary>') and text * 5 in html
