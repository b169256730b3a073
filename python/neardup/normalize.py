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


def normalize(text: str, unicode_form: UnicodeForm | None = "NFKC", casefold: bool = True) -> str:
    """Normalizes one text: Unicode normalization, then case folding.

    >>> normalize("Ｆｕｌｌ ＷＩＤＴＨ Straße")
    'full width strasse'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return normalizer(unicode_form, casefold)(text)
