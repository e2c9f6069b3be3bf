"""A reader's files of an index in a bucket, fetched on first read: the byte ranges of the tables
it reads, whole objects the rest, kept in a bounded local cache (least recently used out first).

A citation reads one document's rows: of each table its Parquet footer, then the row groups that
hold the document (``schemas.segments``). Each Parquet file is read here through ``RangedObject``:
the bytes asked for, in blocks of ``BLOCK`` bytes, each fetched once by a ranged GET (the missing
blocks of one read in one request) and kept as a file of the cache. The first read of an object
takes its last ``2 * BLOCK`` bytes (``Range: bytes=-N``): its size and, for a Parquet file, its
footer in one request. The files a search reads whole (vectors, FAISS shards, the hits file) and a
document's text and source are fetched whole on first use, into the same cache.

Objects under a generation's name are written once and never changed, so what the cache holds
stays valid.

The reader's folder (``<local copy>/reader``): ``CURRENT`` and ``generations/<name>/`` as in an
index folder, ``cache/blocks/<key hash>/<block>`` and ``/size``, ``cache/whole/<key>``.

A build's copy reads the same way (``CopyFiles``): what the copy holds from it, the rest from the
bucket into ``<local copy>/cache``, so a build on a machine whose copy is empty reads the columns
and rows it needs of the live segments, not the segments.
"""
from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import hashlib
import io
import os
import threading
from pathlib import Path

import pyarrow as pa

from ingest.corpus import store_failure
from schemas.errors import IndexFormatError
from schemas.layout import IndexFiles
from schemas.limits import MIB, READER_CACHE_MB

BLOCK = 128 << 10  # bytes a block holds: a row group of a document's rows is a block or two
DEFAULT_CACHE_BYTES = READER_CACHE_MB * MIB
CACHE_FOLDER = "cache"  # in the reader's folder, beside its CURRENT and generations/
PREFETCH_CONCURRENCY = 16  # files whose ends are fetched at once (the segments' footers, on a first lookup)


class CacheFolder:
    """Files under ``root`` with their sizes, least recently used first; past ``limit_bytes`` the
    least recently used are removed. Processes sharing a folder share its files (their order is
    each one's own: by modification time when it first looks, then its own use)."""

    def __init__(self, root: Path, limit_bytes: int) -> None:
        self.root = root
        self.limit_bytes = limit_bytes
        self._sizes: collections.OrderedDict[Path, int] | None = None
        self._total = 0
        self._lock = threading.Lock()

    def _scanned(self) -> collections.OrderedDict[Path, int]:
        if self._sizes is None:
            found = []
            for path in self.root.rglob("*") if self.root.is_dir() else ():
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue
                if path.is_file() and not path.name.startswith("."):
                    found.append((st.st_mtime_ns, path, st.st_size))
            self._sizes = collections.OrderedDict((path, size) for _, path, size in sorted(found))
            self._total = sum(self._sizes.values())
            self._make_room()  # a reader with a smaller limit than the one that filled the folder
        return self._sizes

    @property
    def total_bytes(self) -> int:
        with self._lock:
            self._scanned()
            return self._total

    def read(self, path: Path) -> bytes | None:
        """A cached file's bytes, marked as just used; None when it is not (or no longer) cached."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        self.used(path, len(data))
        return data

    def used(self, path: Path, size: int) -> None:
        with self._lock:
            sizes = self._scanned()
            if path in sizes:
                sizes.move_to_end(path)
            else:
                sizes[path] = size
                self._total += size
        try:  # the order another process finds
            os.utime(path)
        except FileNotFoundError:
            pass

    def write(self, path: Path, data: bytes) -> None:
        """Keep ``data`` as ``path`` (written whole or not at all), then make room."""
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}")
        partial.write_bytes(data)
        os.replace(partial, path)
        self.added(path, len(data))

    def added(self, path: Path, size: int) -> None:
        """``path`` (``size`` bytes) is in the folder now; the least recently used files go while
        the folder holds more than its limit (a file still mapped stays readable to its reader)."""
        with self._lock:
            sizes = self._scanned()
            self._total += size - sizes.pop(path, 0)
            sizes[path] = size
            self._make_room()

    def _make_room(self) -> None:
        """Remove the least recently used files while the folder holds more than its limit, the most
        recent one kept whatever its size (the caller holds the lock)."""
        sizes = self._sizes
        while self._total > self.limit_bytes and len(sizes) > 1:
            oldest, oldest_size = sizes.popitem(last=False)
            oldest.unlink(missing_ok=True)
            self._total -= oldest_size


class BucketFiles(IndexFiles):
    """The files of an index in a bucket (``bucket``: ``ingest.store.bucket.IndexBucket``), for a
    reader whose copy of it holds only its generations' manifests and deletions."""

    lazy = True

    def __init__(self, bucket, limit_bytes: int = DEFAULT_CACHE_BYTES, root: Path | None = None) -> None:
        self.bucket = bucket
        self.root = bucket.paths.root if root is None else root
        self.cache = CacheFolder(self.root / CACHE_FOLDER, limit_bytes)
        self._absent: set[str] = set()

    def key(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def map(self, path: Path) -> pa.NativeFile:
        if self._in_copy(path):
            return pa.memory_map(str(path))
        if path.suffix == ".parquet":
            return pa.PythonFile(RangedObject(self, self.key(path)), mode="r")
        local = self.local(path)
        if local == path:
            raise FileNotFoundError(path)
        return pa.memory_map(str(local))

    def local(self, path: Path) -> Path:
        if self._in_copy(path):
            return path
        key = self.key(path)
        kept = self.cache.root / "whole" / key
        try:
            self.cache.used(kept, kept.stat().st_size)
            return kept
        except FileNotFoundError:
            pass
        if key in self._absent:
            return path
        try:
            self.bucket.download(key, kept)
        except FileNotFoundError:
            self._absent.add(key)
            return path
        self.cache.added(kept, kept.stat().st_size)
        return kept

    def exists(self, path: Path) -> bool:
        return self.local(path) != path

    def _in_copy(self, path: Path) -> bool:
        """Whether the reader's folder holds the file: its live generation's manifest and deletions."""
        return path.parts[len(self.root.parts)] == "generations" and path.is_file()

    def prefetch(self, paths: list[Path]) -> None:
        keys = [self.key(path) for path in paths if not self._in_copy(path)]
        with concurrent.futures.ThreadPoolExecutor(min(len(keys), PREFETCH_CONCURRENCY) or 1) as pool:
            for future in [pool.submit(self.size_of, key) for key in keys]:
                with contextlib.suppress(Exception):  # its read says what went wrong, if it is read
                    future.result()

    # -- byte ranges

    def _block_folder(self, key: str) -> Path:
        return self.cache.root / "blocks" / hashlib.sha256(key.encode()).hexdigest()[:32]

    def size_of(self, key: str) -> int:
        """The object's size: kept from its first read, which fetched its last blocks with it."""
        folder = self._block_folder(key)
        known = self.cache.read(folder / "size")
        if known is not None:
            return int(known)
        tail, size = self.bucket.get_tail(key, 2 * BLOCK)
        start = size - len(tail)
        for block in range(-(-start // BLOCK), (size - 1) // BLOCK + 1):  # the blocks the tail holds whole
            at = block * BLOCK - start
            self.cache.write(folder / str(block), tail[at:at + BLOCK])
        self.cache.write(folder / "size", str(size).encode())
        return size

    def read_range(self, key: str, start: int, end: int, size: int) -> bytes:
        """Bytes ``start`` to ``end`` of the object of ``size`` bytes: its cached blocks, the missing ones
        fetched (each run of consecutive missing blocks in one request)."""
        end = min(end, size)
        if end <= start:
            return b""
        folder = self._block_folder(key)
        first, last = start // BLOCK, (end - 1) // BLOCK
        blocks: dict[int, bytes] = {}
        missing = []
        for block in range(first, last + 1):
            data = self.cache.read(folder / str(block))
            if data is None:
                missing.append(block)
            else:
                blocks[block] = data
        for run_first, run_last in _runs(missing):
            data = self.bucket.get_range(key, run_first * BLOCK, min(size, (run_last + 1) * BLOCK))
            for block in range(run_first, run_last + 1):
                piece = data[(block - run_first) * BLOCK:(block - run_first + 1) * BLOCK]
                self.cache.write(folder / str(block), piece)
                blocks[block] = piece
        joined = b"".join(blocks[block] for block in range(first, last + 1))
        return joined[start - first * BLOCK:end - first * BLOCK]


class CopyFiles(BucketFiles):
    """The files of a build's copy of an index in a bucket (``bucket``: ``ingest.store.bucket.IndexBucket``).

    The copy holds its generations' manifests and deletions and what this build wrote; any other
    file is read from the bucket as a reader reads it, into the copy's cache: the build reads
    the columns and rows it needs of the segments it carries over, never the segments whole.
    ``listed``: the objects the bucket holds, by key (the listing the build started from, and what
    its segment writers uploaded since): a file is there if the copy or the bucket has it."""

    def __init__(self, bucket, listed: dict[str, int], root: Path, limit_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        super().__init__(bucket, limit_bytes, root)
        self.listed = listed

    def _in_copy(self, path: Path) -> bool:
        return path.is_file()

    def exists(self, path: Path) -> bool:
        return path.is_file() or self.key(path) in self.listed


class RangedObject(io.RawIOBase):
    """One object of the bucket as a file to read at random (``pa.PythonFile`` over it): a read
    fetches only the blocks it covers that the cache lacks."""

    def __init__(self, files: BucketFiles, key: str) -> None:
        super().__init__()
        self.files = files
        self.key = key
        self._position = 0
        self._size: int | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def size(self) -> int:
        if self._size is None:
            self._size = self._failing_as_format(self.files.size_of, self.key)
        return self._size

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: None}[whence]
        self._position = (self.size() if base is None else base) + offset
        return self._position

    def tell(self) -> int:
        return self._position

    def read(self, size: int = -1) -> bytes:
        end = self.size() if size is None or size < 0 else self._position + size
        data = self._failing_as_format(self.files.read_range, self.key, self._position, end, self.size())
        self._position += len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def _failing_as_format(self, call, *args):
        try:
            return call(*args)
        except FileNotFoundError:
            raise IndexFormatError(f"{self.files.bucket.url}/{self.key}: missing") from None
        except IndexFormatError:
            raise
        except Exception as exc:  # noqa: BLE001 — each driver raises its own types
            raise IndexFormatError(f"{self.files.bucket.url}/{self.key}: {store_failure(exc, 'reading')}") from None


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive numbers, as (first, last).

    >>> _runs([1, 2, 3, 7, 9, 10])
    [(1, 3), (7, 7), (9, 10)]
    """
    runs: list[tuple[int, int]] = []
    for number in numbers:
        if runs and runs[-1][1] == number - 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs
