"""Compact an index: merge every segment of the live generation into one and publish it.

A build merges a bounded amount at a time (``ingest.store.segments``); ``spanindex compact``
merges everything now, dropping the rows of every masked document, as a RAG team runs it in
a quiet hour. The new generation serves exactly what the old one did: the same documents,
chunk ids, offsets, vectors and BM25 scores, under new vector ids.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ingest.build import BuildReport, vector_index, next_generation_name, remove_debris, writing_index
from ingest.store import BuildLock, deleted_table, fsync_dir, plan_merge, publish
from ingest.store import retire_generations, write_generation, write_merged
from ingest.store import PublishedGeneration
from ingest.corpus import is_store_url
from ingest.store import IndexBucket
from schemas.errors import IndexFormatError, IndexWriteError
from schemas.layout import IndexPaths, read_current
from schemas.segments import open_segments


@dataclass(frozen=True, slots=True)
class CompactReport:
    generation: str  # the generation published ("" when there was nothing to merge)
    segments_before: int
    segments_after: int
    rows_dropped: int  # documents whose masked rows the merge dropped
    seconds: float


def compact_index(index_dir: str | Path, *, keep_generations: int = 3, wait_for_lock: bool = False,
                  index_cache: str | Path | None = None) -> CompactReport:
    """Merge every segment of the live generation into one (nothing when it is one already).
    ``index_dir``: a folder, or an index in a bucket, compacted in its local copy and published as a
    build publishes (``ingest.build.build_index``)."""
    started = time.perf_counter()
    bucket = IndexBucket(str(index_dir), index_cache, error=IndexWriteError) if is_store_url(index_dir) else None
    paths = bucket.paths if bucket else IndexPaths(Path(index_dir))
    with writing_index(paths), BuildLock(paths.lock, wait=wait_for_lock):
        remove_debris(paths)
        found = bucket.bring_up_to_date(every_generation=True, sweep=True) if bucket else None
        live_name = read_current(paths)
        if live_name is None:
            raise IndexFormatError(f"{paths.root}: no index here (no CURRENT); run `spanindex build` first")
        live = PublishedGeneration(paths, live_name)
        m = live.manifest
        names = plan_merge(list(m.segments), everything=True)
        if not names:
            return CompactReport("", len(m.segments), len(m.segments), 0, time.perf_counter() - started)
        name = next_generation_name(paths, above=found.highest_name() if found else "")
        generation_tmp = paths.generations / f".{name}.tmp-{os.getpid()}"
        try:
            merged = write_merged(paths, live.live, names, name, m.next_vector_id, m.model_id, m.model_dim)
            refs = [merged]
            final = open_segments(paths.segments, refs, m.model_dim, {})
            report = BuildReport(generation=name)
            ann, warning = vector_index(paths, final, ann_requested(m), m, merged.n_vectors, report)
            manifest = dataclasses.replace(
                m, generation=name, created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), segments=tuple(refs),
                next_vector_id=merged.vector_base + merged.n_vectors, faiss_factory=ann.factory, ann=ann,
                warnings=tuple(w for w in [warning] if w))
            write_generation(generation_tmp, manifest, deleted_table([]))
            os.rename(generation_tmp, paths.generation(name))
            fsync_dir(paths.generations)
            if bucket:
                bucket.publish(name, found)
            publish(paths, name)
        except BaseException:
            shutil.rmtree(generation_tmp, ignore_errors=True)
            raise
        if bucket:
            with contextlib.suppress(OSError):  # published: the next build removes what this could not
                bucket.collect_garbage(found, keep_generations)
        retire_generations(paths, keep=keep_generations, sweep=True)
    dropped = sum(r.n_deleted for r in m.segments)
    return CompactReport(name, len(m.segments), 1, dropped, time.perf_counter() - started)


def ann_requested(manifest) -> str:
    from schemas.manifest import ann_params

    return ann_params(manifest).requested
