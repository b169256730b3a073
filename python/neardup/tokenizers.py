"""Tokenizers written in Python: jieba's Chinese word segmentation, or any function from a str to
a list of str."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

#: A Python tokenizer: a function from a str to its tokens.
Tokenizer = Callable[[str], Iterable[str]]


def _tokenizer(tokenizer: Any, tokens: str) -> Tokenizer | None:
    """The tokenizing function of a ``tokenizer=`` setting."""
    if tokenizer is None:
        return None
    if tokens != "word":
        raise ValueError(
            f'tokenizer= cuts text into word tokens: it needs tokens="word", not {tokens!r}'
        )
    if isinstance(tokenizer, str):
        if tokenizer != "jieba":
            raise ValueError(
                f'tokenizer must be "jieba" or a function from str to a list of str, got {tokenizer!r}'
            )
        return _jieba()
    if not callable(tokenizer):
        raise TypeError(
            f'tokenizer must be "jieba" or a function from str to a list of str, got {type(tokenizer).__name__}'
        )
    return tokenizer


def _jieba() -> Tokenizer:
    """jieba's word segmentation (accurate mode), imported on first use."""
    try:
        with warnings.catch_warnings():
            # jieba 0.42 imports pkg_resources, which newer setuptools deprecate on import.
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", SyntaxWarning)  # its regexes' escapes, on newer Pythons
            import jieba  # type: ignore[import-untyped]
    except ImportError:
        raise ImportError(
            "tokenizer=\"jieba\" needs the jieba package: pip install 'neardup[zh]'"
        ) from None
    lcut: Tokenizer = jieba.lcut
    return lcut
