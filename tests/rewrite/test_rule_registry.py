from pathlib import Path

from npufit.rewrite import RULE_NAMES, RULES, rules_for_target
from npufit.rewrite.docs import rules_markdown
from npufit.targets import available_targets, get_profile

FIXED = ("conv1d_to_conv2d", "mean_to_global_pool", "reduce_keepdims", "topk1_to_argmax", "linear_to_conv1x1",
         "mod_decompose", "fold_constants", "remove_identity", "fold_batchnorm", "opset_convert", "gelu_tanh",
         "merge_reshapes")


def test_rule_names_are_the_published_ones():
    assert set(RULE_NAMES) == set(FIXED)
    assert [n for n in RULE_NAMES if not RULES[n].exact] == ["gelu_tanh"]
    for t in available_targets():
        assert set(get_profile(t).rewrite_rules) <= set(RULE_NAMES), t


def test_every_target_gets_a_rule_set_and_profiles_name_real_rules():
    from npufit.rewrite.registry import profile_fix_rules

    for t in available_targets():
        prof = get_profile(t)
        assert rules_for_target(prof)
        named = {f for s in list(prof.ops.values()) + list(prof.rules()) + list(prof.composites) for f in s.fix_rules}
        assert named <= set(RULE_NAMES), f"{t} names unknown fix rules: {named - set(RULE_NAMES)}"
        assert set(profile_fix_rules(prof)) <= set(rules_for_target(prof))


def test_rules_doc_is_current():
    doc = Path(__file__).resolve().parents[2] / "docs" / "rewrite-rules.md"
    assert doc.read_text() == rules_markdown(), "run: python -m npufit.rewrite.docs > docs/rewrite-rules.md"
