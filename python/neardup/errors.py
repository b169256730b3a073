"""The exceptions neardup raises beyond Python's own, all under :class:`NeardupError`: those of
the core (a bad index file, a mapped index file changed in place, too many pairs), bad input, a
missing optional dependency."""

from __future__ import annotations

from typing import Any

from ._core import IndexChangedError, IndexFormatError, NeardupError, TooManyPairsError

__all__ = [
    "IndexChangedError",
    "IndexFormatError",
    "InputError",
    "MissingExtraError",
    "NeardupError",
    "TooManyPairsError",
]


class InputError(NeardupError):
    """Bad input: ``FILE:LINE: reason`` (``FILE: row N: reason`` for Parquet)."""

    def __init__(self, path: str, reason: str, line: int | None = None, unit: str = "line") -> None:
        super().__init__(path, reason, line, unit)
        self.path, self.reason, self.line, self.unit = path, reason, line, unit

    @property
    def location(self) -> str:
        if self.line is None:
            return self.path
        return (
            f"{self.path}:{self.line}" if self.unit == "line" else f"{self.path}: row {self.line}"
        )

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.path, self.unit: self.line, "message": self.reason}


class MissingExtraError(NeardupError, ImportError):
    """A format needs an optional dependency that is not installed."""
