"""neardup: find near-duplicate documents at scale with 64-bit simhash fingerprints.

The Rust core hashes features with FNV-1a 64 (then MurmurHash3's finalizer) and folds them into
64 signed tallies; batches run on all cores with the GIL released. See the README for a tour.

The names below are imported on first use (PEP 562), each from the module that defines it, and
so is any submodule named as an attribute (``neardup.kernels``): ``import neardup`` costs a few
milliseconds, so that the ``neardup`` command handles SIGINT and SIGTERM from its first moment
(see :mod:`neardup.__main__`) and a Dask worker imports only the modules its tasks use.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._core import __version__ as __version__
    from .against import AgainstResult, DedupIndex
    from .dedup import dedup
    from .dedup_result import DedupResult
    from .encoders import (
        SparseEncoder,
        VectorSimhash,
        group_by_key,
        minhash_key,
        minhash_key_many,
    )
    from .errors import (
        IndexChangedError,
        IndexFormatError,
        InputError,
        MissingExtraError,
        NeardupError,
        TooManyPairsError,
    )
    from .fingerprints import (
        feature_hash,
        fmix64,
        fnv1a_64,
        hamming,
        hamming_many,
        simhash,
        simhash_features,
        simhash_hashes,
        simhash_tallies,
    )
    from .hasher import Simhasher
    from .index import Plan, PlanTable, SimhashIndex, cluster, find_all, plan
    from .normalize import normalize
    from .threshold_table import ThresholdRow, threshold_table
    from .tune import TuneResult, tune
    from .verify import jaccard

#: Each public name and the module it is imported from.
_HOMES = {
    "__version__": "_core",
    "AgainstResult": "against",
    "DedupIndex": "against",
    "dedup": "dedup",
    "DedupResult": "dedup_result",
    "SparseEncoder": "encoders",
    "VectorSimhash": "encoders",
    "group_by_key": "encoders",
    "minhash_key": "encoders",
    "minhash_key_many": "encoders",
    "IndexChangedError": "errors",
    "IndexFormatError": "errors",
    "InputError": "errors",
    "MissingExtraError": "errors",
    "NeardupError": "errors",
    "TooManyPairsError": "errors",
    "feature_hash": "fingerprints",
    "fmix64": "fingerprints",
    "fnv1a_64": "fingerprints",
    "hamming": "fingerprints",
    "hamming_many": "fingerprints",
    "simhash": "fingerprints",
    "simhash_features": "fingerprints",
    "simhash_hashes": "fingerprints",
    "simhash_tallies": "fingerprints",
    "Simhasher": "hasher",
    "Plan": "index",
    "PlanTable": "index",
    "SimhashIndex": "index",
    "cluster": "index",
    "find_all": "index",
    "plan": "index",
    "normalize": "normalize",
    "ThresholdRow": "threshold_table",
    "threshold_table": "threshold_table",
    "TuneResult": "tune",
    "tune": "tune",
    "jaccard": "verify",
}

__all__ = [
    "AgainstResult",
    "DedupIndex",
    "DedupResult",
    "IndexChangedError",
    "IndexFormatError",
    "InputError",
    "MissingExtraError",
    "NeardupError",
    "Plan",
    "PlanTable",
    "SimhashIndex",
    "Simhasher",
    "SparseEncoder",
    "TooManyPairsError",
    "TuneResult",
    "VectorSimhash",
    "cluster",
    "dedup",
    "feature_hash",
    "find_all",
    "fmix64",
    "fnv1a_64",
    "group_by_key",
    "hamming",
    "hamming_many",
    "jaccard",
    "minhash_key",
    "minhash_key_many",
    "normalize",
    "plan",
    "simhash",
    "simhash_features",
    "simhash_hashes",
    "simhash_tallies",
    "tune",
    "threshold_table",
    "ThresholdRow",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        # A submodule named as an attribute (``neardup.kernels``) before it was imported.
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


class _Package(types.ModuleType):
    """The package, whose public names win over its submodules of the same name: importing
    ``neardup.dedup`` (the module) leaves ``neardup.dedup`` the function, as an eager
    ``from .dedup import dedup`` in this file would."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in _HOMES:
            return
        super().__setattr__(name, value)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Pickled by name, as a plain module is (a Dask task whose function names the package).
        return importlib.import_module, (self.__name__,)


sys.modules[__name__].__class__ = _Package
