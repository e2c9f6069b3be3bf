"""Two indexes hold the same live generation: the comparison that a build on Ray, or of a corpus
in a bucket, is held to against a local build of the same files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from index.fsck import fsck
from index.store import Generation
from schemas.layout import IndexPaths, read_current

TABLES = ("documents", "chunks", "pdf_chars", "pdf_pages", "html_map", "hidden_text", "office_map", "office_pages",
          "office_cells")


def live_generation(index_dir: Path) -> Generation:
    paths = IndexPaths(Path(index_dir))
    return Generation(paths, read_current(paths))


def assert_same_generation(mine: Path, theirs: Path, atol: float, same_files: bool = True,
                           documents_except: tuple[str, ...] = ()) -> None:
    """Row for row the same tables, vectors equal within ``atol``, and (unless an index keeps
    older generations' texts) the same texts and sources. ``documents_except``: columns of the
    documents table that say where the files were read (an object's URL, mtime and ETag), left out."""
    a, b = live_generation(mine), live_generation(theirs)
    for name in TABLES:  # live rows by document (an incremental build keeps unchanged ones in older segments)
        left_out = documents_except if name == "documents" else ()
        assert _by_document(a.table(name), left_out) == _by_document(b.table(name), left_out), f"{name} differs"
    assert a.manifest.documents_by_status == b.manifest.documents_by_status
    mine_vectors, theirs_vectors = _vectors_by_chunk(a), _vectors_by_chunk(b)
    assert mine_vectors.keys() == theirs_vectors.keys()
    for chunk_id, vector in mine_vectors.items():
        np.testing.assert_allclose(vector, theirs_vectors[chunk_id], atol=atol, rtol=0)
    for folder in ("texts", "sources") if same_files else ():
        names = sorted(p.name for p in (Path(mine) / folder).iterdir())
        assert names == sorted(p.name for p in (Path(theirs) / folder).iterdir()), folder
    assert fsck(mine) == []


def _by_document(table, left_out: tuple[str, ...] = ()) -> list[dict]:
    """A table's rows in doc_id order, each document's in its own order, vector ids left out."""
    table = table.drop_columns([c for c in ("vector_id", *left_out) if c in table.column_names])
    rows = table.to_pylist()
    return [rows[i] for i in sorted(range(len(rows)), key=lambda i: (rows[i]["doc_id"], i))]


def _vectors_by_chunk(generation) -> dict[str, np.ndarray]:
    ids, vectors = generation.vectors()
    row_of = {v: i for i, v in enumerate(ids.tolist())}
    chunks = generation.table("chunks", ["chunk_id", "vector_id"])
    return {c: vectors[row_of[v]] for c, v in zip(chunks.column("chunk_id").to_pylist(), chunks.column("vector_id").to_pylist())}
