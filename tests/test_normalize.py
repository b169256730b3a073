"""Normalizing only a text's non-ASCII runs (what the core's folding path is given) is the whole
text's normalization up to ASCII case, which the core folds: checked against
``unicodedata.normalize`` and ``str.casefold`` of the whole text, on every code point and on
random mixtures of the characters normalization treats specially."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup.normalize import UNICODE_FORMS, normalizer, outside_ascii


def ascii_lower(text: str) -> str:
    """Lowers ASCII capitals only (``bytes.lower`` touches no other byte)."""
    return text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def core_view(text: str, casefold: bool) -> str:
    """What the core fingerprints: with casefold it lowers ASCII capitals itself."""
    return ascii_lower(text) if casefold else text


SETTINGS = [(form, fold) for form in (*UNICODE_FORMS, None) for fold in (True, False)]


class Counting:
    """A normalizer that records the length of each text it is given."""

    def __init__(self, normalize):
        self.normalize, self.lengths = normalize, []

    def __call__(self, text: str) -> str:
        self.lengths.append(len(text))
        return self.normalize(text)


PAD = "q" * 70  # more ASCII between two runs than joins them into one piece


def test_every_code_point_between_ascii_letters_and_before_a_combining_mark():
    whole = normalizer("NFKC", True)
    counting = Counting(whole)
    runs = outside_ascii(counting)
    points = [c for c in range(0x80, sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    for at in range(0, len(points), 512):  # 512 code points a text, each in four places
        batch = [chr(c) for c in points[at : at + 512]]
        # after an ASCII letter, before a combining mark, after one, next to ASCII at the end
        text = "".join(f"{PAD}b{c}Cd {c}\u0301Z E\u0301{c} x{c}" for c in batch)
        counting.lengths.clear()
        if ascii_lower(runs(text)) != whole(text):
            bad = [c for c in batch if ascii_lower(runs(PAD + c + PAD)) != whole(PAD + c + PAD)]
            pytest.fail(f"differs around {[hex(ord(c)) for c in bad] or 'a combination'}")
        # one piece a code point (its runs are a few ASCII characters apart), not the whole text
        assert counting.lengths == [15] * len(batch)


# Characters normalization composes, decomposes, reorders or folds, and ASCII around them.
SPECIAL = (
    "AaEeOoUuZz<=>1 \t\n"  # ASCII bases, including those that compose (< + U+0338)
    "\u0301\u0300\u0308\u0327\u0323\u0338\u0345\u05b0\u0591"  # combining marks of several classes
    "ßẞİıΣσςﬁﬀ①Ｆｕ\u00a0…½ǅǄŉ\u1e9e"  # folds and compatibility forms
    "\u1100\u1161\u11a8가각"  # Hangul jamo and syllables
    "é\u212b\u2126文字\U0001d400"
)


ASCII_STRETCH = st.text(alphabet=st.sampled_from("AbZ <1\n"), max_size=90)
MIXTURE = st.lists(
    st.one_of(st.text(alphabet=st.sampled_from(SPECIAL), max_size=6), ASCII_STRETCH), max_size=12
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=MIXTURE)
@pytest.mark.parametrize("form, fold", SETTINGS)
def test_mixtures_in_every_setting(form, fold, text):
    whole = normalizer(form, fold)
    assert core_view(outside_ascii(whole)(text), fold) == core_view(whole(text), fold)


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.text(max_size=40), MIXTURE))
def test_fingerprints_keys_and_sketches_of_any_text_match_the_whole_normalization(text):
    from neardup.hasher import digest_many

    h = neardup.Simhasher()
    raw = h.replace(unicode_form=None, casefold=False)  # given the whole text normalized
    got = digest_many(h, [text], sketch=(3, 64))
    want = digest_many(raw, [neardup.normalize(text)], sketch=(3, 64))
    assert got.fingerprints[0] == want.fingerprints[0] == h.fingerprint(text)
    assert got.keys[0] == want.keys[0]
    assert [list(g) for g in got.sketches] == [list(w) for w in want.sketches]


def test_a_mostly_ascii_text_normalizes_as_the_whole():
    text = "Résumé of the ＦＵＬＬ-width ﬁle, Straße 5½\u00a0km " * 50
    assert unicodedata.normalize("NFKC", text).casefold() == ascii_lower(
        outside_ascii(normalizer())(text)
    )
