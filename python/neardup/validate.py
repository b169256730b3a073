"""The argument checks of the API, the command and Dask, in one place; the limits are the core's.

Each check raises the TypeError or ValueError a caller sees, naming the argument, before the
core is called (the core checks again and would say the same).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from . import _core

__all__ = [
    "DEFAULT_EXPECTED_SIZE",
    "MAX_K",
    "MAX_THREADS",
    "check_k",
    "check_threads",
    "check_unicode",
    "integer",
    "integers",
    "lone_surrogate",
]

#: The largest Hamming distance a plan, an index or a dedup searches.
MAX_K: int = _core.MAX_K

#: The most worker threads a call takes.
MAX_THREADS: int = _core.MAX_THREADS

#: The corpus size :func:`neardup.plan` and :class:`neardup.SimhashIndex` assume when none is given.
DEFAULT_EXPECTED_SIZE: int = _core.DEFAULT_EXPECTED_SIZE


def integer(value: Any, name: str, *, minimum: int | None = None) -> int:
    """``value`` as an int: a Python or numpy integer (not a bool), at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def integers(values: Iterable[Any], name: str, low: int, high: int, bounds: str) -> list[int]:
    """The values as ints, each a Python or numpy integer in low..=high (``bounds`` says so)."""
    items = list(values)
    for i, v in enumerate(items):
        if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)):
            raise TypeError(f"{name}[{i}] must be an int, got {type(v).__name__}")
        if not low <= int(v) <= high:
            raise ValueError(f"{name}[{i}] {bounds}, got {int(v)}")
    return [int(v) for v in items]


def check_k(k: Any, name: str = "k") -> int:
    """A Hamming distance in 0..=MAX_K."""
    k = integer(k, name)
    if not 0 <= k <= MAX_K:
        raise ValueError(f"{name} must be in 0..={MAX_K}, got {k}")
    return k


def check_threads(value: Any) -> int | None:
    """A number of worker threads in 1..=MAX_THREADS, or None for every core."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"threads must be an int or None, got {type(value).__name__}")
    value = int(value)
    if not 1 <= value <= MAX_THREADS:
        raise ValueError(f"threads must be in 1..={MAX_THREADS}, got {value}")
    return value


def lone_surrogate(text: str) -> str | None:
    """None for text that UTF-8 can encode, else what is wrong with it: a lone surrogate (from a
    JSON escape or a bad decode) cannot cross into the core."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return (
            f"holds a lone surrogate (U+{ord(text[err.start]):04X}) at position {err.start}: "
            "it is not valid Unicode text"
        )
    return None


def check_unicode(text: str, name: str) -> None:
    """A ValueError naming ``name`` if ``text`` holds a lone surrogate."""
    wrong = lone_surrogate(text)
    if wrong is not None:
        raise ValueError(f"{name} {wrong}")
