"""What a dedup index file stores beside its documents' arrays, as the core takes it: the
fingerprint settings (JSON, checked when read back) and the documents' ids."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from . import _core
from .hasher import Simhasher

_FORMAT = "neardup-dedup-index"


def _settings_bytes(hasher: Simhasher) -> bytes:
    """The fingerprint settings as JSON; hashers that cannot be written down are refused."""
    settings = hasher._settings()
    if hasher.weighting == "idf":
        raise ValueError(
            "a dedup index stores its fingerprint settings: idf weights are not supported; use tf or binary"
        )
    if settings.get("tokenizer") is not None and not isinstance(settings["tokenizer"], str):
        raise ValueError(
            "a dedup index stores its fingerprint settings: a custom tokenizer function cannot be stored"
        )
    if settings.get("stopwords") is not None:
        settings["stopwords"] = list(settings["stopwords"])
    return json.dumps({"format": _FORMAT, "hasher": settings}, sort_keys=True).encode()


def _hasher_of(meta: bytes) -> Simhasher:
    """The fingerprint settings a dedup index holds. The file's checksum is checked before: this
    checks what it holds (a file written by other means may pass the checksum), so that any
    problem is an IndexFormatError, never another exception."""
    try:
        stored = json.loads(meta.decode())
        if not isinstance(stored, dict) or stored.get("format") != _FORMAT:
            raise ValueError("not the settings of a neardup dedup index")
        settings = stored["hasher"]
        if not isinstance(settings, dict):
            raise ValueError("the settings are not a JSON object")
        if settings.get("stopwords") is not None:
            settings["stopwords"] = tuple(settings["stopwords"])
        hasher = Simhasher.__new__(Simhasher)
        hasher.__setstate__({"settings": settings, "idf": None})
        hasher.fingerprint("a check")  # settings that cannot fingerprint are refused here
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as err:
        raise _core.IndexFormatError(
            f"unreadable fingerprint settings in the dedup index: {type(err).__name__}: {err}"
        ) from None
    return hasher


def _id_values(ids: Any, n: int) -> tuple[bool, Any]:
    """(string ids?, the ids as the core takes them: an int64 array or a list of UTF-8 bytes)."""
    if ids is None:
        return False, np.arange(n, dtype=np.int64)
    values = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    if len(values) != n:
        raise ValueError(f"{n} documents but {len(values)} ids")
    if all(isinstance(v, str) for v in values) and values:
        return True, [v.encode("utf-8", "surrogatepass") for v in values]
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        try:
            return False, np.asarray(values, dtype=np.int64)
        except OverflowError:
            raise ValueError("integer ids must fit in 64 bits") from None
    kinds = sorted({type(v).__name__ for v in values})
    raise TypeError(f"ids must be all integers or all strings, got {', '.join(kinds)}")
