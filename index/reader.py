"""The index as a reader sees it: documents, chunks, texts and offset maps by id."""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from index.locate import HtmlSourceMap, PdfCharMap
from ingest.hidden import HiddenText
from index.store import Generation, open_generation, read_text_file
from ingest.embed import Embedder
from schemas.errors import IndexFormatError
from schemas.layout import IndexPaths, read_current
from schemas.records import (
    Chunk,
    DocumentRecord,
    HtmlRun,
    MediaType,
    PdfCharRun,
    PdfPage,
    SearchHit,
)
from schemas.tables import (
    CHUNKS,
    chunk_records,
    document_records,
    hidden_run_records,
    html_run_records,
    pdf_char_runs,
    pdf_page_records,
)


MAPS_KEPT = 32  # offset maps of this many (document, kind) pairs stay built


class Index:
    """A read-only view of one generation of an index folder.

    >>> import index
    >>> idx = index.open("build/sample-index")            # doctest: +SKIP
    >>> idx.search("overage price per API call", k=3)[0].doc_id   # doctest: +SKIP
    'pricing/rate-card.pdf'
    """

    def __init__(self, root: str | Path, generation: str | None = None, *, embedder: Embedder | None = None) -> None:
        """``embedder``: the one the index was built with, when it is not a model the manifest
        names (a test double, an embedder of your own); by default the model is loaded on first search."""
        self.paths = IndexPaths(Path(root))
        self.generation: Generation = open_generation(self.paths, generation)
        self.manifest = self.generation.manifest
        self._chunk_rows: dict[str, int] | None = None
        self._doc_rows: dict[str, int] | None = None
        self._chunk_cache: dict[int, Chunk] = {}
        self._texts: dict[str, str] = {}
        self._maps: collections.OrderedDict[tuple[str, str], object] = collections.OrderedDict()
        self._embedder = None
        if embedder is not None:
            from index.search import check_embedder

            self._embedder = check_embedder(embedder, self.manifest)

    # -- documents -----------------------------------------------------------

    def documents(self) -> list[DocumentRecord]:
        return document_records(self.generation.table("documents"))

    def document(self, doc_id: str) -> DocumentRecord | None:
        if self._doc_rows is None:
            ids = self.generation.table("documents").column("doc_id").to_pylist()
            self._doc_rows = {d: i for i, d in enumerate(ids)}
        row = self._doc_rows.get(doc_id)
        if row is None:
            return None
        return document_records(self.generation.table("documents").slice(row, 1))[0]

    def doc_text(self, doc_version: str) -> str:
        """The document text of a version; kept across generations for old citations."""
        text = self._texts.get(doc_version)
        if text is None:
            text = read_text_file(self.paths.text(doc_version))
            if len(self._texts) >= 32:
                self._texts.pop(next(iter(self._texts)))
            self._texts[doc_version] = text
        return text

    def has_text(self, doc_version: str) -> bool:
        return self.paths.text(doc_version).is_file()

    # -- chunks --------------------------------------------------------------

    def chunk(self, chunk_id: str) -> Chunk | None:
        """One chunk by id, read from its row alone (no table becomes Python objects)."""
        if self._chunk_rows is None:
            ids = self.generation.table("chunks", ["chunk_id"]).column("chunk_id").to_pylist()
            self._chunk_rows = {c: i for i, c in enumerate(ids)}
        row = self._chunk_rows.get(chunk_id)
        return None if row is None else self._chunk_at(row)

    def _chunk_at(self, row: int) -> Chunk:
        chunk = self._chunk_cache.get(row)
        if chunk is None:
            table = self.generation.table("chunks")
            chunk = Chunk(**{f.name: table.column(f.name)[row].as_py() for f in CHUNKS})
            if len(self._chunk_cache) >= 4096:
                self._chunk_cache.clear()
            self._chunk_cache[row] = chunk
        return chunk

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        return chunk_records(self.generation.rows_of("chunks", doc_id))

    @property
    def n_chunks(self) -> int:
        return self.generation.manifest.n_chunks

    def chunk_at_vector(self, vector_id: int) -> Chunk:
        # vector ids are assigned in row order: row == vector_id
        return self._chunk_at(int(vector_id))

    # -- offset maps ---------------------------------------------------------

    def pdf_pages(self, doc_id: str) -> list[PdfPage]:
        return pdf_page_records(self.generation.rows_of("pdf_pages", doc_id))

    def pdf_char_runs(self, doc_id: str) -> list[PdfCharRun]:
        return pdf_char_runs(self.generation.rows_of("pdf_chars", doc_id))

    def pdf_char_table(self, doc_id: str) -> pa.Table:
        return self.generation.rows_of("pdf_chars", doc_id)

    def html_runs(self, doc_id: str) -> list[HtmlRun]:
        return html_run_records(self.generation.rows_of("html_map", doc_id))

    # Built once per document and kept, the least recently used dropped first: what the
    # verifier, the drift sweep, the chunk inspector and the viewer all ask for.

    def pdf_char_map(self, doc_id: str) -> PdfCharMap:
        """Glyph boxes of a PDF by character offset: rectangles of any span."""
        return self._kept("pdf_char_map", doc_id, lambda: PdfCharMap.from_table(
            self.pdf_char_table(doc_id), self.doc_text(self._require(doc_id).doc_version)))

    def html_source_map(self, doc_id: str) -> HtmlSourceMap:
        """Decoded-source positions of an HTML document's text by character offset."""
        return self._kept("html_source_map", doc_id, lambda: HtmlSourceMap.from_table(
            self.generation.rows_of("html_map", doc_id)))

    def hidden_text(self, doc_id: str) -> HiddenText:
        """The runs of a document's text that a reader cannot see, with their reasons."""
        return self._kept("hidden_text", doc_id, lambda: HiddenText(
            hidden_run_records(self.generation.rows_of("hidden_text", doc_id))))

    def pdf_page(self, doc_id: str, page: int) -> PdfPage | None:
        """One page of a PDF (1-based): its size as displayed and its printed label."""
        return self._kept("pdf_pages", doc_id, lambda: {p.page: p for p in self.pdf_pages(doc_id)}).get(page)

    def page_labels(self, doc_id: str) -> dict[int, str]:
        """Page number -> printed page label ("" where the PDF defines none)."""
        return self._kept("page_labels", doc_id, lambda: {p.page: p.label for p in self.pdf_pages(doc_id)})

    def _kept(self, kind: str, doc_id: str, build: Callable[[], object]):
        key = (kind, doc_id)
        value = self._maps.get(key)
        if value is None:
            value = build()
            if len(self._maps) >= MAPS_KEPT:
                self._maps.popitem(last=False)
            self._maps[key] = value
        else:
            self._maps.move_to_end(key)
        return value

    def decoded_source(self, doc_id: str) -> str:
        doc = self._require(doc_id)
        if doc.media_type is not MediaType.HTML:
            raise IndexFormatError(f"{doc_id} is not an HTML document")
        return read_text_file(self.paths.decoded_source(doc.source_sha256))

    def source_path(self, doc_id: str) -> Path:
        """The stored copy of the original file (what the viewer renders)."""
        doc = self._require(doc_id)
        return self.paths.source(doc.source_sha256, Path(doc_id).suffix)

    def _require(self, doc_id: str) -> DocumentRecord:
        doc = self.document(doc_id)
        if doc is None:
            raise IndexFormatError(f"{doc_id}: no such document in generation {self.generation.name}")
        return doc

    # -- search --------------------------------------------------------------

    def search(self, query: str, k: int = 5) -> list[SearchHit]:
        from index.search import search

        return search(self, query, k)

    def embedder(self) -> Embedder:
        """The model this index was built with: the one passed in, or loaded once on first search."""
        if self._embedder is None:
            from index.search import load_embedder

            self._embedder = load_embedder(self.manifest)
        return self._embedder


def follow_current(idx: Index) -> Index:
    """The reader of the live generation: ``idx`` itself until a build replaces CURRENT.

    For long-running readers (the viewer server): each request asks, one small file
    read, and after a reindex the new generation is opened, sharing the loaded model
    when the manifest names the same one.
    """
    live = read_current(idx.paths)
    if live is None or live == idx.generation.name:
        return idx
    fresh = Index(idx.paths.root)
    if fresh.manifest.model_id == idx.manifest.model_id and fresh.manifest.model_path == idx.manifest.model_path:
        fresh._embedder = idx._embedder
    return fresh


def open_index(root: str | Path, generation: str | None = None, *, embedder: Embedder | None = None) -> Index:
    """Open the live generation of the index at ``root`` (or a named one)."""
    return Index(root, generation, embedder=embedder)
