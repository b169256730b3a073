"""Engine-agnostic batch functions: a distributed engine (Dask here; Ray Data or Spark's
``mapInArrow`` later) runs them over numpy, pandas or Arrow batches.

The dedup steps themselves are those of :mod:`neardup.pipeline` (digests per batch on the
workers; candidates and stars over the gathered fingerprints and keys).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .hasher import Simhasher

__all__ = ["check_texts", "fingerprint_batch"]


def fingerprint_batch(
    texts: Any, hasher: Simhasher | None = None, *, where: str = "texts"
) -> np.ndarray:
    """Fingerprints of a batch of texts (a list, numpy array, pandas Series or Arrow array).

    A missing (None/NaN) or non-string text is a TypeError naming ``where`` and the row, so a
    worker's error tells which batch and which document went wrong.
    """
    hasher = Simhasher() if hasher is None else hasher
    module = type(texts).__module__ or ""
    if module.startswith("pandas"):
        values = texts.tolist()
    elif module.startswith("pyarrow"):
        values = texts.to_pylist()
    else:
        values = list(texts)
    if hasher.fields is None:
        check_texts(values, where)
    return hasher.fingerprint_many(values, threads=1)


def check_texts(values: list[Any], where: str) -> None:
    """A TypeError naming ``where`` and the row of the first text that is not a str."""
    for row, text in enumerate(values):
        if not isinstance(text, str):
            missing = (
                text is None
                or type(text).__name__ in ("NAType", "NaTType")
                or (isinstance(text, float) and text != text)
            )
            found = "missing (None/NaN)" if missing else f"{type(text).__name__} {text!r:.40}"
            raise TypeError(f"{where} row {row}: the text is {found}; expected str")
