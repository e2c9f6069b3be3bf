"""Where things live inside an index folder: the names of the on-disk format.

```
INDEX/
  CURRENT                 name of the live generation, replaced atomically
  LOCK                    held by the one build running on this index
  segments/<seg>/         immutable rows of some documents: every table, vectors.f32, lexical.parquet, segment.json
  ann/<template>/         a trained empty FAISS index (template.faiss) and each segment's shard of it
  generations/<gen>/      one complete, immutable generation: manifest.json (its segments),
                          deleted.parquet (documents it masks in them); in a bucket, claim.json
                          (the build that holds the name)
  texts/<hex>.txt         document texts by doc_version, shared by generations
  sources/<sha256>.<ext>  original files by content hash (the viewer renders them)
  sources/<sha256>.decoded.html   HTML sources as decoded: what src offsets index
  sources/<sha256>.decrypted.pdf  a PDF opened with a password, without encryption: what the viewer renders
  sources/<sha256>.rendered-<engine>.pdf  an office document as LibreOffice rendered it: the pages its boxes are on
  sources/<sha256>.converted.<ext>  a legacy .doc/.ppt/.xls converted by LibreOffice: what its map points into
```

The names are the contract: ``ingest`` writes these files (``ingest.store.publish``),
``index`` reads them (``index.store``). Neither spells a file name itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from schemas.errors import IndexFormatError

CURRENT = "CURRENT"
LOCK = "LOCK"
TABLE_FILES = {
    "documents": "documents.parquet",
    "chunks": "chunks.parquet",
    "pdf_chars": "pdf_chars.parquet",
    "pdf_pages": "pdf_pages.parquet",
    "html_map": "html_map.parquet",
    "hidden_text": "hidden_text.parquet",
    "html_boxes": "html_boxes.parquet",
    "office_map": "office_map.parquet",
    "office_pages": "office_pages.parquet",
    "office_cells": "office_cells.parquet",
    "office_boxes": "office_boxes.parquet",
    "office_render_pages": "office_render_pages.parquet",
    "office_shapes": "office_shapes.parquet",
}
MANIFEST = "manifest.json"
SEGMENT_MANIFEST = "segment.json"
FAISS_FILE = "vectors.faiss"
VECTORS_FILE = "vectors.f32"  # a segment's raw float32 rows, vector_id - its base: the next build's embedding cache
LEXICAL_FILE = "lexical.parquet"  # a segment's BM25 postings by token (counts and lengths, not weights)
# A segment's chunks table again, as an uncompressed Arrow IPC file: a search reads its hits' rows from
# the mapping without decoding anything (one Parquet row group of chunks costs ~1 ms to decode; a row
# here ~0.01 ms). Parquet stays the table DuckDB and Polars read; this is the reader's copy of it.
HITS_FILE = "chunks.arrow"
DELETED_FILE = "deleted.parquet"  # (segment, doc_id): the documents a generation masks in its segments
# Every file of a segment besides its manifest, in the order they are checked.
SEGMENT_FILES = (*TABLE_FILES.values(), VECTORS_FILE, LEXICAL_FILE, HITS_FILE)
# Every file of a complete generation besides its manifest.
GENERATION_FILES = (DELETED_FILE,)
# In an index in a bucket, a generation's first object, written before any other under its name and
# only where none is (``If-None-Match``): of two builds that chose one name, one writes under it.
CLAIM = "claim.json"


class IndexFiles:
    """How a reader gets at the files under an index's root: here, mapped from the folder, every one
    when its generation is opened (a mapping outlives the file's removal by a later build). An index in
    a bucket fetches them on first read instead, byte ranges of the tables (``ingest.store.ranged``)."""

    lazy = False  # whether a file is opened on first read, not with its generation

    def map(self, path: Path) -> pa.NativeFile:
        """The file to read from at random (``FileNotFoundError`` where there is none)."""
        return pa.memory_map(str(path))

    def local(self, path: Path) -> Path:
        """A path on this machine holding the whole file (fetched first, for an index in a bucket);
        ``path`` itself where there is no such file: its reader says it is missing."""
        return path

    def exists(self, path: Path) -> bool:
        return path.is_file()

    def prefetch(self, paths: list[Path]) -> None:
        """Fetch the ends of these files (their Parquet footers) together, ahead of their reads."""


LOCAL_FILES = IndexFiles()


@dataclass(frozen=True, slots=True)
class IndexPaths:
    root: Path
    files: IndexFiles = field(default=LOCAL_FILES, compare=False, repr=False)

    @property
    def current(self) -> Path:
        return self.root / CURRENT

    @property
    def lock(self) -> Path:
        return self.root / LOCK

    @property
    def generations(self) -> Path:
        return self.root / "generations"

    @property
    def segments(self) -> Path:
        return self.root / "segments"

    def segment(self, name: str) -> Path:
        return self.segments / name

    @property
    def ann(self) -> Path:
        return self.root / "ann"

    def ann_template(self, template: str) -> Path:
        """The trained, empty FAISS index every shard of a template is a copy of."""
        return self.ann / template / "template.faiss"

    def ann_shard(self, template: str, segment: str) -> Path:
        """A segment's vectors in a copy of ``template`` (ids: its vector ids); beside it, ``.json``
        holds its checksum."""
        return self.ann / template / f"{segment}.faiss"

    @property
    def texts(self) -> Path:
        return self.root / "texts"

    @property
    def sources(self) -> Path:
        return self.root / "sources"

    def generation(self, name: str) -> Path:
        return self.generations / name

    def text(self, doc_version: str) -> Path:
        return self.texts / f"{version_hex(doc_version)}.txt"

    def source(self, source_sha256: str, suffix: str) -> Path:
        return self.sources / f"{source_sha256}{suffix.lower()}"

    def decoded_source(self, source_sha256: str) -> Path:
        return self.sources / f"{source_sha256}.decoded.html"

    def decrypted_source(self, source_sha256: str) -> Path:
        return self.sources / f"{source_sha256}.decrypted.pdf"

    def rendered_source(self, source_sha256: str, engine: str) -> Path:
        """Named by the renderer too: another LibreOffice may lay the pages out otherwise."""
        return self.sources / f"{source_sha256}.rendered-{hashlib.sha256(engine.encode()).hexdigest()[:12]}.pdf"

    def converted_source(self, source_sha256: str, suffix: str) -> Path:
        return self.sources / f"{source_sha256}.converted{suffix.lower()}"


# Legacy binary office files, read through the OOXML copy LibreOffice converts them to.
LEGACY_CONVERSIONS = {".doc": ".docx", ".ppt": ".pptx", ".xls": ".xlsx"}


def converted_suffix(suffix: str) -> str | None:
    """The suffix of the converted copy a legacy office file is read through, or None.

    >>> converted_suffix(".DOC"), converted_suffix(".docx")
    ('.docx', None)
    """
    return LEGACY_CONVERSIONS.get(suffix.lower())


def version_hex(doc_version: str) -> str:
    algo, _, digest = doc_version.partition(":")
    if algo != "sha256" or len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
        raise IndexFormatError(f"not a doc_version: {doc_version!r}")
    return digest


def read_current(paths: IndexPaths) -> str | None:
    """The name of the live generation, or None when no build has published one."""
    try:
        name = paths.current.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return name or None
