"""Compression: .gz and .zst streams in and out, told by the file name or sniffed."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import MissingExtraError

_COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}


def _zstd_module() -> tuple[Any, Any]:
    """(zstandard, None), or (None, the standard library's compression.zstd of Python >= 3.14);
    a MissingExtraError naming the extra where neither is there."""
    try:
        import zstandard
    except ImportError:
        try:
            from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14
        except ImportError:
            raise MissingExtraError(
                ".zst files need zstandard: pip install 'neardup[zstd]'"
            ) from None
        return None, zstd
    return zstandard, None


def zstd_reader(raw: BinaryIO) -> BinaryIO:
    zstandard, zstd = _zstd_module()
    if zstandard is None:
        return zstd.ZstdFile(raw, "rb")  # type: ignore[no-any-return]
    return io.BufferedReader(_ZstdFrames(raw, zstandard), 1 << 20)  # type: ignore[arg-type]


class CompressedStreamError(ValueError):
    """A compressed input that is truncated or corrupt."""


class _ZstdFrames(io.RawIOBase):
    """Every frame of a zstd stream, decompressed; a stream that ends inside a frame, or is not
    zstd, raises :class:`CompressedStreamError`. (zstandard's stream reader takes the end of its
    input inside a frame for the end of the data: a truncated file read as complete.)"""

    #: Compressed bytes read at a time, and fed to the decompressor at a time: the latter bounds
    #: the output of one call (a zstd block of up to 128 KiB may take 4 bytes), so a stream that
    #: inflates enormously (a zstd bomb) comes out at most about 128 MiB at a time.
    STEP = 1 << 16
    FEED = 1 << 12

    def __init__(self, raw: BinaryIO, zstandard: Any) -> None:
        self._raw, self._zstd = raw, zstandard
        self._dctx = zstandard.ZstdDecompressor()
        self._frame: Any = None  # the decompressor of the current frame
        self._input = b""
        self._output = memoryview(b"")
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not len(self._output):
            if self._done:
                return 0
            self._step()
        n = min(len(buffer), len(self._output))
        buffer[:n] = self._output[:n]
        self._output = self._output[n:]
        return n

    def _step(self) -> None:
        if not self._input:
            self._input = self._raw.read(self.STEP)
            if not self._input:
                self._done = True
                if self._frame is not None and not self._frame.eof:
                    raise CompressedStreamError(
                        "truncated or corrupt zstd stream: it ends inside a frame"
                    )
                return
        if self._frame is None or self._frame.eof:
            self._frame = self._dctx.decompressobj()
        data, self._input = self._input[: self.FEED], self._input[self.FEED :]
        try:
            out = self._frame.decompress(data)
        except self._zstd.ZstdError as err:
            raise CompressedStreamError(f"truncated or corrupt zstd stream ({err})") from None
        if self._frame.eof:
            self._input = self._frame.unused_data + self._input
        self._output = memoryview(out)


def zstd_writer(raw: BinaryIO) -> BinaryIO:
    zstandard, zstd = _zstd_module()
    if zstandard is None:
        return zstd.ZstdFile(raw, "wb")  # type: ignore[no-any-return]
    return zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False)  # type: ignore[return-value]


def compression_of(path: str) -> str | None:
    """ "gzip" or "zstd" by the name's last suffix, else None."""
    return _COMPRESSIONS.get(Path(path).suffix.lower())


def decompressed(raw: BinaryIO, compression: str | None) -> BinaryIO:
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if compression == "zstd":
        return zstd_reader(raw)
    return raw


def compressed(raw: BinaryIO, compression: str | None) -> BinaryIO:
    if compression == "gzip":
        # Level 1: four times faster than the default 6 for a fifth more bytes; a job's output is
        # usually an intermediate file (use .zst for smaller and faster still).
        # No name and no time in the header: the same output bytes from run to run, and never
        # the temporary file's name (which gunzip -N would restore).
        return gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=1, mtime=0)  # type: ignore[return-value]
    if compression == "zstd":
        return zstd_writer(raw)
    return raw


def sniff(raw: BinaryIO) -> str | None:
    """Compression of a stream by its magic number (stdin has no name to go by)."""
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head == b"\x28\xb5\x2f\xfd":
        return "zstd"
    return None
