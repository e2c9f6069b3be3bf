"""After a new generation is live: retire old generations and unreferenced files.

Segments, texts and sources are shared by generations. A segment that no kept generation
names is removed (a reader that opened it has its files mapped already). One that no kept generation
references is removed, unless --keep-texts asks to keep every text so that
citations made against any old version can still be shown as they were.
"""

from __future__ import annotations

import shutil

from ingest.store.previous import PublishedGeneration
from schemas.errors import IndexFormatError
from schemas.layout import IndexPaths, read_current, version_hex
from schemas.manifest import ann_params, read_manifest


def retire_generations(paths: IndexPaths, *, keep: int = 3, keep_texts: bool = False) -> list[str]:
    """Remove all but the newest ``keep`` generations (the live one always stays)."""
    live = read_current(paths)
    names = sorted(p.name for p in paths.generations.iterdir() if p.name.isdigit())
    kept = set(names[-max(keep, 1) :]) | ({live} if live else set())
    retired = [n for n in names if n not in kept]
    for name in retired:
        shutil.rmtree(paths.generation(name), ignore_errors=True)
    remove_unreferenced_segments(paths)
    _collect_garbage(paths, sorted(kept), keep_texts)
    return retired


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
