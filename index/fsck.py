"""Check the live generation end to end: checksums, segments and deletions, counts, ids, and every offset.

Each fault names the file, row or document it is about. An index passes when
the list is empty.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from index.store import Generation
from schemas.errors import IndexFormatError
from schemas.layout import (
    DELETED_FILE,
    GENERATION_FILES,
    HITS_FILE,
    LEXICAL_FILE,
    SEGMENT_FILES,
    SEGMENT_MANIFEST,
    TABLE_FILES,
    IndexPaths,
    converted_suffix,
    read_current,
)
from schemas.manifest import ann_params
from schemas.records import DocStatus, MediaType
from schemas.tables import DOCUMENT_MAP_TABLES, META_LEXICAL, check_schema, office_run_records


@dataclass(frozen=True, slots=True)
class Fault:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def fsck(root: str | Path, generation: str | None = None) -> list[Fault]:
    """Every fault found in the live (or named) generation of the index at ``root``."""
    from index.reader import local_index

    paths = IndexPaths(local_index(root))
    name = generation or read_current(paths)
    if name is None:
        return [Fault(str(paths.current), "missing: no live generation")]
    if not paths.generation(name).is_dir():
        return [Fault(str(paths.current), f"names generation {name!r}, which does not exist")]
    try:
        gen = Generation(paths, name)
    except IndexFormatError as exc:
        return [Fault(f"generations/{name}", str(exc))]
    faults = _checksums(gen)
    if faults:
        return faults  # a damaged file makes every later check meaningless
    faults += _schemas(gen)
    faults += [fault for segment in gen.segments for fault in _hits_file(segment, f"segments/{segment.name}")]
    if faults:
        return faults  # the later checks read chunks as readers do: through the hits files
    faults += _segments(gen)
    faults += _shards(gen)
    faults += _counts(gen)
    faults += _documents_and_chunks(gen)
    faults += _offset_maps(gen)
    faults += _lexical(gen)
    return faults


def _checksums(gen: Generation) -> list[Fault]:
    faults = []
    files = [(gen.dir, f"{gen.name}/", GENERATION_FILES, gen.manifest.table_sha256)]
    for segment in gen.segments:
        try:
            recorded = json.loads((segment.dir / SEGMENT_MANIFEST).read_text(encoding="utf-8"))["table_sha256"]
        except (OSError, ValueError, KeyError) as exc:
            faults.append(Fault(f"segments/{segment.name}/{SEGMENT_MANIFEST}", f"unreadable: {exc}"))
            continue
        files.append((segment.dir, f"segments/{segment.name}/", SEGMENT_FILES, recorded))
    for folder, label, names, expected in files:
        for file_name in names:
            path = folder / file_name
            if not path.is_file():
                faults.append(Fault(f"{label}{file_name}", "missing"))
                continue
            if expected.get(file_name) != _sha256(path):
                faults.append(Fault(f"{label}{file_name}", "checksum differs from the manifest"))
    return faults


def _sha256(path: Path) -> str:
    from ingest.store import file_sha256

    return file_sha256(path)


def _schemas(gen: Generation) -> list[Fault]:
    import pyarrow.parquet as pq

    faults = []
    files = [(gen.dir / DELETED_FILE, "deleted")]
    files += [(segment.dir / file_name, table) for segment in gen.segments
              for table, file_name in {**TABLE_FILES, "lexical": LEXICAL_FILE}.items()]
    for path, table in files:
        where = str(path.relative_to(gen.paths.root))
        try:
            check_schema(table, pq.read_schema(path), where)
        except IndexFormatError as exc:
            faults.append(Fault(where, str(exc)))
    return faults


def _segments(gen: Generation) -> list[Fault]:
    """Each segment's vectors and vector ids are its range; each deletion masks a document its segment holds."""
    faults = []
    names = [s.name for s in gen.segments]
    for name in set(gen.live.deleted) - set(names):
        faults.append(Fault(DELETED_FILE, f"masks documents in segment {name!r}, which the generation does not read"))
    ranges = sorted((s.ref.vector_base, s.ref.vector_base + s.ref.n_vectors, s.name) for s in gen.segments)
    for (_, end, a), (start, _, b) in zip(ranges, ranges[1:]):
        if start < end:
            faults.append(Fault("manifest.json", f"segments {a} and {b} hold overlapping vector ids"))
    if ranges and ranges[-1][1] > gen.manifest.next_vector_id:
        faults.append(Fault("manifest.json", "next_vector_id lies inside a segment's vector ids"))
    for segment in gen.segments:
        where = f"segments/{segment.name}"
        try:
            n_vectors = segment.vectors().shape[0]
        except IndexFormatError as exc:
            faults.append(Fault(where, str(exc)))
            continue
        vector_ids = segment.table("chunks", ["vector_id"]).column("vector_id").to_numpy()
        base = segment.ref.vector_base
        if len(vector_ids) != n_vectors or not np.array_equal(vector_ids, np.arange(base, base + n_vectors)):
            faults.append(Fault(f"{where}/chunks.parquet", "vector_id is not the segment's base plus the row number"))
        doc_ids = set(segment.table("documents", ["doc_id"]).column("doc_id").to_pylist())
        masked = gen.live.masked(segment)
        for doc_id in sorted(masked - doc_ids)[:3]:
            faults.append(Fault(DELETED_FILE, f"masks {doc_id!r} in segment {segment.name}, which does not hold it"))
        if len(masked) != segment.ref.n_deleted or len(doc_ids) != segment.ref.n_documents:
            faults.append(Fault("manifest.json", f"segment {segment.name}: document counts differ from its files"))
    return faults


def _hits_file(segment, where: str) -> list[Fault]:
    """The segment's Arrow copy of its chunks (what searches read) holds the rows of chunks.parquet."""
    try:
        hits = segment.hits()
    except IndexFormatError as exc:
        return [Fault(f"{where}/{HITS_FILE}", str(exc))]
    if not hits.equals(segment.table("chunks", hits.schema.names).cast(hits.schema)):
        return [Fault(f"{where}/{HITS_FILE}", "its rows differ from chunks.parquet's")]
    return []


def _counts(gen: Generation) -> list[Fault]:
    faults = []
    m = gen.manifest
    documents, chunks = gen.table("documents"), gen.table("chunks", ["doc_id", "vector_id"])
    if documents.num_rows != m.n_documents:
        faults.append(Fault("documents.parquet", f"{documents.num_rows} live rows, manifest says {m.n_documents}"))
    if chunks.num_rows != m.n_chunks:
        faults.append(Fault("chunks.parquet", f"{chunks.num_rows} live rows, manifest says {m.n_chunks}"))
    declared = sum(documents.column("n_chunks").to_pylist())
    if declared != chunks.num_rows:
        faults.append(Fault("documents.parquet", f"n_chunks sums to {declared}, chunks.parquet has {chunks.num_rows}"))
    return faults


def _shards(gen: Generation) -> list[Fault]:
    """Each segment's vector shard is there, unchanged, of the generation's template, holding its
    segment's vectors under their vector ids."""
    import faiss

    template = ann_params(gen.manifest).template
    faults = []
    if not gen.paths.ann_template(template).is_file():
        return [Fault(f"ann/{template}/template.faiss", "missing")]
    for segment in gen.segments:
        path = gen.paths.ann_shard(template, segment.name)
        where = str(path.relative_to(gen.paths.root))
        try:
            expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["sha256"]
        except (OSError, ValueError, KeyError):
            faults.append(Fault(where, "missing, or its checksum file is"))
            continue
        if _sha256(path) != expected:
            faults.append(Fault(where, "checksum differs from the one written with it"))
            continue
        shard = faiss.read_index(str(path))
        base, n = segment.ref.vector_base, segment.ref.n_vectors
        if shard.d != gen.manifest.model_dim:
            faults.append(Fault(where, f"dimension {shard.d}, manifest says {gen.manifest.model_dim}"))
        elif shard.ntotal != n or not np.array_equal(np.sort(_faiss_ids(shard)), np.arange(base, base + n)):
            faults.append(Fault(where, f"does not hold the vector ids {base}..{base + n - 1} of its segment"))
    if not faults and gen.faiss().ntotal != gen.manifest.n_chunks:
        faults.append(Fault("ann", f"{gen.faiss().ntotal} live vectors for {gen.manifest.n_chunks} chunks"))
    return faults


def _faiss_ids(index) -> np.ndarray:
    """The ids a FAISS index stores (an ``IndexIDMap2``'s table, or an inverted file's lists)."""
    import faiss

    ivf = faiss.try_extract_index_ivf(index)
    if ivf is None:
        return faiss.vector_to_array(index.id_map).astype(np.int64)
    lists = ivf.invlists
    parts = [faiss.rev_swig_ptr(lists.get_ids(i), lists.list_size(i)).copy()
             for i in range(ivf.nlist) if lists.list_size(i)]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def _documents_and_chunks(gen: Generation) -> list[Fault]:
    faults = []
    documents = gen.table("documents").to_pylist()
    for doc_id, count in Counter(d["doc_id"] for d in documents).items():
        if count > 1:
            faults.append(Fault("documents.parquet", f"doc_id {doc_id!r} appears {count} times"))
    chunks = gen.table("chunks")
    ids = chunks.column("chunk_id").to_pylist()
    for chunk_id, count in Counter(ids).items():
        if count > 1:
            faults.append(Fault("chunks.parquet", f"chunk_id {chunk_id!r} appears {count} times"))
    by_doc = gen.doc_slices("chunks")
    for doc in documents:
        where = f"document {doc['doc_id']}"
        if doc["status"] != DocStatus.OK.value:
            if doc["doc_id"] in by_doc:
                faults.append(Fault(where, f"status {doc['status']} but it has chunks"))
            continue
        text = _text(gen, doc["doc_version"])
        if text is None:
            faults.append(Fault(where, f"stored text of {doc['doc_version']} is missing"))
            continue
        if "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest() != doc["doc_version"]:
            faults.append(Fault(where, "stored text does not hash to its doc_version"))
        if len(text) != doc["n_chars"]:
            faults.append(Fault(where, f"n_chars {doc['n_chars']}, stored text has {len(text)}"))
        source = gen.paths.source(doc["source_sha256"], "." + doc["doc_id"].rsplit(".", 1)[-1])
        if not source.is_file():
            faults.append(Fault(where, "stored source file is missing"))
        rows = gen.rows_of("chunks", doc["doc_id"]).select(["chunk_id", "doc_version", "start", "end", "text", "text_sha256"])
        for row in rows.to_pylist():
            if row["doc_version"] != doc["doc_version"]:
                faults.append(Fault(row["chunk_id"], "doc_version differs from its document's"))
            if text[row["start"] : row["end"]] != row["text"]:
                faults.append(Fault(row["chunk_id"], f"text is not doc_text[{row['start']}:{row['end']}]"))
            if hashlib.sha256(row["text"].encode("utf-8")).hexdigest() != row["text_sha256"]:
                faults.append(Fault(row["chunk_id"], "text_sha256 does not match the text"))
    return faults


def _offset_maps(gen: Generation) -> list[Fault]:
    faults = []
    documents = {d["doc_id"]: d for d in gen.table("documents").to_pylist()}
    for table in DOCUMENT_MAP_TABLES:
        for doc_id in gen.doc_slices(table):
            doc = documents.get(doc_id)
            if doc is None:
                faults.append(Fault(f"{table}.parquet", f"rows for unknown document {doc_id!r}"))
                continue
            if doc["status"] != DocStatus.OK.value:
                continue
            rows = gen.rows_of(table, doc_id)
            n_chars = doc["n_chars"]
            starts, ends = rows.column("start").to_numpy(), rows.column("end").to_numpy()
            if (starts < 0).any() or (ends > n_chars).any() or (starts > ends).any():
                faults.append(Fault(f"{table}.parquet", f"{doc_id}: a run lies outside its text of {n_chars} characters"))
            if table in ("pdf_chars", "html_boxes", "office_boxes"):
                lengths = rows.column("boxes").combine_chunks().value_lengths().to_numpy()
                if not np.array_equal(lengths, 4 * (ends - starts)):
                    faults.append(Fault(f"{table}.parquet", f"{doc_id}: boxes do not hold 4 floats per character"))
            if table == "html_boxes" and (doc["media_type"] != MediaType.HTML.value
                                          or (rows.column("page").to_numpy() < 1).any()
                                          or (starts[1:] < ends[:-1]).any()):
                faults.append(Fault("html_boxes.parquet", f"{doc_id}: runs out of order, off any page, or not HTML"))
            if table == "office_map":
                faults += _office_map(gen, doc, rows)
            if table in ("office_boxes", "office_shapes") and (
                    (rows.column("page").to_numpy() < 1).any() or (starts[1:] < ends[:-1]).any()):
                faults.append(Fault(f"{table}.parquet", f"{doc_id}: runs out of order or off any page"))
            if table == "html_map" and doc["media_type"] == MediaType.HTML.value:
                source = gen.paths.decoded_source(doc["source_sha256"])
                if not source.is_file():
                    faults.append(Fault(doc_id, "decoded HTML source is missing"))
                    continue
                n_source = len(source.read_bytes().decode("utf-8"))
                if (rows.column("src_end").to_numpy() > n_source).any():
                    faults.append(Fault("html_map.parquet", f"{doc_id}: a source range lies outside the source"))
                if len(starts) and (starts[0] != 0 or ends[-1] != n_chars or (starts[1:] != ends[:-1]).any()):
                    faults.append(Fault("html_map.parquet", f"{doc_id}: runs do not cover the text contiguously"))
    return faults


def _office_map(gen: Generation, doc: dict, rows) -> list[Fault]:
    """Every run of an office document reads back from its part of the stored file as its text."""
    from ingest.formats import office_run_problems

    text = _text(gen, doc["doc_version"])
    suffix = Path(doc["doc_id"]).suffix
    converted = converted_suffix(suffix)  # a legacy file: its map points into the converted copy
    source = (gen.paths.converted_source(doc["source_sha256"], converted) if converted
              else gen.paths.source(doc["source_sha256"], suffix))
    if text is None or not source.is_file():
        return []  # named by the texts and sources check
    try:
        with zipfile.ZipFile(source) as package:
            parts: dict[str, str] = {}
            problems = office_run_problems(
                text, office_run_records(rows),
                lambda part: parts.setdefault(part, package.read(part).decode("utf-8")))
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError) as exc:
        problems = [f"the stored file cannot be read back: {exc}"]
    return [Fault("office_map.parquet", f"{doc['doc_id']}: {problem}") for problem in problems[:3]]


def _text(gen: Generation, doc_version: str) -> str | None:
    try:
        return gen.paths.text(doc_version).read_bytes().decode("utf-8")
    except (FileNotFoundError, IndexFormatError):
        return None


def _lexical(gen: Generation) -> list[Fault]:
    """Each segment's postings are those of exactly its chunks, built by this tokenizer, and the
    generation's BM25 statistics (chunk and token counts) are those of its live chunks."""
    from ingest.store import ANALYSED_CHUNK_COLUMNS, TOKENIZER_VERSION, chunk_analyses, lexical_table, lexical_tokens

    if gen.manifest.lexical_tokenizer_version != TOKENIZER_VERSION:
        return [Fault(LEXICAL_FILE, f"tokenizer version {gen.manifest.lexical_tokenizer_version}, this spanindex has {TOKENIZER_VERSION}")]
    faults = []
    for segment in gen.segments:
        where = f"segments/{segment.name}/{LEXICAL_FILE}"
        stored = segment.lexical_table()
        chunks = segment.table("chunks", [*ANALYSED_CHUNK_COLUMNS, "vector_id"])
        rebuilt = lexical_table(chunk_analyses(chunks.to_batches(), segment.table("hidden_text")),
                                chunks.column("vector_id").to_numpy())
        if stored.schema.metadata.get(META_LEXICAL) != rebuilt.schema.metadata.get(META_LEXICAL):
            faults.append(Fault(where, "settings (tokenizer, BM25 parameters, chunk and token counts) differ from a rebuild"))
        elif json.loads(stored.schema.metadata[META_LEXICAL])["n_tokens"] != segment.ref.n_tokens:
            faults.append(Fault("manifest.json", f"segment {segment.name}: n_tokens differs from its postings"))
        if stored.column("token").to_pylist() != rebuilt.column("token").to_pylist():
            faults.append(Fault(where, "tokens differ from the tokens of the chunks' texts"))
        elif any(stored.column(c).to_pylist() != rebuilt.column(c).to_pylist() for c in ("vector_ids", "counts", "lengths")):
            faults.append(Fault(where, "postings (which chunks hold which token, how often) differ from the chunks' texts"))
        masked = gen.live.deleted.get(segment.name, {})
        if masked:
            hidden = segment.table("hidden_text")
            for doc_id, m in masked.items():
                rows = segment.rows_of("chunks", doc_id)
                texts = chunk_analyses(rows.select(list(ANALYSED_CHUNK_COLUMNS)).to_batches(), hidden)
                ids = rows.column("vector_id").to_pylist()
                if (sum(len(lexical_tokens(t, language)) for t, language in texts) != m.n_tokens or len(ids) != m.n_vectors
                        or (ids and ids[0] != m.first_vector_id)):
                    faults.append(Fault(DELETED_FILE, f"{doc_id} in {segment.name}: its vector ids or token count differ from its rows"))
    return faults
