"""A table's live rows for DuckDB, Polars or any Parquet reader: its segments' files less the
documents the live generation masks in them.

A generation reads segments (``schemas.segments``); a document changed or removed since a segment
was written is masked there by the generation's ``deleted.parquet`` until a merge drops its rows.
Reading a table's files as they are would see those rows too; these helpers apply the mask.

>>> import duckdb, index                                                    # doctest: +SKIP
>>> duckdb.sql(index.live_sql("build/sample-index", "chunks"))              # doctest: +SKIP
>>> index.live_frame("build/sample-index", "chunks").collect()              # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

from schemas.errors import IndexFormatError
from schemas.layout import DELETED_FILE, TABLE_FILES, IndexPaths, read_current
from schemas.manifest import read_manifest


def live_files(root: str | Path, table: str) -> list[tuple[Path, Path | None, str]]:
    """(the table's file in each segment, the generation's deletions file, the segment's name)."""
    if table not in TABLE_FILES:
        raise IndexFormatError(f"no table {table!r}: one of {', '.join(TABLE_FILES)}")
    from index.reader import local_index

    paths = IndexPaths(local_index(root))  # an index in a bucket: its local copy, brought up to date
    name = read_current(paths)
    if name is None:
        raise IndexFormatError(f"{paths.root}: no index here (no CURRENT); run `spanindex build` first")
    manifest = read_manifest(paths.generation(name))
    deleted = paths.generation(name) / DELETED_FILE
    return [(paths.segment(s.name) / TABLE_FILES[table], deleted if s.n_deleted else None, s.name)
            for s in manifest.segments]


def live_sql(root: str | Path, table: str) -> str:
    """A SQL query (DuckDB's ``read_parquet``) of a table's live rows, to use as a subquery or a view."""
    parts = []
    for path, deleted, segment in live_files(root, table):
        query = f"SELECT * FROM read_parquet({_quoted(path)})"
        if deleted is not None:
            query += (f" WHERE doc_id NOT IN (SELECT doc_id FROM read_parquet({_quoted(deleted)}) "
                      f"WHERE segment = {_quoted(segment)})")
        parts.append(query)
    return "\nUNION ALL ".join(parts) if parts else "SELECT NULL AS doc_id WHERE false"


def live_frame(root: str | Path, table: str):
    """A Polars ``LazyFrame`` of a table's live rows."""
    import polars as pl

    frames = []
    for path, deleted, segment in live_files(root, table):
        frame = pl.scan_parquet(path)
        if deleted is not None:
            masked = pl.scan_parquet(deleted).filter(pl.col("segment") == segment).select("doc_id")
            frame = frame.join(masked, on="doc_id", how="anti")
        frames.append(frame)
    return pl.concat(frames, how="vertical") if frames else pl.LazyFrame()


def _quoted(value) -> str:
    return "'" + str(value).replace("'", "''") + "'"
