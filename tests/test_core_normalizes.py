"""The texts the core normalizes itself (``_core.to_normalize`` lets them past Python's
normalization): for every Unicode setting, every code point it takes alone, every pair of the
characters it takes, and every such character before a combining mark or a composing starter
come out as ``unicodedata.normalize`` and ``str.casefold`` make them, compared by the content key
of the digest (the XXH3-128 of the text hashed) and by fingerprint."""

from __future__ import annotations

import sys
import unicodedata

import numpy as np
import pytest

import neardup
from neardup import _core
from neardup.hasher import digest_many
from neardup.normalize import UNICODE_FORMS, normalizer

SETTINGS = [(form, fold) for form in (*UNICODE_FORMS, None) for fold in (True, False)]
POINTS = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
IDEOGRAPHS = range(0x3400, 0x9FFF + 1)


def taken(texts: list[str], form: str | None, fold: bool) -> list[str]:
    """The texts the core takes as they are."""
    rest = set(_core.to_normalize(texts, form, fold))
    return [t for i, t in enumerate(texts) if i not in rest]


def assert_normalized_alike(texts: list[str], form: str | None, fold: bool) -> None:
    """The digests of ``texts`` (taken by the core) are those of their whole normalization."""
    hasher = neardup.Simhasher(unicode_form=form, casefold=fold)
    raw = hasher.replace(unicode_form=None, casefold=False)
    whole = normalizer(form, fold)
    got = digest_many(hasher, texts, sketch=(1, 8))
    want = digest_many(raw, [whole(t) for t in texts], sketch=(1, 8))
    same = (got.keys == want.keys) & (got.fingerprints == want.fingerprints)
    if not same.all():
        bad = [texts[i] for i in np.flatnonzero(~same)[:5]]
        pytest.fail(f"{form} casefold={fold}: {[[hex(ord(c)) for c in t] for t in bad]}")


@pytest.mark.parametrize("form, fold", SETTINGS)
def test_every_code_point_the_core_takes_is_normalized_as_python_does(form, fold):
    alone = taken(POINTS, form, fold)
    assert len(alone) > 90_000  # the ideographs of the supplementary planes among them
    assert_normalized_alike(alone, form, fold)
    # ASCII and the unified ideographs of the BMP are taken under every setting.
    codes = {ord(c) for c in alone}
    assert set(range(0x80)) <= codes and set(IDEOGRAPHS) - {0x4DC0 + i for i in range(64)} <= codes
    compatibility = form in ("NFKC", "NFKD")
    # Full-width forms and the ideographic space: taken, mapped to ASCII by NFKC and NFKD.
    assert 0xFF0C in codes and 0x3000 in codes
    assert (0xFF21 in codes) == (compatibility or not fold)
    # Hangul syllables decompose under NFD and NFKD: Python normalizes them.
    assert (0xAC00 in codes) == (form not in ("NFD", "NFKD"))


def neighbours(form: str | None, fold: bool) -> list[str]:
    """ASCII, the characters of the BMP outside the ideographs and Hangul syllables that the
    core takes under NFC without case folding (it takes no others under any normalization) and
    under this setting, and a few ideographs and Hangul syllables."""
    sample = [chr(c) for c in (*range(0x4E00, 0x4E10), *range(0xAC00, 0xAC08), 0x20000, 0x2A700)]
    ascii_ = [chr(c) for c in range(0x80)]
    rest = [c for c in POINTS[0x80:0x10000] if not 0x3400 <= ord(c) <= 0xD7A3]
    return ascii_ + taken(taken(rest, "NFC", False), form, fold) + taken(sample, form, fold)


@pytest.mark.parametrize("form, fold", SETTINGS)
def test_every_pair_of_characters_the_core_takes_is_normalized_as_python_does(form, fold):
    chars = neighbours(form, fold)
    # One text holding every pair side by side; normalization acts within runs of characters.
    text = "".join(a + b for a in chars for b in chars)
    assert taken([text], form, fold) == [text]
    assert_normalized_alike([text, *(a + b for a in chars[:40] for b in chars)], form, fold)


def composing() -> list[str]:
    """Combining marks, and the starters that compose with a character before them."""
    marks = [c for c in POINTS if unicodedata.combining(c)]
    seconds = set()
    for c in POINTS:
        parts = unicodedata.decomposition(c).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(chr(int(parts[1], 16)))
    jamo = [chr(c) for c in (*range(0x1161, 0x1176), *range(0x11A8, 0x11C3))]
    return sorted(set(marks) | seconds | set(jamo))


@pytest.mark.parametrize("form, fold", SETTINGS)
def test_a_character_before_a_mark_goes_to_python_unless_nothing_changes(form, fold):
    marks = composing()
    assert len(marks) > 900 and "\u0301" in marks and "\u3099" in marks and "\u1161" in marks
    whole = normalizer(form, fold)
    texts = [a + m for a in neighbours(form, fold) for m in marks]
    passed = taken(texts, form, fold)
    if form is not None or fold:
        assert not passed
    for text in passed:  # with no normalization at all, nothing changes
        assert whole(text) == text
    # Each one as Python normalizes it.
    assert_normalized_alike(texts[::97], form, fold)


CJK = [
    "用户名：（必填）请输入您的密码，然后按“确定”。",
    "ｖｉｍ　チュートリアル：カーソルを移動するには、ｈｊｋｌキーを押します。",
    "한국어 사용자를 위한 안내서입니다. 빔은 매우 강력한 편집기입니다!",
    "Ｆｕｌｌ　ＷＩＤＴＨ，ｍｉｘｅｄ　漢字 and ASCII Text ＡＢＣ？",
    "がぎぐ ゟ ㋿ ｶﾞ 한 \u1100\u1161 e\u0301 Straße ﬁle ①",
]


@pytest.mark.parametrize("form, fold", SETTINGS)
def test_cjk_texts_fingerprint_and_digest_as_their_whole_normalization(form, fold):
    hasher = neardup.Simhasher(unicode_form=form, casefold=fold)
    texts = CJK * 40
    whole = [normalizer(form, fold)(t) for t in texts]
    raw = hasher.replace(unicode_form=None, casefold=False)
    assert list(hasher.fingerprint_many(texts)) == list(raw.fingerprint_many(whole))
    assert_normalized_alike(texts, form, fold)
    # The first four are taken by the core under NFKC with casefold; the last has characters
    # every composing form changes.
    if (form, fold) == ("NFKC", True):
        assert _core.to_normalize(CJK, form, fold) == [4]
