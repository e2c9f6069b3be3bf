"""The index as a reader sees it: documents, chunks, texts and offset maps by id.

An ``Index`` opened on the live generation follows the builds: at the start of
each request it looks at CURRENT (one ``stat``), and after a build has
published it moves to the new generation. A request is one call (``search``,
``chunk``, ``resolve``, ``verify_answer``, ...) or a ``with idx.request():``
block around several; everything inside one request reads one generation, so
a reader never mixes rows of two generations and never reads a generation that
retention has removed (a build keeps the last ``--keep`` generations, so a
request would have to outlast that many builds). An index opened on a named
generation stays on it and says so once that generation is retired.

One ``Index`` serves one thread at a time (the server holds a lock per request).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index.citations.locate import HtmlSourceMap, OfficeSourceMap, PdfCharMap
from ingest.text import HiddenText
from index.store import Generation, open_generation, read_text_file
from ingest.corpus import is_store_url, local_path_of
from ingest.embed import Embedder
from ingest.store import DEFAULT_CACHE_BYTES, LocalCopy, local_copy
from schemas.errors import IndexFormatError
from schemas.layout import IndexPaths, converted_suffix, read_current
from schemas.records import (
    Chunk,
    DocumentRecord,
    HtmlRun,
    MediaType,
    OfficeShape,
    PdfCharRun,
    PdfPage,
    SearchHit,
    SearchMode,
)
from schemas.tables import (
    chunk_of_row,
    chunk_records,
    document_records,
    hidden_run_records,
    html_run_records,
    office_cell_records,
    office_page_records,
    office_run_records,
    office_shape_records,
    pdf_char_runs,
    pdf_page_records,
)


MAPS_KEPT = 32  # offset maps of this many (document, kind) pairs stay built
FILTERS_KEPT = 16  # the vector ids of this many filters stay computed
CHUNKS_KEPT = 4096  # chunks (a search's hits, a citation's chunk) stay built, by vector id


def _one_request(method):
    """A public read: on the live generation when it starts, unless a request is already open."""

    @functools.wraps(method)
    def read(self: Index, *args, **kwargs):
        if self._depth == 0:
            self._follow()
        self._depth += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            self._depth -= 1

    return read


def on_one_generation(method):
    """A method of an object that reads ``self.index`` (a verifier, a checker): one request on it."""

    @functools.wraps(method)
    def read(self, *args, **kwargs):
        with self.index.request():
            return method(self, *args, **kwargs)

    return read


class Index:
    """A read-only view of an index folder: the live generation, followed between requests.

    >>> import index
    >>> idx = index.open("build/sample-index")            # doctest: +SKIP
    >>> idx.search("overage price per API call", k=3)[0].doc_id   # doctest: +SKIP
    'pricing/rate-card.pdf'
    """

    def __init__(self, root: str | Path, generation: str | None = None, *, embedder: Embedder | None = None,
                 cache: str | Path | None = None, cache_bytes: int | None = None) -> None:
        """``root``: a folder, or the URL of an index in an object store (``s3://bucket/index``): its live
        generation's manifest is fetched, then the byte ranges of the rows read and the files searched,
        kept in a local cache (``cache``; default ``$XDG_CACHE_HOME/spanindex/<hash>``) of at most
        ``cache_bytes`` (default 2 GiB; least recently used out first).
        ``generation``: stay on this one (default: the live one, followed as builds publish).
        ``embedder``: the one the index was built with, when it is not a model the manifest
        names (a test double, an embedder of your own); by default the model is loaded on first search."""
        self._copy = LocalCopy(str(root), cache, lazy=True, cache_bytes=cache_bytes or DEFAULT_CACHE_BYTES) \
            if is_store_url(root) else None
        self.paths = IndexPaths(self._copy.root, self._copy.files) if self._copy else IndexPaths(Path(local_path_of(root)))
        self.pinned = generation is not None
        self._current_seen: tuple[int, int, int] | None = None
        self._depth = 0
        self._texts: dict[str, str] = {}  # by doc_version: valid in every generation
        self._injected = embedder
        self._embedder = None
        self._use(open_generation(self.paths, generation))
        self._current_seen = self._current_stamp() if not self.pinned else None

    def _use(self, generation: Generation) -> None:
        """Read ``generation`` from now on: rows and maps of the previous one are dropped."""
        previous = getattr(self, "manifest", None)
        self.generation = generation
        self.manifest = generation.manifest
        self._chunk_cache: dict[int, Chunk] = {}
        self._maps: collections.OrderedDict[tuple[str, str], object] = collections.OrderedDict()
        self._lexical = None
        self._filters: dict[str, np.ndarray] = {}  # by filter text: its chunks' vector ids
        if self._injected is not None:
            from index.search.modes import check_embedder

            self._embedder = check_embedder(self._injected, self.manifest)
        elif previous is None or (previous.model_id, previous.model_path) != (self.manifest.model_id, self.manifest.model_path):
            self._embedder = None  # loaded on first search; kept while builds use the same model

    @contextlib.contextmanager
    def request(self) -> Iterator[Index]:
        """Several reads on one generation: the live one when the outermost block starts.

        >>> with idx.request():                                       # doctest: +SKIP
        ...     hits = idx.search("overage", k=3)
        ...     citation = resolve(idx, hits[0].chunk_id, "billed at $0.12")
        """
        if self._depth == 0:
            self._follow()
        self._depth += 1
        try:
            yield self
        finally:
            self._depth -= 1

    def _follow(self) -> None:
        """Move to the live generation if a build replaced CURRENT since we last looked."""
        if self.pinned:
            return
        if self._copy is not None:
            self._copy.follow()  # the bucket's new generation into the local copy, whose CURRENT is then looked at
        stamp = self._current_stamp()
        if stamp is None or stamp == self._current_seen:
            return
        self._current_seen = stamp
        live = read_current(self.paths)
        if live is not None and live != self.generation.name:
            self._use(open_generation(self.paths))

    def _current_stamp(self) -> tuple[int, int, int] | None:
        # CURRENT is replaced by rename: a new inode on every publish, so a stat tells.
        try:
            st = os.stat(self.paths.current)
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    # -- documents -----------------------------------------------------------

    @_one_request
    def documents(self) -> list[DocumentRecord]:
        return document_records(self.generation.table("documents"))

    @_one_request
    def document(self, doc_id: str) -> DocumentRecord | None:
        """One document's row, read from the row group that holds it."""
        rows = self.generation.rows_of("documents", doc_id)
        return document_records(rows.slice(0, 1))[0] if rows.num_rows else None

    @_one_request
    def doc_text(self, doc_version: str) -> str:
        """The document text of a version; kept across generations for old citations."""
        text = self._texts.get(doc_version)
        if text is None:
            text = self._stored(read_text_file, self.paths.files.local(self.paths.text(doc_version)))
            if len(self._texts) >= 32:
                self._texts.pop(next(iter(self._texts)))
            self._texts[doc_version] = text
        return text

    @_one_request
    def has_text(self, doc_version: str) -> bool:
        return self.paths.files.exists(self.paths.text(doc_version))

    # -- chunks --------------------------------------------------------------

    @_one_request
    def chunk(self, chunk_id: str) -> Chunk | None:
        """One chunk by id, read from its row alone (no table becomes Python objects)."""
        doc_id, separator, _ = chunk_id.rpartition("#tok:")  # f"{doc_id}#tok:{token_start}"
        if not separator:
            return None
        rows = self.generation.rows_of("chunks", doc_id)
        at = pc.index(rows.column("chunk_id"), chunk_id).as_py()
        if at < 0:
            return None
        vector_id = rows.column("vector_id")[at].as_py()
        if vector_id not in self._chunk_cache:  # its row is here: no hits file is read (fetched, in a bucket)
            self._keep_chunks([vector_id], rows.slice(at, 1).to_pylist())
        return self._chunk_cache[vector_id]

    @_one_request
    def chunks_of(self, doc_id: str) -> list[Chunk]:
        return chunk_records(self.generation.rows_of("chunks", doc_id))

    @property
    @_one_request
    def n_chunks(self) -> int:
        return self.generation.manifest.n_chunks

    @_one_request
    def chunk_at_vector(self, vector_id: int) -> Chunk:
        return self.chunks_at_vectors([vector_id])[0]

    @_one_request
    def chunks_at_vectors(self, vector_ids) -> list[Chunk]:
        """The chunks of ``vector_ids`` in their order (a search's hits), those not yet kept read together
        from their segments' hits files (``LiveSegments.chunks_at_vectors``)."""
        ids = [int(v) for v in vector_ids]
        missing = [v for v in dict.fromkeys(ids) if v not in self._chunk_cache]
        if missing:
            self._keep_chunks(missing, self.generation.chunks_at(missing))
        return [self._chunk_cache[v] for v in ids]

    def _keep_chunks(self, vector_ids: list[int], rows: list[dict]) -> None:
        """The chunks of these rows (``to_pylist`` form), kept by vector id (at most ``CHUNKS_KEPT``)."""
        if len(self._chunk_cache) + len(vector_ids) > CHUNKS_KEPT:
            self._chunk_cache.clear()
        for vector_id, row in zip(vector_ids, rows):
            self._chunk_cache[vector_id] = chunk_of_row(row)

    # -- offset maps ---------------------------------------------------------

    @_one_request
    def pdf_pages(self, doc_id: str) -> list[PdfPage]:
        return pdf_page_records(self.generation.rows_of("pdf_pages", doc_id))

    @_one_request
    def pdf_char_runs(self, doc_id: str) -> list[PdfCharRun]:
        return pdf_char_runs(self.generation.rows_of("pdf_chars", doc_id))

    @_one_request
    def pdf_char_table(self, doc_id: str) -> pa.Table:
        return self.generation.rows_of("pdf_chars", doc_id)

    @_one_request
    def html_runs(self, doc_id: str) -> list[HtmlRun]:
        return html_run_records(self.generation.rows_of("html_map", doc_id))

    # Built once per document and kept, the least recently used dropped first: what the
    # verifier, the drift sweep, the chunk inspector and the viewer all ask for.

    @_one_request
    def pdf_char_map(self, doc_id: str) -> PdfCharMap:
        """Glyph boxes of a PDF by character offset: rectangles of any span."""
        return self._kept("pdf_char_map", doc_id, lambda: PdfCharMap.from_table(
            self.pdf_char_table(doc_id), self.doc_text(self._require(doc_id).doc_version)))

    @_one_request
    def html_box_map(self, doc_id: str) -> PdfCharMap | None:
        """Character boxes of an HTML page's browser layout (``build --html-layout``); None without."""
        return self._box_map("html_box_map", "html_boxes", doc_id)

    @_one_request
    def html_source_map(self, doc_id: str) -> HtmlSourceMap:
        """Decoded-source positions of an HTML document's text by character offset."""
        return self._kept("html_source_map", doc_id, lambda: HtmlSourceMap.from_table(
            self.generation.rows_of("html_map", doc_id)))

    @_one_request
    def office_source_map(self, doc_id: str) -> OfficeSourceMap:
        """Part ranges, slides or sheets, and cells of a DOCX, PPTX or XLSX by character offset."""
        return self._kept("office_source_map", doc_id, lambda: OfficeSourceMap(
            office_run_records(self.generation.rows_of("office_map", doc_id)),
            tuple(office_page_records(self.generation.rows_of("office_pages", doc_id))),
            tuple(office_cell_records(self.generation.rows_of("office_cells", doc_id)))))

    @_one_request
    def office_box_map(self, doc_id: str) -> PdfCharMap | None:
        """Glyph boxes of an office document on its pages as LibreOffice rendered them; None without."""
        return self._box_map("office_box_map", "office_boxes", doc_id)

    def _box_map(self, kind: str, table: str, doc_id: str) -> PdfCharMap | None:
        """A document's rows of a table in the shape of pdf_chars as a map (kept); None without rows."""
        def build() -> PdfCharMap | None:
            rows = self.generation.rows_of(table, doc_id)
            if rows.num_rows == 0:
                return None
            return PdfCharMap.from_table(rows, self.doc_text(self._require(doc_id).doc_version))

        return self._kept(kind, doc_id, build)

    @_one_request
    def office_render_page(self, doc_id: str, page: int) -> PdfPage | None:
        """One page (1-based) of an office document as LibreOffice rendered it: its size."""
        return self._kept("office_render_pages", doc_id, lambda: {
            p.page: p for p in pdf_page_records(self.generation.rows_of("office_render_pages", doc_id))}).get(page)

    @_one_request
    def office_shapes(self, doc_id: str) -> tuple[OfficeShape, ...]:
        """A PPTX's text shapes with their frames on their slides, by text offset."""
        return self._kept("office_shapes", doc_id, lambda: tuple(
            office_shape_records(self.generation.rows_of("office_shapes", doc_id))))

    @_one_request
    def hidden_text(self, doc_id: str) -> HiddenText:
        """The runs of a document's text that a reader cannot see, with their reasons."""
        return self._kept("hidden_text", doc_id, lambda: HiddenText(
            hidden_run_records(self.generation.rows_of("hidden_text", doc_id))))

    @_one_request
    def pdf_page(self, doc_id: str, page: int) -> PdfPage | None:
        """One page of a PDF (1-based): its size as displayed and its printed label."""
        return self._kept("pdf_pages", doc_id, lambda: {p.page: p for p in self.pdf_pages(doc_id)}).get(page)

    @_one_request
    def page_labels(self, doc_id: str) -> dict[int, str]:
        """Page number -> printed page label ("" where the PDF defines none)."""
        return self._kept("page_labels", doc_id, lambda: {p.page: p.label for p in self.pdf_pages(doc_id)})

    def _kept(self, kind: str, doc_id: str, build: Callable[[], object]):
        key = (kind, doc_id)
        if key not in self._maps:  # (a map may be None: kept as well)
            value = build()
            if len(self._maps) >= MAPS_KEPT:
                self._maps.popitem(last=False)
            self._maps[key] = value
        else:
            value = self._maps[key]
            self._maps.move_to_end(key)
        return value

    @_one_request
    def decoded_source(self, doc_id: str) -> str:
        doc = self._require(doc_id)
        if doc.media_type is not MediaType.HTML:
            raise IndexFormatError(f"{doc_id} is not an HTML document")
        return self._stored(read_text_file, self.decoded_source_path(doc_id))

    @_one_request
    def decoded_source_path(self, doc_id: str) -> Path:
        """The stored HTML source as decoded (what its src offsets index), on this machine."""
        return self.paths.files.local(self.paths.decoded_source(self._require(doc_id).source_sha256))

    @_one_request
    def source_path(self, doc_id: str) -> Path:
        """The stored copy of the original file (what the viewer renders); for a PDF opened with a
        password, its copy without encryption (the password is never stored)."""
        doc = self._require(doc_id)
        if doc.media_type is MediaType.PDF:
            decrypted = self.paths.decrypted_source(doc.source_sha256)
            if self.paths.files.exists(decrypted):
                return self.paths.files.local(decrypted)
        return self.paths.files.local(self.paths.source(doc.source_sha256, Path(doc_id).suffix))

    @_one_request
    def office_package_path(self, doc_id: str) -> Path:
        """The zip an office document's map points into: the stored file, or for a legacy
        .doc/.ppt/.xls the copy LibreOffice converted it to."""
        doc = self._require(doc_id)
        converted = converted_suffix(Path(doc_id).suffix)
        return self.paths.files.local(self.paths.converted_source(doc.source_sha256, converted)) if converted \
            else self.source_path(doc_id)

    @_one_request
    def rendered_path(self, doc_id: str) -> Path | None:
        """The PDF LibreOffice rendered an office document to (its boxes lie on its pages), if kept."""
        engine = self.manifest.office_layout
        if not engine:
            return None
        path = self.paths.files.local(self.paths.rendered_source(self._require(doc_id).source_sha256, engine))
        return path if path.is_file() else None

    def _stored(self, read: Callable[[Path], str], path: Path) -> str:
        try:
            return read(path)
        except IndexFormatError:
            if self.generation.dir.is_dir():
                raise
            raise IndexFormatError(
                f"generation {self.generation.name} has been retired by a later build (the last --keep generations "
                f"are kept): {path.name} is gone; open the index again, or read the live generation"
            ) from None

    def _require(self, doc_id: str) -> DocumentRecord:
        doc = self.document(doc_id)
        if doc is None:
            raise IndexFormatError(f"{doc_id}: no such document in generation {self.generation.name}")
        return doc

    # -- search --------------------------------------------------------------

    @_one_request
    def search(self, query: str, k: int = 5, mode: SearchMode | str | None = None,
               where: str | None = None) -> list[SearchHit]:
        """The ``k`` best chunks for ``query``, best first.

        ``mode``: ``dense`` (embeddings), ``lexical`` (BM25) or ``hybrid`` (both, fused by
        trust-weighted scores: ``index.search.fusion``); None: ``index.search.modes.DEFAULT_MODE`` (dense for a generation built
        before the lexical index). A lexical search never loads the embedding model.
        ``where``: a filter on the documents, applied before ranking (``index.search.filters``):

        >>> idx.search("termination notice", k=5, where="doc_id LIKE 'contracts/%'")   # doctest: +SKIP
        """
        from index.search.modes import search

        return search(self, query, k, mode, where)

    @_one_request
    def allowed_vector_ids(self, where: str) -> np.ndarray:
        """The vector ids of the chunks of the documents ``where`` keeps, ascending (kept for
        the last few filters of this generation: a filter is usually asked again and again)."""
        from index.search.filtered import allowed_vector_ids
        from index.search.filters import compile_filter

        allowed = self._filters.get(where)
        if allowed is None:
            allowed = allowed_vector_ids(self.generation, compile_filter(where))
            if len(self._filters) >= FILTERS_KEPT:
                self._filters.pop(next(iter(self._filters)))
            self._filters[where] = allowed
        return allowed

    @_one_request
    def documents_where(self, where: str) -> list[str]:
        """The doc_ids of the live documents ``where`` keeps (what a filter selects, to show it)."""
        from index.search.filtered import kept_doc_ids
        from index.search.filters import compile_filter

        return kept_doc_ids(self.generation, compile_filter(where))

    def lexical(self):
        """The BM25 index of this generation (read once, on first lexical search)."""
        if self._lexical is None:
            from index.search.lexical import LexicalIndex

            generation = self.generation
            parts = [(segment.lexical_table(), generation.live.dead_vector_ids(segment)) for segment in generation.segments]
            self._lexical = LexicalIndex(parts, self.n_chunks, generation.live.live_tokens, str(generation.dir))
        return self._lexical

    @_one_request
    def embedder(self) -> Embedder:
        """The model this index was built with: the one passed in, or loaded once on first search."""
        if self._embedder is None:
            from index.search.modes import load_embedder

            self._embedder = load_embedder(self.manifest)
        return self._embedder


def open_index(root: str | Path, generation: str | None = None, *, embedder: Embedder | None = None,
               cache: str | Path | None = None, cache_bytes: int | None = None) -> Index:
    """The index at ``root`` (a folder or an object store's URL): its live generation, followed as
    builds publish (or a named one, kept)."""
    return Index(root, generation, embedder=embedder, cache=cache, cache_bytes=cache_bytes)


def local_index(root: str | Path, cache: str | Path | None = None) -> Path:
    """The folder to read the index at ``root`` from: itself, or for an object store's URL its local
    copy, first brought up to the bucket's live generation (``ingest.store.bucket``)."""
    return local_copy(str(root), cache) if is_store_url(root) else Path(local_path_of(root))
