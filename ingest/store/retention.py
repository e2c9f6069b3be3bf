"""After a new generation is live: retire old generations and unreferenced files.

Segments, texts and sources are shared by generations. A segment that no kept generation
names is removed (a reader that opened it has its files mapped already). One that no kept generation
references is removed, unless --keep-texts asks to keep every text so that
citations made against any old version can still be shown as they were.
"""

from __future__ import annotations

import posixpath
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ingest.store.previous import PublishedGeneration
from schemas.errors import IndexFormatError
from schemas.layout import IndexPaths, converted_suffix, read_current, version_hex
from schemas.tables import SCHEMAS
from schemas.manifest import ann_params, read_manifest


def retire_generations(paths: IndexPaths, *, keep: int = 3, keep_texts: bool = False, sweep: bool = False) -> list[str]:
    """Remove all but the newest ``keep`` generations (the live one always stays), and the texts
    and sources only they referenced. ``sweep``: every file of texts/ and sources/ that no kept
    generation references goes (a listing of both folders: a compaction's, not each build's)."""
    retired, kept = retirement(paths, keep)
    swept = sweep or (retired and not keep_texts and not _remove_retired_files(paths, retired, kept))
    for name in retired:
        shutil.rmtree(paths.generation(name), ignore_errors=True)
    remove_unreferenced_segments(paths)
    if swept:
        _collect_garbage(paths, sorted(kept), keep_texts)
    return retired


def retirement(paths: IndexPaths, keep: int) -> tuple[list[str], list[str]]:
    """(the generations ``retire_generations`` retires, those it keeps): all but the newest ``keep``, the live one kept."""
    live = read_current(paths)
    names = sorted(p.name for p in paths.generations.iterdir() if p.name.isdigit())
    kept = set(names[-max(keep, 1) :]) | ({live} if live else set())
    return [n for n in names if n not in kept], sorted(kept)


def remove_unreferenced_segments(paths: IndexPaths) -> list[str]:
    """Remove the segments no generation on disk names (never one a kept generation reads)."""
    if not paths.segments.is_dir():
        return []
    referenced: set[str] = set()
    templates: set[str] = set()
    for generation in paths.generations.iterdir():
        if not generation.name.isdigit():
            continue
        try:
            manifest = read_manifest(generation)
        except IndexFormatError:
            return []  # cannot tell what is referenced: remove nothing
        referenced.update(ref.name for ref in manifest.segments)
        templates.add(ann_params(manifest).template)
    removed = []
    for segment in paths.segments.iterdir():
        if not segment.name.startswith(".") and segment.name not in referenced:
            shutil.rmtree(segment, ignore_errors=True)
            removed.append(segment.name)
    _remove_unreferenced_shards(paths, referenced, templates)
    return removed


def _remove_unreferenced_shards(paths: IndexPaths, segments: set[str], templates: set[str]) -> None:
    """Vector shards of templates or segments no generation on disk reads (and a build's debris)."""
    if not paths.ann.is_dir():
        return
    for folder in paths.ann.iterdir():
        if folder.name not in templates:
            shutil.rmtree(folder, ignore_errors=True)
            continue
        for path in folder.iterdir():
            segment = path.name.split(".", 1)[0]
            if path.name.startswith(".") or (segment != "template" and segment not in segments):
                path.unlink(missing_ok=True)


def collect_garbage(paths: IndexPaths, *, keep_texts: bool = False) -> None:
    """Remove the texts and sources no kept generation references (after a build that failed)."""
    names = sorted(p.name for p in paths.generations.iterdir() if p.name.isdigit())
    remove_unreferenced_segments(paths)
    _collect_garbage(paths, names, keep_texts)


def _remove_retired_files(paths: IndexPaths, retired: list[str], kept: list[str]) -> bool:
    """Remove the texts and sources of the documents that the retired generations hold and no
    kept one does, by name, without listing the folders (at 100,000 documents a listing cost each
    build 2.9 s). False when a generation cannot be read: the caller sweeps instead."""
    try:
        gone = retired_files(paths, retired, kept)
    except IndexFormatError:
        return False
    for path in gone:
        path.unlink(missing_ok=True)
    return True


def retired_files(paths: IndexPaths, retired: list[str], kept: list[str]) -> list[Path]:
    """Where the texts and sources of the documents that the retired generations hold and no kept
    one does are, by name (some of the names, each source's variants, may name no file);
    ``IndexFormatError`` when a generation cannot be read."""
    gone = _referenced(paths, retired)
    still = _referenced(paths, kept)
    texts = gone.filter(pc.invert(pc.is_in(gone.column("doc_version"), still.column("doc_version"))))
    files = [paths.text(version) for version in pc.unique(texts.column("doc_version")).to_pylist() if version]
    sources = gone.filter(pc.invert(pc.is_in(gone.column("source_sha256"), still.column("source_sha256"))))
    engines = {read_manifest(paths.generation(name)).office_layout for name in retired}
    for doc_id, sha in sorted(set(zip(sources.column("doc_id").to_pylist(), sources.column("source_sha256").to_pylist()))):
        if not sha:
            continue
        suffix = posixpath.splitext(doc_id)[1]
        converted = converted_suffix(suffix)
        files += [paths.source(sha, suffix), paths.decoded_source(sha), paths.decrypted_source(sha),
                  *([paths.converted_source(sha, converted)] if converted else []),
                  *(paths.rendered_source(sha, engine) for engine in sorted(engines) if engine)]
    return files


def _referenced(paths: IndexPaths, names: list[str]) -> pa.Table:
    """doc_id, doc_version and source_sha256 of the live documents of the generations ``names``."""
    columns = ["doc_id", "doc_version", "source_sha256"]
    tables = [PublishedGeneration(paths, name).table("documents", columns) for name in names]
    return pa.concat_tables(tables) if tables else SCHEMAS["documents"].empty_table().select(columns)


def _collect_garbage(paths: IndexPaths, kept: list[str], keep_texts: bool) -> None:
    if keep_texts:
        return  # every text and source stays, so any old citation can be shown as it was
    texts, sources = set(), set()
    for name in kept:
        try:
            documents = PublishedGeneration(paths, name).table("documents", ["doc_version", "source_sha256"])
        except IndexFormatError:
            return  # cannot tell what is referenced: remove nothing
        texts.update(version_hex(v) for v in documents.column("doc_version").to_pylist() if v)
        sources.update(s for s in documents.column("source_sha256").to_pylist() if s)
    if paths.texts.is_dir():
        for path in paths.texts.glob("*.txt"):
            if path.stem not in texts:
                path.unlink(missing_ok=True)
    if paths.sources.is_dir():
        for path in paths.sources.iterdir():
            if path.name.split(".", 1)[0] not in sources and not path.name.startswith("."):
                path.unlink(missing_ok=True)
