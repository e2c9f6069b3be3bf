"""The user's own metadata of the corpus files: sidecars and the corpus-level metadata.jsonl.

Two forms, both optional: ``NAME.meta.json`` beside the file ``NAME`` holds a JSON object of
fields (``{"team": "legal", "year": 2024}``), and ``metadata.jsonl`` at the corpus root holds
one line per file, ``{"doc_id": "contracts/a.pdf", "fields": {...}}``. A sidecar's fields win
over the same fields of metadata.jsonl. Values are text, numbers, true/false or null; any
other value (a list, an object) is left out with a warning, as is a file that is not JSON.

A document's fields are stored with it as canonical JSON (``documents.metadata``, sorted keys)
and searched by filters as ``meta['team']`` (``index.search.filters``). They are read by the
build, never by a worker: a change to them alone reindexes the document's metadata without
reading, parsing or embedding the document (``ingest.build``).
"""

from __future__ import annotations

import json

from ingest.corpus import CORPUS_METADATA, SIDECAR_SUFFIX, CorpusFile, Discovery, NotReadable, read_source_bytes
from schemas.errors import AnswerFormatError
from schemas.json_input import loads

NO_METADATA = "{}"
MAX_SIDECAR_BYTES = 1 << 20  # a sidecar is a few fields; a megabyte is not metadata
MAX_CORPUS_METADATA_BYTES = 512 << 20


def canonical(fields: dict) -> str:
    """Fields as stored: JSON with sorted keys, so equal fields are equal strings.

    >>> canonical({"year": 2024, "team": "légal"})
    '{"team":"légal","year":2024}'
    """
    return json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def user_metadata(found: Discovery, inside: str | None) -> tuple[dict[str, str], list[str]]:
    """doc_id -> its fields as canonical JSON (documents without any are left out), and the
    warnings: unreadable files, bad JSON, values left out, metadata of files not in the corpus.
    ``inside``: the corpus root that files must resolve within (None: --follow-symlinks)."""
    documents = {f.doc_id for f in found.files}
    fields: dict[str, dict] = {}
    warnings: list[str] = []
    sidecars = []
    for meta_file in found.metadata:
        if meta_file.doc_id == CORPUS_METADATA:
            data = _read(meta_file, inside, MAX_CORPUS_METADATA_BYTES, meta_file.doc_id, warnings)
            if data is not None:
                for doc_id, values in _corpus_lines(data, warnings):
                    _merge(fields, doc_id, values, documents, CORPUS_METADATA, warnings)
        else:
            sidecars.append(meta_file)
    for meta_file in sidecars:  # after metadata.jsonl: a sidecar's fields win
        data = _read(meta_file, inside, MAX_SIDECAR_BYTES, meta_file.doc_id, warnings)
        if data is None:
            continue
        values = _object(data, meta_file.doc_id, warnings)
        if values is not None:
            _merge(fields, meta_file.doc_id[: -len(SIDECAR_SUFFIX)], values, documents, meta_file.doc_id, warnings)
    return {doc_id: canonical(values) for doc_id, values in fields.items() if values}, warnings


def _read(meta_file: CorpusFile, inside: str | None, max_bytes: int, where: str, warnings: list[str]) -> bytes | None:
    try:
        return read_source_bytes(meta_file.path, inside, max_bytes, meta_file.url, meta_file.listed)
    except (NotReadable, OSError) as exc:
        warnings.append(f"{where}: user metadata not read: {getattr(exc, 'strerror', None) or exc}")
        return None


def _object(data: bytes, where: str, warnings: list[str]) -> dict | None:
    try:
        value = loads(data, where)
    except AnswerFormatError as exc:
        warnings.append(f"user metadata not read: {exc}")
        return None
    if not isinstance(value, dict):
        warnings.append(f"{where}: user metadata not read: a JSON object of fields is expected")
        return None
    return value


def _corpus_lines(data: bytes, warnings: list[str]):
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{CORPUS_METADATA} line {number}"
        record = _object(line, where, warnings)
        if record is None:
            continue
        doc_id, values = record.get("doc_id"), record.get("fields")
        if not isinstance(doc_id, str) or not isinstance(values, dict):
            warnings.append(f"{where}: user metadata not read: expected {{\"doc_id\": ..., \"fields\": {{...}}}}")
            continue
        yield doc_id, values


def _merge(fields: dict[str, dict], doc_id: str, values: dict, documents: set[str], where: str,
           warnings: list[str]) -> None:
    if doc_id not in documents:
        warnings.append(f"{where}: user metadata of {doc_id!r}, which is not a document of the corpus")
        return
    kept = fields.setdefault(doc_id, {})
    for key, value in values.items():
        if value is None or isinstance(value, (str, int, float, bool)):
            kept[key] = value
        else:
            warnings.append(f"{where}: field {key!r} of {doc_id!r} left out: values are text, numbers, "
                            "true/false or null")
