"""What a build takes from the live generation: which documents it holds, and known embeddings.

An unchanged file (same source sha256) stays where it is, in its segment. A chunk of a
changed document whose normalised text was embedded before, by the same model, gets the
stored vector instead of a new embedding (``ingest.embed.embedder.VectorQueue``): the
build asks for the chunks of the document's live version, and of any live document with
the same bytes (a moved file), as the document comes, so what it reads follows the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.embed import Embedder
from ingest.formats import PARSER_VERSION, describe
from ingest.store.lexical import TOKENIZER_VERSION
from ingest.store.previous import PublishedGeneration
from ingest.text import LANGUAGE_VERSION
from schemas.errors import IndexFormatError
from schemas.layout import IndexPaths, read_current
from ingest.store.segments import masked_document
from schemas.records import DocStatus, MaskedDocument, OcrSettings


@dataclass(slots=True, eq=False)
class LiveGeneration:
    generation: PublishedGeneration
    files: dict[str, str]  # doc_id -> source sha256
    failed: frozenset[str]  # doc_ids whose row is an error (a password may open one now)
    stats: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # doc_id -> (size, mtime_ns, etag) read at
    embed_cache: dict[str, int] = field(default_factory=dict)  # embed_sha256 -> vector_id, filled by remember()
    _by_source: dict[str, list[str]] = field(default_factory=dict)
    _rows: object = None  # the live documents table
    _row_of: dict[str, int] = field(default_factory=dict)
    _remembered: set[str] = field(default_factory=set)

    @classmethod
    def open_compatible(cls, paths: IndexPaths, settings, embedder: Embedder, normalizer_version: int):
        """The live generation if its rows can be reused by this build, else (None, why not)."""
        if settings.full:
            return None, "--full was asked for"
        name = read_current(paths)
        if name is None:
            return None, "new index"
        try:
            generation = PublishedGeneration(paths, name)
        except IndexFormatError as exc:
            return None, f"live generation unreadable ({exc}): rebuilding from scratch"
        m = generation.manifest
        differences = [
            what
            for what, differs in [
                ("embedding model", m.model_id != embedder.model_id or m.model_dim != embedder.dim),
                # vectors of two backends are never mixed in one index: another one embeds anew
                ("embedding backend", m.embed_backend != str(embedder.backend)),
                ("chunker settings", m.chunker != settings.chunker),
                ("normaliser version", m.normalizer_version != normalizer_version),
                # the chunks' languages choose their stemmers: the postings of both must be one analysis
                ("language identifier version", m.language_version != LANGUAGE_VERSION),
                ("lexical tokenizer version", m.lexical_tokenizer_version != TOKENIZER_VERSION),
                ("parser version", m.parser_version != PARSER_VERSION),
                ("OCR settings", m.ocr != describe(settings.ocr or OcrSettings())),
            ]
            if differs
        ]
        if differences:
            return None, f"{', '.join(differences)} changed since generation {name}: full rebuild"
        # The live documents' rows, columnar: an unchanged document's record is one row of it
        # (reading it from its row group, document by document, cost a reindex 0.5 s per 1,000 files).
        parts = list(generation.live.live_tables("documents"))
        documents = pa.concat_tables([rows for _, rows in parts]) if parts else generation.table("documents")
        doc_ids = documents.column("doc_id").to_pylist()
        files = dict(zip(doc_ids, documents.column("source_sha256").to_pylist()))
        failed = frozenset(d for d, s in zip(files, documents.column("status").to_pylist()) if s == DocStatus.ERROR)
        stats = {}
        for segment, rows in parts:  # a file is known by its stat only where its segment vouches for the mtime;
            # an object by its ETag too, at any age (a rewrite within LastModified's second changes it)
            trusted_before = segment.ref.mtimes_trusted_before_ns
            stats.update((d, (size, mtime, etag)) for d, size, mtime, etag in zip(
                rows.column("doc_id").to_pylist(), rows.column("source_bytes").to_pylist(),
                rows.column("source_mtime_ns").to_pylist(), rows.column("source_etag").to_pylist())
                if 0 < mtime and (etag or mtime < trusted_before))
        live = cls(generation, files, failed, stats=stats, _rows=documents, _row_of={d: i for i, d in enumerate(doc_ids)})
        for doc_id, sha in files.items():
            live._by_source.setdefault(sha, []).append(doc_id)
        return live, ""

    def remember(self, doc_id: str, source_sha256: str) -> list[tuple[str, int]]:
        """Add to ``embed_cache`` the chunks of the live documents a new version of ``doc_id``
        may share text with: its own live version, and live documents with the same bytes.
        Returns what it added, (embed_sha256, vector_id) each."""
        added = []
        for known in [doc_id, *self._by_source.get(source_sha256, ())[:1]]:
            if known in self._remembered or known not in self.files:
                continue
            self._remembered.add(known)
            chunks = self.generation.rows_of("chunks", known)
            if chunks is not None and chunks.num_rows:
                for key, vector_id in zip(chunks.column("embed_sha256").to_pylist(), chunks.column("vector_id").to_pylist()):
                    if key not in self.embed_cache:
                        self.embed_cache[key] = vector_id
                        added.append((key, vector_id))
        return added

    def documents(self, doc_ids: list[str]) -> pa.Table:
        """The live rows of ``doc_ids`` in the documents table read at open (a one-row slice per
        document, made into a record, cost a reindex 5.7 s per 100,000 unchanged files)."""
        return self._rows.take(pa.array([self._row_of[d] for d in doc_ids], pa.int64()))

    def metadata_changed(self, fields: dict[str, str], none: str) -> set[str]:
        """The live documents whose stored user fields differ from ``fields`` (doc_id -> canonical
        JSON; ``none``: what a document without fields stores), found once for the build from the
        documents read at open, not per unchanged file."""
        metadata = self._rows.column("metadata")
        held = self._rows.filter(pc.not_equal(metadata, none))
        stored = dict(zip(held.column("doc_id").to_pylist(), held.column("metadata").to_pylist()))
        return {doc_id for doc_id in stored.keys() | fields.keys()
                if doc_id in self._row_of and fields.get(doc_id, none) != stored.get(doc_id, none)}

    def masked_document(self, doc_id: str) -> MaskedDocument | None:
        """What masking a live document takes out (None: the generation does not hold it)."""
        return masked_document(self.generation.live, doc_id)


class KnownVectors:
    """The live generation's vectors by vector id, as ``VectorQueue`` indexes them."""

    def __init__(self, live: LiveGeneration) -> None:
        self.live = live

    def __getitem__(self, vector_ids) -> np.ndarray:
        return self.live.generation.live.vectors_of(np.asarray(vector_ids, dtype=np.int64))
