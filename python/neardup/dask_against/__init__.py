"""The former home of :mod:`neardup.dask.against`: its public names, for code that imports them
from here (``from neardup.dask_against import dedup_against``)."""

from __future__ import annotations

from neardup.dask.against import dedup_against

__all__ = ["dedup_against"]
