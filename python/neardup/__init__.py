"""neardup: find near-duplicate documents at scale with 64-bit simhash fingerprints.

The Rust core hashes features with FNV-1a 64 (then MurmurHash3's finalizer) and folds them into
64 signed tallies; batches run on all cores with the GIL released. See the README for a tour.
"""

from ._core import __version__ as __version__
from .against import AgainstResult, DedupIndex
from .dedup import dedup
from .dedup_result import DedupResult
from .encoders import SparseEncoder, VectorSimhash, group_by_key, minhash_key, minhash_key_many
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
