"""The corpus folder as the build sees it: which files are documents, under which id, read safely.

(A corpus in an object store is ``ingest.corpus.store``; ``discover`` and ``read_source_bytes``
take either.)

A corpus is a tree of regular files, often partly made of symbolic links.
The policy, the same in discovery and when a worker opens a file:

- A link whose target resolves inside the corpus root is followed; the document
  keeps the link's own path as its id. A link that leaves the root is skipped
  (``--follow-symlinks`` follows it). Broken links and link loops are skipped.
- A link to a folder is followed when that folder is not already part of the
  corpus: every real folder is walked once, so a link to a folder that is
  indexed under its own path, or to a folder above the link (a loop), is
  skipped. Trees cannot blow up through links.
- FIFOs, sockets and devices are skipped. Nothing is ever opened before it is
  known to be a regular file: a worker opens an ``O_PATH`` handle (which opens
  nothing), checks that handle, and only then reads through it, so a file
  swapped for a FIFO or a link after discovery is refused, not read.
- Names starting with '.' are not part of the corpus.
- The user's metadata files (``NAME.meta.json`` beside a file, ``metadata.jsonl`` at the
  root; ``ingest.user_metadata``) are not documents: discovery lists them apart.

``doc_id`` is the POSIX path relative to the root. A name that is not valid
UTF-8 (legal on Linux) gets a safe, reversible id: each byte that is not UTF-8
is written ``%XX``, and so is every ``%`` of that name (``%25``), so
``urllib.parse.unquote_to_bytes(doc_id)`` gives the name's bytes back. Valid
names are never changed.
"""

from __future__ import annotations

import collections
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ingest.formats import media_type_of
from schemas.errors import CorpusError
from schemas.records import SkipReason

SIDECAR_SUFFIX = ".meta.json"  # NAME.meta.json beside the file NAME: that file's own metadata
CORPUS_METADATA = "metadata.jsonl"  # at the corpus root: {"doc_id": ..., "fields": {...}} a line


def is_metadata_file(relative: str) -> bool:
    """Whether a corpus path is one of the user's metadata files (never a document).

    >>> is_metadata_file("contracts/a.pdf.meta.json"), is_metadata_file("metadata.jsonl"), is_metadata_file("x/metadata.jsonl")
    (True, True, False)
    """
    return relative == CORPUS_METADATA or relative.endswith(SIDECAR_SUFFIX)


@dataclass(frozen=True, slots=True)
class ListedObject:
    """What a store's listing says of an object: enough to know it unchanged without reading it."""

    size: int
    mtime_ns: int  # S3 LastModified (whole seconds), in ns since the epoch
    etag: str  # the store's checksum of the object (S3 ETag); "" where it gives none


@dataclass(frozen=True, slots=True)
class CorpusFile:
    doc_id: str
    path: Path | None  # None for an object in a store (``url``)
    id_note: str = ""  # why the id is not the name as it is (a name that is not UTF-8)
    url: str = ""  # an object in a store (ingest.corpus.store): its URL, without credentials
    listed: ListedObject | None = None  # what the store's listing said of that object


@dataclass(frozen=True, slots=True)
class SkippedFile:
    doc_id: str  # its path relative to the root, as a safe id
    reason: SkipReason
    detail: str = ""  # e.g. where a link leads

    def __str__(self) -> str:
        hint = "; --follow-symlinks follows it" if self.reason is SkipReason.SYMLINK_OUTSIDE else ""
        return f"{_REASON_TEXT[self.reason]}{f' ({self.detail})' if self.detail else ''}{hint}"


_REASON_TEXT = {
    SkipReason.UNKNOWN_TYPE: "unknown type",
    SkipReason.SYMLINK_OUTSIDE: "symlink leads outside the corpus",
    SkipReason.SYMLINK_LOOP: "symlink loop",
    SkipReason.SYMLINK_BROKEN: "broken symlink",
    SkipReason.FOLDER_IN_CORPUS: "symlink to a folder already in the corpus: indexed once, under its own path",
    SkipReason.FIFO: "a FIFO (named pipe), not a file",
    SkipReason.SOCKET: "a socket, not a file",
    SkipReason.DEVICE: "a device, not a file",
    SkipReason.NOT_A_FILE: "not a regular file",
    SkipReason.UNREADABLE: "cannot be read",
    SkipReason.ID_TAKEN: "its name is not UTF-8 and its safe id is the name of another file",
    SkipReason.INDEX_FOLDER: "the index folder itself",
}


@dataclass(frozen=True, slots=True)
class Discovery:
    files: list[CorpusFile]  # sorted by doc_id
    skipped: list[SkippedFile]  # sorted by doc_id
    root: str  # the corpus root, resolved (a store's URL)
    metadata: list[CorpusFile] = ()  # the user's metadata files (doc_id: their own path), sorted


def discover(corpus: str | Path, *, follow_symlinks: bool = False, index_folder: Path | None = None) -> Discovery:
    """Every document of the corpus folder, and every other file with the reason it is not one.

    ``index_folder``: the index being built, never part of its own corpus (it may lie inside it).
    A URL (``s3://bucket/prefix``) lists the objects under its prefix (``ingest.corpus.store``);
    ``file://PATH`` is the folder PATH.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "a.md").write_text("# A")
    >>> (root / "b.md").symlink_to("a.md")
    >>> [(f.doc_id, f.path.name) for f in discover(root).files]
    [('a.md', 'a.md'), ('b.md', 'b.md')]
    """
    from ingest.corpus.store import discover_in_store, is_store_url, local_path_of  # fsspec for a URL only

    if is_store_url(corpus):
        return discover_in_store(corpus)
    corpus = Path(local_path_of(corpus))
    try:
        if not corpus.is_dir():
            raise CorpusError(f"{corpus}: {'not a folder' if corpus.exists() else 'no such folder'}")
        root = os.path.realpath(corpus)
    except OSError as exc:
        raise CorpusError(f"{corpus}: cannot read the corpus folder: {exc.strerror or exc}") from None
    walk = _Walk(corpus, root, follow_symlinks, index_folder)
    walk.run()
    return walk.result()


def safe_doc_id(relative: str) -> tuple[str, str]:
    """(doc_id, note) of a relative POSIX path as ``os`` gives it (undecodable bytes as surrogates).

    >>> safe_doc_id("docs/a.md")
    ('docs/a.md', '')
    >>> safe_doc_id("caf\\udce9 100%.txt")[0]
    'caf%E9 100%25.txt'
    """
    if not any("\udc80" <= ch <= "\udcff" for ch in relative):
        return relative, ""
    encoded = "".join(
        f"%{ord(ch) - 0xDC00:02X}" if "\udc80" <= ch <= "\udcff" else "%25" if ch == "%" else ch for ch in relative
    )
    note = "file name is not valid UTF-8: indexed under a percent-encoded id (unquote_to_bytes gives the name)"
    return encoded, note


def within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class _Walk:
    """Real folders first, then folder links in order; every real folder once."""

    def __init__(self, corpus: Path, root: str, follow_symlinks: bool, index_folder: Path | None) -> None:
        self.corpus, self.root, self.follow = corpus, root, follow_symlinks
        try:
            self.index_folder = _identity(os.stat(index_folder)) if index_folder is not None else None
        except OSError:
            self.index_folder = None
        self.files: list[CorpusFile] = []
        self.metadata: list[CorpusFile] = []
        self.skipped: list[SkippedFile] = []
        self.walked: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) of a folder -> its path relative to the root
        self.folder_links: collections.deque[tuple[str, Path]] = collections.deque()

    def run(self) -> None:
        try:
            identity = _identity(os.stat(self.corpus))
        except OSError as exc:
            raise CorpusError(f"{self.corpus}: cannot read the corpus folder: {exc.strerror or exc}") from None
        self.walked[identity] = ""
        if not self._walk_tree("", self.corpus, root=True):
            raise CorpusError(f"{self.corpus}: cannot list the corpus folder")
        while self.folder_links:
            relative, path = self.folder_links.popleft()
            self._follow_folder_link(relative, path)

    def result(self) -> Discovery:
        files = sorted(self.files, key=lambda f: f.doc_id)
        names = {f.doc_id for f in files if not f.id_note}
        kept = []
        for f in files:  # an encoded id may spell the name of a real file: that one keeps it
            if f.id_note and f.doc_id in names:
                self.skipped.append(SkippedFile(f.doc_id, SkipReason.ID_TAKEN))
            else:
                kept.append(f)
        return Discovery(kept, sorted(self.skipped, key=lambda s: (s.doc_id, s.reason)), self.root,
                         sorted(self.metadata, key=lambda f: f.doc_id))

    def _skip(self, relative: str, reason: SkipReason, detail: str = "") -> None:
        self.skipped.append(SkippedFile(safe_doc_id(relative)[0], reason, detail))

    def _walk_tree(self, relative: str, folder: Path, *, root: bool = False) -> bool:
        """Walk one real folder and the real folders below it (an explicit stack: trees may be deep)."""
        stack = [(relative, folder)]
        while stack:
            relative, folder = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError as exc:
                if root and not relative:
                    return False
                self._skip(relative, SkipReason.UNREADABLE, f"cannot list the folder: {exc.strerror or exc}")
                continue
            below = []
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                child = f"{relative}/{entry.name}" if relative else entry.name
                folder_below = self._entry(child, Path(entry.path), entry)
                if folder_below is not None:
                    below.append(folder_below)
            stack.extend(reversed(below))
        return True

    def _entry(self, relative: str, path: Path, entry: os.DirEntry) -> tuple[str, Path] | None:
        """Classify one entry; a real folder to walk is returned, a folder link is queued."""
        try:
            is_link = entry.is_symlink()
            mode = entry.stat(follow_symlinks=False).st_mode if not is_link else None
        except OSError as exc:
            self._skip(relative, SkipReason.UNREADABLE, exc.strerror or str(exc))
            return None
        if not is_link:
            if stat.S_ISDIR(mode):
                identity = _identity(entry.stat(follow_symlinks=False))
                if self._seen(relative, identity):  # the index, or a real folder reached again through a link
                    return None
                self.walked[identity] = relative
                return relative, path
            self._file(relative, path, mode)
            return None
        try:
            target = os.stat(path)  # follows the link; opens nothing
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self._skip(relative, SkipReason.SYMLINK_LOOP)
            elif exc.errno in (errno.ENOENT, errno.ENOTDIR):
                self._skip(relative, SkipReason.SYMLINK_BROKEN, f"to {_link_text(path)}")
            else:
                self._skip(relative, SkipReason.UNREADABLE, exc.strerror or str(exc))
            return None
        if stat.S_ISDIR(target.st_mode):
            self.folder_links.append((relative, path))
            return None
        if media_type_of(relative) is None and not is_metadata_file(relative):
            self._skip(relative, SkipReason.UNKNOWN_TYPE)
            return None
        real = os.path.realpath(path)
        if not self.follow and not within(real, self.root):
            self._skip(relative, SkipReason.SYMLINK_OUTSIDE, f"to {real}")
            return None
        self._file(relative, path, target.st_mode)
        return None

    def _file(self, relative: str, path: Path, mode: int) -> None:
        metadata = media_type_of(relative) is None and is_metadata_file(relative)
        if media_type_of(relative) is None and not metadata:
            self._skip(relative, SkipReason.UNKNOWN_TYPE)
            return
        kind = special_kind(mode)
        if kind is not None:
            self._skip(relative, kind)
            return
        doc_id, note = safe_doc_id(relative)
        (self.metadata if metadata else self.files).append(CorpusFile(doc_id, path, note))

    def _follow_folder_link(self, relative: str, path: Path) -> None:
        real = os.path.realpath(path)
        if within(os.path.realpath(path.parent), real) or within(self.root, real):
            self._skip(relative, SkipReason.SYMLINK_LOOP, "to a folder above it")
            return
        if not self.follow and not within(real, self.root):
            self._skip(relative, SkipReason.SYMLINK_OUTSIDE, f"to the folder {real}")
            return
        try:
            identity = _identity(os.stat(path))
        except OSError as exc:
            self._skip(relative, SkipReason.UNREADABLE, exc.strerror or str(exc))
            return
        if self._seen(relative, identity):
            return
        self.walked[identity] = relative
        self._walk_tree(relative, path)

    def _seen(self, relative: str, identity: tuple[int, int]) -> bool:
        """Skip a folder walked already, or the index folder itself (its texts are not documents)."""
        if identity == self.index_folder:
            self._skip(relative, SkipReason.INDEX_FOLDER)
            return True
        if identity in self.walked:
            self._skip(relative, SkipReason.FOLDER_IN_CORPUS, f"as {self.walked[identity] or '.'}")
            return True
        return False


def special_kind(mode: int) -> SkipReason | None:
    """Why a node of this mode is not read as a document; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return SkipReason.FIFO
    if stat.S_ISSOCK(mode):
        return SkipReason.SOCKET
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return SkipReason.DEVICE
    return SkipReason.NOT_A_FILE


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _link_text(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


class NotReadable(Exception):
    """A corpus file that must not be read (not regular, outside the corpus, too large); ``str`` says why."""


def read_source_bytes(path: Path | None, inside: str | None, max_bytes: int | None = None, url: str = "",
                      listed: ListedObject | None = None) -> bytes:
    """The bytes of a corpus file (``read_corpus_file``) or of an object in a store (``url``, read
    through its driver; ``listed``: what its listing said, whose size is checked before reading)."""
    if url:
        from ingest.corpus.store import read_object

        return read_object(url, listed, max_bytes)
    return read_corpus_file(path, inside, max_bytes)


def read_corpus_file(path: Path, inside: str | None, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file, opened only once it is known to be one.

    ``inside``: the resolved corpus root the file must lie in (None: anywhere,
    --follow-symlinks). Raises ``NotReadable`` for anything else, or for a file
    over ``max_bytes`` (never read), and ``OSError`` when the file cannot be read.
    """
    if hasattr(os, "O_PATH") and os.path.isdir("/proc/self/fd"):
        handle = os.open(path, os.O_PATH | os.O_CLOEXEC)  # opens nothing: safe on a FIFO or a device
        try:
            _check(os.fstat(handle), os.readlink(f"/proc/self/fd/{handle}"), inside)
            fd = os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # the same inode
        finally:
            os.close(handle)
    else:
        checked = os.stat(path)
        _check(checked, os.path.realpath(path), inside)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        if _identity(os.fstat(fd)) != _identity(checked):
            os.close(fd)
            raise NotReadable("not read: the file was replaced while it was being opened")
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if max_bytes is not None and size > max_bytes:  # refused unread: a huge file never reaches memory
            raise NotReadable(f"file too large: {size:,} bytes, the limit is {max_bytes:,} (--max-file-mb)")
        return f.read()


def _check(st: os.stat_result, real: str, inside: str | None) -> None:
    kind = special_kind(st.st_mode)
    if kind is not None:
        raise NotReadable(f"not read: {_REASON_TEXT[kind]}")
    if inside is not None and not within(real, inside):
        raise NotReadable(f"not read: {_REASON_TEXT[SkipReason.SYMLINK_OUTSIDE]}")
