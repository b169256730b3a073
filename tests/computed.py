"""What the client receives: every result of ``dask.base.compute`` while a block runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def computed(monkeypatch: Any) -> Iterator[list[Any]]:
    """A list that collects what each ``dask.base.compute`` call returns inside the block."""
    import dask.base

    got: list[Any] = []
    real = dask.base.compute

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        got.extend(out)
        return out

    monkeypatch.setattr(dask.base, "compute", spy)
    try:
        yield got
    finally:
        monkeypatch.undo()
