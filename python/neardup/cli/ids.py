"""Ids of the index commands, checked: each kept exactly as given, or refused at its record."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..io import Input, InputError

__all__ = ["bad_id", "integer_id"]

_INT64 = (-(2**63), 2**63 - 1)


def integer_id(value: Any) -> int | None:
    """An id as the index holds it (a 64-bit integer), exactly as given, or None: an integer, a
    float with an integral value, or the text of one (CSV), never a boolean, 1.9 or " 42 "."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        value = int(value) if value.is_integer() else None
    elif isinstance(value, str):
        digits = value[1:] if value.startswith("-") else value
        value = int(value) if digits.isascii() and digits.isdigit() else None
    elif not isinstance(value, (int, np.integer)):
        return None
    return int(value) if value is not None and _INT64[0] <= value <= _INT64[1] else None


def bad_id(inp: Input, number: int, reason: str) -> InputError:
    """An InputError at the record of document ``number`` (found by reading the input again)."""
    errors = list(inp.errors)
    seen = -1
    try:
        for position, _doc, _id, _raw in inp.records(True):
            if not inp.skipped(position):
                seen += 1
                if seen == number:
                    return inp.error_at(position, reason)
    except InputError:
        pass
    finally:
        inp.errors[:] = errors
    return InputError(inp.name, f"document {number}: {reason}")
