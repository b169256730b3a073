"""The compiled core of neardup (Rust). Users call the public API in ``neardup``; these are its parts."""

from typing import final

import numpy as np
import numpy.typing as npt

__all__ = [
    "__version__",
    "Hasher",
    "IndexFormatError",
    "NeardupError",
    "fnv1a_64",
    "fnv1a_64_many",
    "hamming_one_to_many",
    "hamming_pairwise",
    "tallies_float",
    "tallies_int",
]

__version__: str

class NeardupError(Exception):
    """Base class of neardup's own errors."""

class IndexFormatError(NeardupError):
    """A file that is not a valid neardup index: truncated, corrupted, foreign or of a newer version."""

def fnv1a_64(data: str | bytes | bytearray | memoryview) -> int:
    """FNV-1a 64 of the bytes (a str as UTF-8)."""

def fnv1a_64_many(items: list[str | bytes]) -> npt.NDArray[np.uint64]:
    """FNV-1a 64 of each item, as a uint64 array."""

def tallies_int(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.int64] | None = None) -> list[int]:
    """The 64 tallies Σ ±w (w = 1 without weights), exact."""

def tallies_float(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.float64]) -> list[float]:
    """The 64 tallies Σ ±w in float64, summed in the order given; weights must be finite."""

def hamming_one_to_many(query: int, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Distances from one fingerprint to each of many."""

def hamming_pairwise(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Element-wise distances of two equally long arrays."""

@final
class Hasher:
    """Features, weights and fingerprints of normalized text (the compiled half of Simhasher)."""

    def __new__(
        cls,
        *,
        tokens: str,
        ngram: int,
        weighting: str,
        stopwords: list[str] | None,
        field_weights: list[float],
        idf: tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint64]] | None = None,
    ) -> Hasher: ...
    def features(self, text: str) -> list[str]:
        """The features of one normalized text, exactly as hashed."""
    def weighted_features(self, text: str, field: int) -> list[tuple[str, float]]:
        """The features of one field of a document with the weight each adds, in summation order."""
    def fingerprint_many(self, fields: list[list[str]], threads: int | None = None) -> npt.NDArray[np.uint64]:
        """Fingerprints of documents given field by field: ``fields[f][d]``."""
    def document_frequencies(
        self, fields: list[list[str]], threads: int | None = None
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        """Document frequencies of feature hashes: (sorted keys, counts)."""
