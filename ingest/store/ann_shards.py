"""The vector index as shards: one FAISS index per segment, copies of one trained template.

A segment's vectors never change, so its shard is built once, when the segment is written (or
merged), from the generation's template: an empty index of the planned factory, trained once on a
sample of the live vectors (an inverted file's coarse quantizer; nothing to train for Flat or
HNSW). An inverted file's shard is written without the quantizer (each would copy it: 1.5 MB at
1,024 lists): a reader gives every shard the template's. A reader searches every shard with the manifest's nprobe/efSearch and the segment's masked
vector ids excluded by an ``IDSelector`` (``index.store``), and keeps the best k over all: every
shard of an inverted file visits the same lists (one quantizer), so the hits are those one index
of the live vectors would give, and Flat shards give exact search. A build therefore writes the
shard of its new segment only; the template is trained again (and every shard rebuilt) when the
planned factory changes or the vectors added since training pass ``RETRAIN_CHURN`` of those it
was trained on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

import numpy as np

from ingest.store.faiss_index import (
    RETRAIN_CHURN,
    TRAIN_POINTS_PER_LIST,
    _reserve,
    _stores_ids,
    _training_points,
    add_vectors,
    release_mapped_pages,
    shard_bytes,
)
from ingest.store.publish import fsync_dir, fsync_file
from schemas.ann import AnnParams
from schemas.layout import IndexPaths
from schemas.segments import LiveSegments, SegmentFiles


def keep_reason(live: AnnParams | None, planned: AnnParams, n_new: int, paths: IndexPaths) -> str:
    """Why the live template cannot serve the new generation ("" when it can); ``n_new``: vectors
    embedded for the first time by this build (known vectors move no centroid)."""
    if live is None or not live.template:
        return "no live vector index to keep"
    if not paths.files.exists(paths.ann_template(live.template)):
        return f"template {live.template} is missing: trained again"
    if live.factory != planned.factory or live.requested != planned.requested:
        return f"the index changes from {live.factory} to {planned.factory}"
    churn = live.added_since_training + n_new
    if live.trained_on and churn > RETRAIN_CHURN * live.trained_on:
        return f"{churn} vectors added since the quantizer was trained on {live.trained_on}: retrained"
    return ""


def train_template(live: LiveSegments, params: AnnParams, dim: int) -> tuple[object, AnnParams, str]:
    """An empty index of ``params.factory`` trained on a sample of the live vectors (every k-th);
    Flat with a warning when there are too few to train it. Returns (template, params, warning)."""
    import faiss

    template = faiss.index_factory(dim, params.factory, faiss.METRIC_INNER_PRODUCT)
    if template.is_trained:
        return template, dataclasses.replace(params, trained_on=0, added_since_training=0), ""
    ids = np.concatenate([live.live_vector_ids(s) for s in live.segments]) if live.segments else np.zeros(0, np.int64)
    needed = _training_points(template)
    if len(ids) < needed:
        warning = f"{len(ids)} vectors are too few to train {params.factory!r} (needs {needed}); built 'Flat'"
        flat = AnnParams("Flat", requested=params.requested)
        return faiss.index_factory(dim, "Flat", faiss.METRIC_INNER_PRODUCT), flat, warning
    ivf = faiss.try_extract_index_ivf(template)
    wanted = TRAIN_POINTS_PER_LIST * int(ivf.nlist) if ivf is not None else 65_536
    sample = live.vectors_of(ids[:: max(1, len(ids) // wanted)][:wanted])
    template.train(sample)
    return template, dataclasses.replace(params, trained_on=len(ids), added_since_training=0), ""


def named_template(template) -> tuple[str, bytes]:
    """A template's name (of its content) and its bytes."""
    import faiss

    data = faiss.serialize_index(template).tobytes()
    return hashlib.sha256(data).hexdigest()[:16], data


def write_template(paths: IndexPaths, template) -> str:
    """Write a template once, named by its content; its name."""
    name, data = named_template(template)
    _write_once(paths.ann_template(name), data)
    return name


def shard_of(template, segment: SegmentFiles):
    """A copy of ``template`` holding every vector of ``segment`` (masked ones too: a reader's
    selector leaves them out), under their vector ids."""
    import faiss

    inner = faiss.clone_index(template)
    shard = inner if _stores_ids(inner) else faiss.IndexIDMap2(inner)
    vectors = segment.vectors()
    _reserve(inner, len(vectors))
    base = segment.ref.vector_base
    add_vectors(shard, vectors, np.arange(base, base + len(vectors), dtype=np.int64))
    release_mapped_pages(vectors)
    return shard


def write_shards(paths: IndexPaths, live: LiveSegments, template_name: str) -> int:
    """Write the shard of every segment that has none of this template yet; how many were written."""
    import faiss

    template = None
    written = 0
    for segment in live.segments:
        path = paths.ann_shard(template_name, segment.name)
        if paths.files.exists(path):  # in the index (or its bucket): written when its segment was
            continue
        if template is None:
            template = faiss.read_index(str(paths.files.local(paths.ann_template(template_name))))
        _write_once(path, shard_bytes(shard_of(template, segment)))
        written += 1
    return written


def expected_template(paths: IndexPaths, live: AnnParams | None, planned: AnnParams, dim: int) -> tuple[str, bytes] | None:
    """The template the shards of a build's new segments will be copies of, where it is known before the
    build has run: the live one, where it is kept for now, or a planned index that needs no training
    (Flat, HNSW). (Its name, its bytes); None where only the end of the build can tell. Segment writers
    that run elsewhere write their shards of it; where the build ends up with another, it writes them."""
    import faiss

    if not keep_reason(live, planned, 0, paths):
        return live.template, paths.files.local(paths.ann_template(live.template)).read_bytes()
    template = faiss.index_factory(dim, planned.factory, faiss.METRIC_INNER_PRODUCT)
    return named_template(template) if template.is_trained else None


def write_shard(paths: IndexPaths, template_name: str, template_bytes: bytes, segment: SegmentFiles) -> None:
    """The shard of ``segment`` of the given template (``expected_template``), written beside it."""
    import faiss

    template = faiss.deserialize_index(np.frombuffer(template_bytes, dtype=np.uint8))
    _write_once(paths.ann_shard(template_name, segment.name), shard_bytes(shard_of(template, segment)))


def build_vector_index(paths: IndexPaths, live: LiveSegments, live_params: AnnParams | None, planned: AnnParams,
                       n_new: int, dim: int) -> tuple[AnnParams, str, str, int]:
    """The shards of the new generation's segments: the live template kept where it can be, else
    one trained anew. Returns (its parameters, why a new one was trained or "", a warning, shards written)."""
    reason = keep_reason(live_params, planned, n_new, paths)
    warning = ""
    if reason:
        template, params, warning = train_template(live, planned, dim)
        params = dataclasses.replace(params, template=write_template(paths, template))
    else:
        params = dataclasses.replace(live_params, added_since_training=live_params.added_since_training
                                     + (n_new if live_params.trained_on else 0))
    written = write_shards(paths, live, params.template)
    return params, reason, warning, written


def _write_once(path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary name, fsynced, with its checksum beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as out:
        out.write(data)
    fsync_file(tmp)
    os.replace(tmp, path)
    sidecar = path.with_suffix(".json")
    sidecar.write_text(json.dumps({"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}))
    fsync_file(sidecar)
    fsync_dir(path.parent)

