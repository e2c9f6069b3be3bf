"""The index in an object store (``s3://bucket/prefix``, ``az://container/prefix``): built in a local
copy of it, read through one.

Every file of an index but CURRENT (and LOCK) is written once and never changed, so a file a copy
holds by name and size is valid. A build's copy holds its generations' manifests and deletions and
what the build writes; it reads any other file from the bucket as a reader does, the byte ranges it
needs (``ingest.store.ranged.CopyFiles``). A build first claims its generation's name (``CLAIM``,
written with ``If-None-Match: *``: of two builds that chose one name, the second is refused before
it writes anything); then it, or its segment writers on a cluster, upload its objects (again only
where none is); its manifest last; and only then it replaces the bucket's CURRENT with a conditional
write, ``If-Match`` the ETag of the CURRENT it started from (``If-None-Match: *`` for a first build):
of two builds that started from one CURRENT, one publishes and the other is refused
(``PublishRaceError``) with nothing of it live. After publishing, the objects that no kept
generation references (retired generations, a failed build's debris) are removed.

A reader (``LocalCopy(lazy=True)``) keeps a folder of its own in the copy's: the live generation's
manifest and deletions, fetched without a listing; ``ingest.store.ranged`` fetches the rest as it
is read. Requests go through the store's fsspec driver (``ingest.corpus.store``: its credentials
chain, retries and error lines), in the store's own dialect of conditional writes and ranged
reads (``ingest.store.objects``).

Known gap: a text or source that only a retiring generation references is removed after a publish;
a build running meanwhile whose new generation references that very file again (a document back at
an old version) and found it still there when it uploaded (``If-None-Match`` refused) publishes
without it.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ingest.corpus import scrubbed, shown, store_failure, store_of
from ingest.store.objects import md5_hex, objects_of
from ingest.store.previous import PublishedGeneration
from ingest.store.publish import publish
from ingest.store.retention import remove_unreferenced_segments, retired_files, retirement
from schemas.errors import CorpusError, IndexFormatError, IndexWriteError, PublishRaceError, SpanindexError
from ingest.store.ranged import CACHE_FOLDER, DEFAULT_CACHE_BYTES, BucketFiles, CopyFiles
from schemas.layout import (
    CLAIM,
    CURRENT,
    DELETED_FILE,
    LOCAL_FILES,
    LOCK,
    MANIFEST,
    IndexPaths,
    read_current,
    version_hex,
)
from schemas.manifest import ann_params, read_manifest
from schemas.segments import open_segments
from schemas.tables import SCHEMAS

# Requests in flight at once while objects are fetched, uploaded or removed.
CONCURRENCY = 16
# A file over this size is uploaded in parts of this size (S3's least is 5 MiB; Azure stages blocks): uploads hold at
# most CONCURRENCY parts in memory, and a file may be larger than a PutObject's 5 GB.
PART_BYTES = 16 << 20
# Objects a build writes: generations/, segments/ and ann/ are named by the generation that wrote them,
# so a second build writing the same name lost a race; texts/ and sources/ are named by their contents.
CONTENT_ADDRESSED = ("texts", "sources")
# What a build lists: a few objects a segment and a generation. Texts and sources, one or more a document,
# are never listed by a build: it uploads those of the documents it wrote, and removes those of the
# documents its retired generations alone held, by name (a compaction lists them all, and sweeps).
BUILD_LISTS = ("generations", "segments", "ann")
READER_FOLDER = "reader"  # a reader's folder in the local copy: its generation's manifest and deletions, its cache


def default_cache(url: str) -> Path:
    """The local copy of the index at ``url`` unless told otherwise: ``$XDG_CACHE_HOME/spanindex/<hash>``.

    >>> default_cache("s3://bucket/index").name == default_cache("s3://bucket/index/").name
    True
    """
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "spanindex" / hashlib.sha256(shown(url).rstrip("/").encode()).hexdigest()[:16]


@dataclass(slots=True)
class BucketState:
    """The bucket as a build or reader found it: the live generation, CURRENT's ETag (what the
    publish is conditional on), and every object under the prefix with its size."""

    live: str | None
    etag: str | None
    objects: dict[str, int] = field(default_factory=dict)  # key relative to the prefix -> bytes
    folders: tuple[str, ...] | None = None  # the folders listed (None: every object under the prefix)

    def generations(self) -> list[str]:
        """Every published generation the bucket holds (the live one and older; not a claim that never published)."""
        names = {key.split("/")[1] for key in self.objects
                 if key.startswith("generations/") and key.endswith(f"/{MANIFEST}") and key.count("/") == 2}
        return sorted(n for n in names if n.isdigit() and self.live is not None and n <= self.live)

    def highest_name(self) -> str:
        """The highest generation name any object is named by (a failed build's debris too): a new
        generation is named above it, never onto an object already in the bucket."""
        names = {key.split("/")[1].split("-")[0] for key in self.objects
                 if key.startswith(("generations/", "segments/")) and key.count("/") >= 2}
        return max((n for n in names if n.isdigit()), default="")


class IndexBucket:
    """An index at ``url`` in an object store, and its local copy at ``cache``."""

    def __init__(self, url: str, cache: str | Path | None = None, *,
                 error: type[SpanindexError] = IndexFormatError) -> None:
        self.url = shown(str(url)).rstrip("/")
        self._error = error  # the error a failing store is for the caller: reading, or writing the index
        try:
            self.fs, root = store_of(str(url))
        except CorpusError as exc:
            raise error(exc.message) from None
        self.bucket, _, prefix = root.strip("/").partition("/")
        self.objects = objects_of(self.fs, self.bucket)  # the store's conditional writes and ranged reads
        if self.objects is None:
            raise error(f"{self.url}: an index in {self.url.split('://')[0]}:// is not supported yet: s3:// and az:// only")
        self.prefix = prefix.strip("/")
        self.listed: dict[str, int] = {}  # the objects under the prefix, by key: as last listed, and uploaded since
        root = Path(cache) if cache else default_cache(self.url)
        self.paths = IndexPaths(root, CopyFiles(self, self.listed, root))  # what the copy lacks is read from the bucket
        self._trusted_up_to = ""  # the copy's live generation before it is brought up to date
        self._fetched: set[str] = set()  # keys fetched from the bucket by this object
        self._claimed = ""  # the generation name this object's build holds in the bucket

    def _key(self, relative: str) -> str:
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def _failure(self, exc: BaseException, doing: str) -> SpanindexError:
        if isinstance(exc, SpanindexError):
            return exc
        return self._error(f"{self.url}: {store_failure(exc, doing)}")

    # -- bringing the local copy up to the bucket's live generation

    def state(self, unless_etag: str | None = None, folders: tuple[str, ...] | None = None) -> BucketState:
        """CURRENT (read first: the listing after it holds every object it names), then the listing
        (of ``folders`` only, where given); none when CURRENT's ETag is ``unless_etag`` (nothing was
        published since)."""
        try:
            live, etag = self._run(self._read_current())
            if unless_etag is not None and etag == unless_etag:
                return BucketState(live, etag)
            objects = dict(self._listing(folders))
        except Exception as exc:  # noqa: BLE001 — each driver raises its own types
            raise self._failure(exc, "reading") from None
        return BucketState(live, etag, objects, folders)

    def _listing(self, folders: tuple[str, ...] | None):
        if folders is None:
            yield from self.objects.sizes(self.prefix)
            return
        for folder in folders:
            for relative, size in self.objects.sizes(self._key(folder)):
                yield f"{folder}/{relative}", size

    def bring_up_to_date(self, *, every_generation: bool = False, unless_etag: str | None = None,
                         sweep: bool = False) -> BucketState:
        """Fetch what the local copy lacks of the live generation, then make it the copy's live
        generation. ``every_generation``: a build's copy, which holds the manifests and deletions
        of every generation the bucket holds (it retires them) and reads the rest from the bucket
        as it needs it (``self.paths.files``); its listing is of ``BUILD_LISTS`` only, unless it
        will ``sweep`` the texts and sources no kept generation reads (a compaction's).
        ``unless_etag``: CURRENT's ETag when the copy was last brought up to date; while it is the
        same, one request and nothing more."""
        state = self.state(unless_etag, BUILD_LISTS if every_generation and not sweep else None)
        if unless_etag is not None and state.etag == unless_etag:
            return state
        self.listed.clear()
        self.listed.update(state.objects)
        if state.live is None:
            return state
        names = state.generations() if every_generation else [state.live]
        if state.live not in names:
            raise self._error(f"{self.url}: CURRENT names generation {state.live}, which the bucket does not hold")
        self.paths.root.mkdir(parents=True, exist_ok=True)
        self._trusted_up_to = read_current(self.paths) or ""
        if state.live < self._trusted_up_to:  # generations numbered anew: what the cache holds was another index's
            shutil.rmtree(self.paths.root / CACHE_FOLDER, ignore_errors=True)
        self._fetch(state, lambda key: key.split("/")[0] == "generations" and key.split("/")[1] in names
                    and key.split("/")[-1] != CLAIM)
        if not every_generation:
            self._fetch(state, references(self.paths, names, files_of=[]))
            self._fetch(state, references(self.paths, [state.live]))
        else:  # a generation the bucket no longer holds is not the copy's either
            for folder in self.paths.generations.iterdir():
                if folder.name.isdigit() and folder.name not in names:
                    shutil.rmtree(folder, ignore_errors=True)
            remove_unreferenced_segments(self.paths)
        publish(self.paths, state.live)
        return state

    def bring_up_live_generation(self, unless_etag: str | None = None) -> BucketState:
        """A reader's: CURRENT, then the live generation's manifest and deletions where the copy lacks
        them, and nothing else (``ingest.store.ranged`` fetches the rest as it is read); no listing."""
        try:
            live, etag = self._run(self._read_current())
            if live is None:  # no CURRENT: is there a bucket? (FileNotFoundError where there is none)
                self._run(self.objects.check_bucket())
        except Exception as exc:  # noqa: BLE001
            raise self._failure(exc, "reading") from None
        state = BucketState(live, etag)
        if live is None or (unless_etag is not None and etag == unless_etag):
            return state
        self.paths.root.mkdir(parents=True, exist_ok=True)
        trusted = read_current(self.paths) or ""
        if live < trusted:  # generations numbered anew: the index was built again from nothing, under the same names
            for folder in ("generations", CACHE_FOLDER):
                shutil.rmtree(self.paths.root / folder, ignore_errors=True)
        keys = [f"generations/{live}/{name}" for name in (MANIFEST, DELETED_FILE)]
        try:
            self._run(_all(self._fetch_one(key) for key in keys if live > trusted or not (self.paths.root / key).is_file()))
        except FileNotFoundError:
            raise self._error(f"{self.url}: CURRENT names generation {live}, which the bucket does not hold") from None
        except Exception as exc:  # noqa: BLE001
            raise self._failure(exc, "reading") from None
        publish(self.paths, live)
        return state

    # -- a reader's reads of single objects (``ingest.store.ranged``): FileNotFoundError where there is none

    def download(self, key: str, path: Path) -> None:
        """The object ``key`` into ``path``, whole or not at all."""
        self._reading(key, self._fetch_one(key, path))

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive) of the object."""
        return self._reading(key, self.objects.read_range(self._key(key), start, end))

    def get_tail(self, key: str, count: int) -> tuple[bytes, int]:
        """The object's last ``count`` bytes (all of it, if smaller) and its size (one request on S3, two on Azure)."""
        return self._reading(key, self.objects.read_tail(self._key(key), count))

    def _reading(self, key: str, coroutine):
        try:
            return self._run(coroutine)
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 — each driver raises its own types
            raise self._error(f"{self.url}/{key}: {store_failure(exc, 'reading')}") from None

    def _fetch(self, state: BucketState, wanted: Callable[[str], bool]) -> None:
        missing = [(key, size) for key, size in state.objects.items()
                   if wanted(key) and not self._has(key, size)]
        try:
            self._run(_all(self._fetch_one(key) for key, _ in missing))
        except Exception as exc:  # noqa: BLE001
            raise self._failure(exc, "reading") from None

    def _has(self, key: str, size: int) -> bool:
        """Whether the local copy holds the object: by name and size, as objects are never rewritten;
        but a file named by a generation above the copy's live one may be a build's that never
        published (killed here, or lost a race), under a name another build then published: fetched again."""
        try:
            if (self.paths.root / key).stat().st_size != size:
                return False
        except FileNotFoundError:
            return False
        written_by = _generation_of(key)
        return written_by is None or written_by <= self._trusted_up_to or key in self._fetched

    async def _fetch_one(self, key: str, local: Path | None = None) -> None:
        local = local or self.paths.root / key
        local.parent.mkdir(parents=True, exist_ok=True)
        # never taken for the file by its size; one of its own for each fetch (readers' threads fetch at once)
        partial = local.with_name(f".{local.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            await self.objects.download(self._key(key), partial)
            os.replace(partial, local)
            self._fetched.add(key)
        finally:
            partial.unlink(missing_ok=True)

    async def _read_current(self) -> tuple[str | None, str | None]:
        try:
            data, etag = await self.objects.read(self._key(CURRENT))
        except FileNotFoundError:  # no CURRENT (the listing tells a missing bucket apart)
            return None, None
        return data.decode("utf-8").strip() or None, etag

    # -- publishing a generation built in the local copy

    def claim(self, name: str, started: BucketState) -> None:
        """Write generation ``name``'s claim, the build's first object under that name (once): of two
        builds that chose one name, the second is refused here (``PublishRaceError``), having written nothing."""
        if self._claimed == name:
            return
        key = f"generations/{name}/{CLAIM}"
        data = json.dumps({"generation": name, "build": uuid.uuid4().hex,
                           "claimed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode("utf-8")
        try:
            try:
                self._run(self._put(key, data, None))
            except FileExistsError:  # another build's, or a retried request's whose first try landed
                if not self._run(self._holds(key, data)):
                    raise self._lost(name, started, f"another build is writing generation {name}") from None
        except SpanindexError:
            raise
        except Exception as exc:  # noqa: BLE001 — each driver raises its own types
            raise self._unpublished(exc, started) from None
        self._claimed = name
        self.listed[key] = len(data)

    def publish(self, name: str, started: BucketState) -> None:
        """Upload what generation ``name`` references and the bucket lacks (its segment writers' uploads
        aside), then make it live with a conditional write of CURRENT; ``PublishRaceError`` when another
        build published first: checked before anything is uploaded, and by the write of CURRENT."""
        try:
            live, etag = self._run(self._read_current())
        except Exception as exc:  # noqa: BLE001
            raise self._unpublished(exc, started) from None
        if live == name and self._claimed == name:  # a retried publish whose CURRENT landed
            return
        if etag != started.etag:
            raise self._lost(name, started)
        self.claim(name, started)
        # its generation, segments and shards the bucket lacks; the texts and sources of the documents it wrote here
        wanted, written = references(self.paths, [name], files_of=[]), _written_contents(self.paths, name)
        local = [path.relative_to(self.paths.root).as_posix() for path in _files(self.paths.root)]
        new = [key for key in local if (wanted(key) or written(key))
               and started.objects.get(key) != (self.paths.root / key).stat().st_size]
        # Everything the generation reads, then its deletions, its manifest last of all.
        manifest = f"generations/{name}/{MANIFEST}"
        for group in (lambda k: not k.startswith("generations/"),
                      lambda k: k.startswith("generations/") and k != manifest,
                      lambda k: k == manifest):
            self._upload([key for key in new if group(key)], name, started)
        current = (name + "\n").encode("utf-8")
        try:
            self._run(self._put(CURRENT, current, started.etag))
        except Exception as exc:  # noqa: BLE001
            if not isinstance(exc, (FileExistsError, FileNotFoundError)):
                raise self._unpublished(exc, started) from None
            try:  # If-Match refused: CURRENT changed, or is gone; unless a retry's first try landed
                ours = self._run(self._holds(CURRENT, current))
            except Exception as failure:  # noqa: BLE001
                raise self._unpublished(failure, started) from None
            if not ours:
                raise self._lost(name, started) from None

    def _upload(self, keys: list[str], name: str, started: BucketState | None) -> None:
        try:
            self._run(_all(self._upload_one(key) for key in keys))
        except FileExistsError:  # a generation's object is there with other bytes: another build wrote this name
            raise self._lost(name, started, f"another build is writing generation {name}") from None
        except Exception as exc:  # noqa: BLE001
            raise self._unpublished(exc, started) from None
        self.listed.update((key, (self.paths.root / key).stat().st_size) for key in keys)

    def upload_written(self, name: str, keys: list[str]) -> dict[str, int]:
        """A segment writer's: the objects it wrote in this copy (its own folder) for generation ``name``,
        which the build has claimed, uploaded where the bucket lacks them. Their keys and sizes."""
        self._upload(keys, name, None)
        return {key: self.listed[key] for key in keys}

    async def _upload_one(self, key: str) -> None:
        path = self.paths.root / key
        if path.stat().st_size > PART_BYTES:
            await self.objects.put_in_parts(self._key(key), path, PART_BYTES)
            return
        data = path.read_bytes()
        try:
            await self._put(key, data, None)
        except FileExistsError:
            # Past the claim, no other build writes under this generation's name: the same contents are
            # a retried request's whose first try landed (or a text or source another build stored).
            if key.startswith(CONTENT_ADDRESSED) or await self._holds(key, data):
                return
            raise

    async def _put(self, key: str, data: bytes, if_match: str | None) -> None:
        """A write that never replaces an object unless it is the one ``if_match`` names
        (``FileExistsError`` where the store refused it)."""
        await self.objects.put(self._key(key), data, if_match)

    async def _holds(self, key: str, data: bytes) -> bool:
        """Whether the bucket's object is ``data`` (the MD5 the store keeps of a single put)."""
        return await self.objects.md5(self._key(key)) == md5_hex(data)

    def _lost(self, name: str, started: BucketState | None, what: str = "another build published first") -> PublishRaceError:
        if started is None:
            return PublishRaceError(f"{self.url}: {what}; generation {name} was not published")
        since = f"generation {started.live}" if started.live else "an empty bucket"
        return PublishRaceError(f"{self.url}: {what} (this one started from {since}); generation {name} was not published")

    def _unpublished(self, exc: BaseException, started: BucketState | None) -> IndexWriteError:
        if started is None:  # a segment writer's
            after = "nothing was published"
        else:
            after = f"generation {started.live} is still live" if started.live else "nothing was published"
        return IndexWriteError(f"cannot write the index {self.url}: {store_failure(exc, 'writing')}; {after}")

    def learn(self, uploaded: dict[str, int]) -> None:
        """Objects the build's segment writers uploaded: the bucket has them (``self.paths.files`` reads them there)."""
        self.listed.update(uploaded)

    # -- after publishing

    def collect_garbage(self, started: BucketState, keep: int, keep_texts: bool = False) -> int:
        """After publishing, before the copy retires its generations (``retire_generations``, with the
        same ``keep``): remove from the bucket the objects the build listed that no kept generation
        references (retired generations, their segments and shards, a failed build's debris), and the
        texts and sources of the documents the retired generations alone held, by name (unless
        ``keep_texts``; a listing of every object also removes those that nothing references). Objects
        written since the build listed the bucket (another build's, in flight) are not touched. The
        number of keys removed."""
        try:
            retired, kept = retirement(self.paths, keep)
            swept = started.folders is None and not keep_texts
            wanted = references(self.paths, kept, files_of=None if swept else [])
            unwanted = {k for k in started.objects if k not in (CURRENT, LOCK) and not k.startswith(CONTENT_ADDRESSED)
                        and not wanted(k)}
            if swept:
                unwanted.update(k for k in started.objects if k.startswith(CONTENT_ADDRESSED) and not wanted(k))
            elif retired and not keep_texts:
                unwanted.update(path.relative_to(self.paths.root).as_posix()
                                for path in retired_files(self.paths, retired, kept))
            self._run(self.objects.remove([self._key(k) for k in sorted(unwanted)]))
        except Exception as exc:  # noqa: BLE001 — published: the next build removes what this one could not
            raise OSError(scrubbed(store_failure(exc, "removing"))) from None
        return len(unwanted)

    def _run(self, coroutine):
        """Await ``coroutine`` on the driver's event loop (its own thread), from this synchronous code."""
        from fsspec.asyn import sync

        async def awaited():
            return await coroutine

        return sync(self.fs.loop, awaited)


def _written_contents(paths: IndexPaths, name: str) -> Callable[[str], bool]:
    """Whether a key is a text or source of a document that generation ``name``'s build wrote in
    this copy (the documents of its own segments here; a merge's hold documents written before)."""
    manifest = read_manifest(paths.generation(name))
    written = [ref for ref in manifest.segments if _generation_of(f"segments/{ref.name}/") == name
               and not ref.name.endswith("-merged") and paths.segment(ref.name).is_dir()]
    documents = open_segments(paths.segments, written, manifest.model_dim, {}).table(
        "documents", ["doc_version", "source_sha256"])
    return _contents(documents)


def _contents(documents) -> Callable[[str], bool]:
    """Whether a key is the text or a source (any variant) of one of ``documents``."""
    texts = {version_hex(v) for v in documents.column("doc_version").to_pylist() if v}
    sources = {s for s in documents.column("source_sha256").to_pylist() if s}

    def wanted(key: str) -> bool:
        parts = key.split("/")
        if len(parts) != 2 or parts[1].startswith("."):
            return False
        stem = parts[1].split(".", 1)[0]
        return stem in texts if parts[0] == "texts" else parts[0] == "sources" and stem in sources

    return wanted


def references(paths: IndexPaths, names: list[str], files_of: list[str] | None = None) -> Callable[[str], bool]:
    """Whether a key (relative to the index) is a file the generations ``names`` read: their own
    files, their segments', their vector shards, and the texts and sources of the live documents of
    ``files_of`` (default: all of ``names``). Their manifests and segments must be in the local copy."""
    segments: set[str] = set()
    templates: set[str] = set()
    for name in names:
        manifest = read_manifest(paths.generation(name))
        segments.update(ref.name for ref in manifest.segments)
        templates.add(ann_params(manifest).template)
    columns = ["doc_version", "source_sha256"]
    tables = [PublishedGeneration(paths, name).table("documents", columns) for name in (names if files_of is None else files_of)]
    contents = _contents(pa.concat_tables(tables) if tables else SCHEMAS["documents"].empty_table().select(columns))

    def wanted(key: str) -> bool:
        parts = key.split("/")
        if len(parts) < 2 or any(part.startswith(".") for part in parts):
            return False  # a build's temporary file
        folder, first, last = parts[0], parts[1], parts[-1].split(".", 1)[0]
        if folder == "generations":
            return first in names
        if folder == "segments":
            return first in segments
        if folder == "ann":  # ann/<template>/template.* and ann/<template>/<segment>.*
            return len(parts) == 3 and first in templates and (last == "template" or last in segments)
        return contents(key)

    return wanted


class LocalCopy:
    """A reader's local copy of the index at ``url``, brought up to the bucket's live generation when
    made and on each ``follow`` (at most once every ``FOLLOW_EVERY_S`` seconds: one GET of CURRENT
    while nothing changed). ``lazy``: the copy holds the generation's manifest and deletions, and
    ``files`` fetches the rest as it is read, keeping at most ``cache_bytes`` of it (a reader's);
    otherwise every file of the generation is fetched first (fsck, compaction, SQL over the tables)."""

    FOLLOW_EVERY_S = 5.0

    def __init__(self, url: str, cache: str | Path | None = None, *, lazy: bool = False,
                 cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        # A reader's folder of its own inside the copy's: its CURRENT says nothing of which files a whole
        # copy holds (a build or fsck trusts the files of generations up to the copy's CURRENT).
        self.bucket = IndexBucket(url, Path(cache or default_cache(url)) / READER_FOLDER if lazy else cache)
        self.lazy = lazy
        state = self._bring_up_to_date(None)
        if state.live is None:
            raise IndexFormatError(f"{self.bucket.url}: no index here (no CURRENT in the bucket)")
        self.root = self.bucket.paths.root
        self.files = BucketFiles(self.bucket, cache_bytes) if lazy else LOCAL_FILES
        self._etag = state.etag
        self._checked = time.monotonic()

    def _bring_up_to_date(self, unless_etag: str | None) -> BucketState:
        if self.lazy:
            return self.bucket.bring_up_live_generation(unless_etag=unless_etag)
        return self.bucket.bring_up_to_date(unless_etag=unless_etag)

    def follow(self) -> None:
        """Bring the copy up to the bucket's live generation if one was published since. A store that
        fails now is tried again at the next follow; meanwhile the copy's generation keeps serving."""
        if time.monotonic() - self._checked < self.FOLLOW_EVERY_S:
            return
        self._checked = time.monotonic()
        try:
            state = self._bring_up_to_date(self._etag)
        except SpanindexError:
            return
        if state.live is not None:
            self._etag = state.etag


def local_copy(url: str, cache: str | Path | None = None) -> Path:
    """The local copy of the index at ``url``, brought up to the bucket's live generation."""
    return LocalCopy(url, cache).root


def _generation_of(key: str) -> str | None:
    """The generation whose build wrote a file, by its name; None for a file named by its contents.

    >>> _generation_of("segments/000004-merged/chunks.parquet"), _generation_of("ann/ab12/000003-0001.faiss")
    ('000004', '000003')
    >>> _generation_of("ann/ab12/template.faiss"), _generation_of("texts/00ff.txt")
    (None, None)
    """
    parts = key.split("/")
    if parts[0] in ("generations", "segments") and len(parts) > 2:
        return parts[1].split("-")[0]
    stem = parts[-1].split(".", 1)[0]
    if parts[0] == "ann" and len(parts) == 3 and stem != "template":
        return stem.split("-")[0]
    return None


def _files(root: Path) -> Iterable[Path]:
    for folder in ("generations", "segments", "ann", "texts", "sources"):
        if (root / folder).is_dir():
            yield from (p for p in (root / folder).rglob("*") if p.is_file())


async def _all(coroutines: Iterable) -> None:
    """Run the coroutines, ``CONCURRENCY`` at a time; the first error is raised once all have ended."""
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(coroutine):
        async with limit:
            return await coroutine

    results = await asyncio.gather(*(one(c) for c in coroutines), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
