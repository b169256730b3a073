"""The shared argument checks: the limits are the core's, and every entry point says the same."""

import numpy as np
import pytest

import neardup
from neardup import _core, validate


def test_the_limits_come_from_the_core():
    assert validate.MAX_K == _core.MAX_K == 16
    assert validate.MAX_THREADS == _core.MAX_THREADS
    assert (
        validate.DEFAULT_EXPECTED_SIZE
        == _core.DEFAULT_EXPECTED_SIZE
        == neardup.plan().__reduce__()[1][1]
    )


def test_k_and_threads_are_checked_alike_everywhere():
    for call in (
        lambda k: neardup.SimhashIndex(k=k),
        lambda k: neardup.plan(k=k),
        lambda k: neardup.find_all(np.zeros(2, np.uint64), k=k),
        lambda k: neardup.dedup(["a"], k=k),
    ):
        with pytest.raises(ValueError, match=f"k must be in 0..={validate.MAX_K}, got 17"):
            call(validate.MAX_K + 1)
    for call in (
        lambda t: neardup.Simhasher().fingerprint_many(["a"], threads=t),
        lambda t: neardup.find_all(np.zeros(2, np.uint64), k=3, threads=t),
        lambda t: neardup.dedup(["a"], threads=t),
    ):
        with pytest.raises(ValueError, match=f"threads must be in 1..={validate.MAX_THREADS}"):
            call(0)
        with pytest.raises(TypeError, match="threads must be an int or None"):
            call(1.5)


def test_a_lone_surrogate_is_named_with_its_code_point_and_position():
    assert validate.lone_surrogate("plain") is None
    assert validate.lone_surrogate("é\ud800") == (
        "holds a lone surrogate (U+D800) at position 1: it is not valid Unicode text"
    )
    with pytest.raises(ValueError, match=r"docs\[1\] holds a lone surrogate \(U\+DC00\)"):
        neardup.Simhasher().fingerprint_many(["a", "b\udc00"])
