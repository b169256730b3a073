"""benches/candidates.py: the weighting rules computed outside the core (issue 13's study) reproduce
the core where they coincide with it, and weigh features as documented."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))
import candidates  # noqa: E402
import neardup  # noqa: E402

TEXTS = [
    "The cat sat on the mat and the cat slept",
    "the the the of of and 0 1 2 3 x y z",
    "",
    "中文字 and some English words that are longer",
    "A manual page: the options are listed below, with the defaults they take.",
] * 3


def test_tf_rule_reproduces_the_core() -> None:
    table = candidates.FeatureTable.build(TEXTS, "word", 1)
    mine = table.fingerprints(table.tf.astype(np.float64))
    assert np.array_equal(mine, neardup.Simhasher().fingerprint_many(TEXTS))


def test_rule_weights_follow_the_documented_formulas() -> None:
    table = candidates.FeatureTable.build(TEXTS[:2], "word", 1)
    # Features are numbered in order of first occurrence over the corpus.
    hasher = neardup.Simhasher()
    names = list(dict.fromkeys(hasher.features(TEXTS[0]) + hasher.features(TEXTS[1])))
    entry = {(int(d), names[int(f)]): i for i, (d, f) in enumerate(zip(table.doc, table.feature))}
    the, cat = entry[(0, "the")], entry[(0, "cat")]
    assert table.tf[the] == 3 and table.tf[cat] == 2
    w = table.weights("logtf.len8.stop25")
    assert w[the] == pytest.approx((1 + math.log(3)) * 3 * 0.25)
    assert w[cat] == pytest.approx((1 + math.log(2)) * 3)
    assert table.weights("sqrttf")[the] == pytest.approx(math.sqrt(3))
    assert table.weights("bin.loglen")[cat] == pytest.approx(math.log(4))
    assert table.weights("tf.stop0")[the] == 0
    # above N: the factors before it only for documents of more than N tokens (the first has 10).
    assert table.weights("tf.stop0.above10")[the] == 3
    assert table.weights("tf.stop0.above9")[the] == 0


@pytest.mark.parametrize("name", ["word1-tf.", "word1-tf", "word1-logtf.stop", "word1-x.len8"])
def test_setting_names(name: str) -> None:
    if name == "word1-tf":
        assert candidates.Setting.parse(name).weighting == "tf"
    else:
        with pytest.raises(SystemExit):
            candidates.Setting.parse(name)
