"""What a build takes from the live generation: unchanged documents and known embeddings.

An unchanged file (same source sha256) is carried over row for row, with new
vector ids. A chunk whose normalised text was embedded before, by the same
model, gets the stored vector instead of a new embedding.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from index.layout import IndexPaths, read_current
from index.store import Generation
from ingest.embed import Embedder
from ingest.parse import PARSER_VERSION
from ingest.write import GenerationWriter
from schemas.errors import IndexFormatError
from schemas.records import DocumentRecord
from schemas.tables import document_records

MAP_TABLES = ("pdf_pages", "pdf_chars", "html_map")


@dataclass(slots=True, eq=False)
class LiveGeneration:
    generation: Generation
    files: dict[str, str]  # doc_id -> source sha256
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
            generation = Generation(paths, name)
        except IndexFormatError as exc:
            return None, f"live generation unreadable ({exc}): rebuilding from scratch"
        m = generation.manifest
        differences = [
            what
            for what, differs in [
                ("embedding model", m.model_id != embedder.model_id or m.model_dim != embedder.dim),
                ("chunker settings", m.chunker != settings.chunker),
                ("normaliser version", m.normalizer_version != normalizer_version),
                ("parser version", m.parser_version != PARSER_VERSION),
            ]
            if differs
        ]
        if differences:
            return None, f"{', '.join(differences)} changed since generation {name}: full rebuild"
        chunks = generation.table("chunks", ["embed_sha256", "vector_id"])
        embed_cache = dict(zip(chunks.column("embed_sha256").to_pylist(), chunks.column("vector_id").to_pylist()))
        documents = generation.table("documents", ["doc_id", "source_sha256"])
        files = dict(zip(documents.column("doc_id").to_pylist(), documents.column("source_sha256").to_pylist()))
        return cls(generation, files, embed_cache, generation.vectors()), ""

    def document(self, doc_id: str) -> DocumentRecord:
        return document_records(self.generation.rows_of("documents", doc_id))[0]


class VectorQueue:
    """Gives chunks their vector ids and writes their vectors in id order.

    Vectors come from the live generation when the normalised text is known,
    else from the embedder, in batches.
    """

    def __init__(self, writer: GenerationWriter, embedder: Embedder, live: LiveGeneration | None, batch: int) -> None:
        self.writer = writer
        self.embedder = embedder
        self.live = live
        self.batch = batch
        self.next_id = 0
        self.embedded = 0
        self.reused = 0
        self.seconds = 0.0
        self._slots: list[tuple[bool, int]] = []  # (from live, live vector id | pending text index)
        self._texts: list[str] = []
        self._pending_keys: dict[str, int] = {}

    def assign(self, chunks: pa.Table, embed_texts: list[str] | None) -> pa.Table:
        """``chunks`` with vector ids from this generation's sequence, their vectors queued."""
        keys = chunks.column("embed_sha256").to_pylist()
        cache = self.live.embed_cache if self.live else {}
        for i, key in enumerate(keys):
            if key in cache:
                self._slots.append((True, cache[key]))
                self.reused += 1
            elif key in self._pending_keys:
                self._slots.append((False, self._pending_keys[key]))
                self.reused += 1
            else:
                if embed_texts is None:
                    raise IndexFormatError(f"chunk {chunks.column('chunk_id')[i]} has no stored vector")
                self._pending_keys[key] = len(self._texts)
                self._slots.append((False, len(self._texts)))
                self._texts.append(embed_texts[i])
                self.embedded += 1
        ids = pa.array(np.arange(self.next_id, self.next_id + len(keys), dtype=np.int64))
        self.next_id += len(keys)
        if len(self._texts) >= self.batch or len(self._slots) >= 16 * self.batch:
            self.flush()
        return chunks.set_column(chunks.schema.get_field_index("vector_id"), "vector_id", ids)

    def flush(self) -> None:
        if not self._slots:
            return
        started = time.perf_counter()
        fresh = self.embedder.embed(self._texts) if self._texts else None
        self.seconds += time.perf_counter() - started
        out = np.empty((len(self._slots), self.embedder.dim), dtype=np.float32)
        from_live = np.fromiter((live for live, _ in self._slots), dtype=bool, count=len(self._slots))
        where = np.fromiter((i for _, i in self._slots), dtype=np.int64, count=len(self._slots))
        if from_live.any():
            out[from_live] = self.live.vectors[where[from_live]]
        if (~from_live).any():
            out[~from_live] = fresh[where[~from_live]]
        self.writer.add_vectors(out)
        self._slots, self._texts, self._pending_keys = [], [], {}

    def written(self) -> np.ndarray:
        return self.writer.vectors_written()


def carry_over(live: LiveGeneration, doc_id: str, writer: GenerationWriter, vectors: VectorQueue) -> DocumentRecord:
    """Copy an unchanged document's rows from the live generation."""
    for table_name in MAP_TABLES:
        writer.add_rows(table_name, live.generation.rows_of(table_name, doc_id))
    chunks = live.generation.rows_of("chunks", doc_id)
    if chunks.num_rows:
        writer.add_rows("chunks", vectors.assign(chunks, None))
    return live.document(doc_id)
