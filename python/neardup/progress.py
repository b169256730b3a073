"""What a long call says as it goes: the ``"neardup"`` logger (a record at INFO per call of
:func:`neardup.dedup`, :func:`neardup.find_all`, :func:`neardup.cluster` and :func:`neardup.tune`,
its stages at DEBUG; silent unless the application configures logging) and, on request
(``progress=True``), tqdm's progress bar."""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["log", "progress_bar"]

#: The logger of every call; its INFO records carry their figures as attributes too.
log = logging.getLogger("neardup")


def progress_bar(total: int | None, desc: str, unit: str = "doc") -> Any:
    """tqdm's bar of documents (or other ``unit``s) (``tqdm.auto``: a widget in a notebook, text on stderr elsewhere),
    or None when tqdm is not installed: progress is a nicety, never a dependency."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit=unit, desc=desc)
