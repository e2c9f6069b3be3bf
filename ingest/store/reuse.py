"""What a build takes from the live generation: unchanged documents and known embeddings.

An unchanged file (same source sha256) is carried over row for row, with new
vector ids. A chunk whose normalised text was embedded before, by the same
model, gets the stored vector instead of a new embedding (``ingest.embed.embedder.VectorQueue``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.embed import Embedder, VectorQueue
from ingest.formats import PARSER_VERSION, describe
from ingest.store.previous import PublishedGeneration
from ingest.store.write import GenerationWriter
from schemas.errors import IndexFormatError
from schemas.layout import IndexPaths, read_current
from schemas.records import DocStatus, DocumentRecord, OcrSettings
from schemas.tables import DOCUMENT_MAP_TABLES, document_records

MAP_TABLES = DOCUMENT_MAP_TABLES


@dataclass(slots=True, eq=False)
class LiveGeneration:
    generation: PublishedGeneration
    files: dict[str, str]  # doc_id -> source sha256
    failed: frozenset[str]  # doc_ids whose row is an error (a password may open one now)
    embed_cache: dict[str, int]  # embed_sha256 -> vector_id
    vectors: np.ndarray

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
                ("parser version", m.parser_version != PARSER_VERSION),
                ("OCR settings", m.ocr != describe(settings.ocr or OcrSettings())),
            ]
            if differs
        ]
        if differences:
            return None, f"{', '.join(differences)} changed since generation {name}: full rebuild"
        chunks = generation.table("chunks", ["embed_sha256", "vector_id"])
        embed_cache = dict(zip(chunks.column("embed_sha256").to_pylist(), chunks.column("vector_id").to_pylist()))
        documents = generation.table("documents", ["doc_id", "source_sha256", "status"])
        files = dict(zip(documents.column("doc_id").to_pylist(), documents.column("source_sha256").to_pylist()))
        failed = frozenset(d for d, s in zip(files, documents.column("status").to_pylist()) if s == DocStatus.ERROR)
        return cls(generation, files, failed, embed_cache, generation.vectors()), ""

    def document(self, doc_id: str) -> DocumentRecord:
        return document_records(self.generation.rows_of("documents", doc_id))[0]


def carry_over(live: LiveGeneration, doc_id: str, writer: GenerationWriter, vectors: VectorQueue) -> DocumentRecord:
    """Copy an unchanged document's rows from the live generation."""
    for table_name in MAP_TABLES:
        writer.add_rows(table_name, live.generation.rows_of(table_name, doc_id))
    chunks = live.generation.rows_of("chunks", doc_id)
    if chunks.num_rows:
        writer.add_rows("chunks", vectors.assign(chunks, None))
    return live.document(doc_id)
