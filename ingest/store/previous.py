"""The generations a build replaces, as the build reads them.

A build reads what earlier builds published: the live generation, to know which documents
it holds and in which segment, and to reuse known vectors; and the generations it keeps, to
know which segments, texts and sources they still reference. It reads segments through the
format's own reader (``schemas.segments``); looking things up for a person is ``index.store``'s job.
"""

from __future__ import annotations

import pyarrow as pa

from schemas.errors import IndexFormatError
from schemas.layout import DELETED_FILE, GENERATION_FILES, IndexPaths
from schemas.manifest import read_manifest
from schemas.records import Manifest
from schemas.segments import LiveSegments, open_segments, read_deleted


class PublishedGeneration:
    """One complete generation on disk; refused (IndexFormatError) when a file is missing."""

    def __init__(self, paths: IndexPaths, name: str) -> None:
        self.paths = paths
        self.name = name
        self.dir = paths.generation(name)
        self.manifest: Manifest = read_manifest(self.dir)
        for file_name in GENERATION_FILES:
            if not (self.dir / file_name).is_file():
                raise IndexFormatError(f"{self.dir / file_name}: missing")
        self.deleted = read_deleted(self.dir / DELETED_FILE, str(self.dir / DELETED_FILE))
        self.live: LiveSegments = open_segments(paths.segments, self.manifest.segments, self.manifest.model_dim,
                                                self.deleted, paths.files)

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """A table's live rows across the segments (or some columns of them)."""
        return self.live.table(name, columns)

    def rows_of(self, name: str, doc_id: str) -> pa.Table | None:
        """The live rows of one document in a table; None when the generation does not hold it."""
        return self.live.rows_of(name, doc_id)
