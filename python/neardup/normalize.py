"""Text normalization: what happens to a text before its features are built.

Normalization is Unicode normalization (NFKC by default: full-width letters, ligatures and
compatibility forms become their plain equivalents) followed by case folding (``str.casefold``,
which also folds ``ß`` to ``ss``). Runs of whitespace and punctuation need no step here: the
feature builder treats every run of separators as one, so ``"a ,  b"`` and ``"a b"`` have the same
features.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable
from typing import Literal

#: A Unicode normalization form, as ``unicodedata.normalize`` names it.
UnicodeForm = Literal["NFKC", "NFC", "NFKD", "NFD"]
UNICODE_FORMS: tuple[UnicodeForm, ...] = ("NFKC", "NFC", "NFKD", "NFD")


def normalizer(
    unicode_form: UnicodeForm | None = "NFKC", casefold: bool = True
) -> Callable[[str], str]:
    """Returns the function that normalizes one ``str`` under these settings.

    Args:
        unicode_form: one of ``"NFKC"``, ``"NFC"``, ``"NFKD"``, ``"NFD"``, or ``None`` for none.
        casefold: fold case with ``str.casefold``.
    """
    if unicode_form is not None and unicode_form not in UNICODE_FORMS:
        raise ValueError(
            f"unicode_form must be one of {UNICODE_FORMS} or None, got {unicode_form!r}"
        )
    if not isinstance(casefold, bool):
        raise TypeError(f"casefold must be a bool, got {type(casefold).__name__}")
    if unicode_form is not None:
        form: UnicodeForm = unicode_form
        if casefold:
            return lambda text: unicodedata.normalize(form, text).casefold()
        return functools.partial(unicodedata.normalize, form)
    if casefold:
        return str.casefold
    # Not ``str``: that would turn bytes or None into their repr instead of refusing them.
    return str.__str__


#: Maps each UTF-8 byte to 1 if it belongs to a non-ASCII character, else 0.
_NON_ASCII_BYTES = bytes.maketrans(bytes(range(256)), bytes(128) + b"\x01" * 128)
#: Non-ASCII runs closer than this many ASCII bytes are normalized as one piece.
_GAP = 64


def outside_ascii(normalize: Callable[[str], str]) -> Callable[[str], str]:
    """The same normalization applied only around a text's non-ASCII characters, leaving its
    long ASCII stretches as they are: equal to ``normalize`` up to the case of ASCII letters,
    which the core's folding path lowers itself on all cores.

    A piece starts at the ASCII character before a non-ASCII run and ends before an ASCII
    character; normalizing it alone is the same as in the whole text, because every Unicode form
    leaves ASCII as it is, reorders only non-starters (never ASCII) and composes a starter (ASCII
    or not) only with characters after it that are not ASCII, and case folding maps character by
    character. On mostly-ASCII documents (code, English with a few accents or symbols) it costs
    a fraction of normalizing the whole text; mostly non-ASCII texts are normalized whole."""

    def pieces(text: str) -> str:
        data = text.encode("utf-8", "surrogatepass")
        if (len(data) - len(text)) * 4 > len(text):
            return normalize(text)
        mask = data.translate(_NON_ASCII_BYTES)
        out: list[str] = []
        done, at = 0, mask.find(1)
        while at != -1:
            start, end = max(at - 1, done), mask.find(0, at)
            while end != -1:  # take in the next run while the ASCII between is short
                after = mask.find(1, end)
                if after == -1 or after - end > _GAP:
                    break
                end = mask.find(0, after)
            if end == -1:
                end = len(data)
            out.append(data[done:start].decode("ascii"))
            out.append(normalize(data[start:end].decode("utf-8", "surrogatepass")))
            done, at = end, mask.find(1, end)
        out.append(data[done:].decode("ascii"))
        return "".join(out)

    return pieces


def normalize(text: str, unicode_form: UnicodeForm | None = "NFKC", casefold: bool = True) -> str:
    """Normalizes one text: Unicode normalization, then case folding.

    >>> normalize("Ｆｕｌｌ ＷＩＤＴＨ Straße")
    'full width strasse'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return normalizer(unicode_form, casefold)(text)
