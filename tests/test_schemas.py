"""The record types, the Arrow schemas and the JSON forms are one contract and must stay in step."""

from __future__ import annotations

import dataclasses
import json
import types
import typing

import numpy as np
import pyarrow as pa
import pytest

from schemas import records
from schemas.answer_json import answer_json_schema
from schemas.citations import Citation, CitationStatus, ClaimRecord, ClaimVerdict, DriftStatus, Placement
from schemas.errors import IndexFormatError
from schemas.manifest import manifest_from_json, manifest_to_json
from schemas.record_json import citation_from_json, claim_record_from_json, record_json_schema, record_line
from schemas.records import ChunkerSettings, Manifest, MediaType
from schemas.tables import FORMAT_VERSION, RECORD_TYPES, SCHEMAS, check_schema, with_metadata

_ARROW_KIND = {
    int: (pa.types.is_integer,),
    float: (pa.types.is_floating,),
    str: (pa.types.is_string,),
    bool: (pa.types.is_boolean,),
    np.ndarray: (pa.types.is_list,),
    tuple: (pa.types.is_list,),
}


def _python_type(annotation: str) -> tuple[type, bool]:
    hint = eval(annotation, vars(records))  # annotations are strings (from __future__)
    optional = False
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        hint = args[0]
    if typing.get_origin(hint) is tuple:  # tuple[str, ...]: a list column of strings
        return tuple, optional
    if isinstance(hint, type) and issubclass(hint, str):  # StrEnum columns are strings
        hint = str
    return hint, optional


@pytest.mark.parametrize("table_name", sorted(RECORD_TYPES))
def test_every_record_field_has_a_column_of_its_type(table_name):
    record_type, renames = RECORD_TYPES[table_name]
    schema = SCHEMAS[table_name]
    for field in dataclasses.fields(record_type):
        column = renames.get(field.name, field.name)
        assert column in schema.names, f"{record_type.__name__}.{field.name} has no column in {table_name}"
        python_type, _ = _python_type(field.type)
        (is_kind,) = _ARROW_KIND[python_type]
        assert is_kind(schema.field(column).type), f"{table_name}.{column}: {schema.field(column).type} vs {python_type}"


@pytest.mark.parametrize("table_name", sorted(RECORD_TYPES))
def test_every_column_comes_from_the_record_or_names_the_document(table_name):
    record_type, renames = RECORD_TYPES[table_name]
    produced = {renames.get(f.name, f.name) for f in dataclasses.fields(record_type)} | {"doc_id", "doc_version"}
    assert set(SCHEMAS[table_name].names) <= produced


def test_design_columns_are_present():
    design = {
        "documents": "doc_id doc_version source_sha256 media_type n_chars n_pages title encoding status error",
        "chunks": "chunk_id doc_id doc_version seq start end text text_sha256 token_start n_tokens page_start page_end vector_id",
        "pdf_chars": "doc_version page start end boxes",
        "html_map": "doc_version start end src_start src_end kind",
    }
    for table, columns in design.items():
        assert set(columns.split()) <= set(SCHEMAS[table].names), table


def test_reader_refuses_unknown_format_version():
    schema = with_metadata("chunks", "m", 4)
    check_schema("chunks", schema)
    newer = schema.with_metadata({**schema.metadata, b"spanindex.format_version": b"99"})
    with pytest.raises(IndexFormatError, match="format version 99"):
        check_schema("chunks", newer)
    with pytest.raises(IndexFormatError, match="not a spanindex"):
        check_schema("documents", schema)


def test_manifest_round_trips_and_refuses_other_versions():
    manifest = Manifest(
        format_version=FORMAT_VERSION, generation="000001", created_at="2026-12-02T00:00:00Z",
        model_id="m", model_dim=4, chunker=ChunkerSettings(), normalizer_version=1,
        faiss_factory="Flat", n_documents=1, n_chunks=2,
        warnings=("w",),
    )
    assert manifest_from_json(manifest_to_json(manifest)) == manifest
    with pytest.raises(IndexFormatError):
        manifest_from_json(manifest_to_json(dataclasses.replace(manifest, format_version=FORMAT_VERSION + 1)))


# -- the JSON side: citation records and answers ---------------------------------------------------


def test_a_placement_carries_citation_fields_of_the_same_type():
    citation_types = typing.get_type_hints(Citation)
    for name, hint in typing.get_type_hints(Placement).items():
        assert citation_types.get(name) == hint, f"Placement.{name}: {hint} vs Citation: {citation_types.get(name)}"
    placed = Citation("d.md#tok:0", "q", CitationStatus.EXACT).placed(
        Placement("d.md#tok:0", "d.md", "v", 1, 4, 11, 14, "abc", 1, "x", "y", locator="#:~:text=abc")
    )
    assert (placed.doc_start, placed.quote, placed.locator, placed.model_quote) == (11, "abc", "#:~:text=abc", "q")


def test_unset_vocabularies_are_written_as_empty_strings_and_read_back_as_none():
    record = ClaimRecord("a", "c", "t", ClaimVerdict.UNVERIFIED, (Citation("x#tok:0", "a quote", CitationStatus.UNKNOWN_CHUNK),))
    line = record_line(record)
    raw = json.loads(line)["citations"][0]
    assert raw["media_type"] == "" and raw["drift"] == "" and raw["status"] == "unknown_chunk"
    assert claim_record_from_json(json.loads(line)) == record
    checked = dataclasses.replace(record.citations[0], media_type=MediaType.PDF, drift=DriftStatus.MOVED)
    back = citation_from_json(json.loads(record_line(dataclasses.replace(record, citations=(checked,))))["citations"][0])
    assert back.media_type is MediaType.PDF and back.drift is DriftStatus.MOVED
    for field, value in (("media_type", "application/x-unknown"), ("drift", "maybe"), ("status", "")):
        with pytest.raises(ValueError):
            citation_from_json({**raw, field: value})


def test_json_schemas_follow_the_record_types():
    schema = record_json_schema()
    citation = schema["$defs"]["Citation"]
    assert list(citation["properties"]) == [f.name for f in dataclasses.fields(Citation)] == citation["required"]
    assert citation["properties"]["media_type"]["enum"] == [m.value for m in MediaType] + [""]
    assert citation["properties"]["status"]["enum"] == [s.value for s in CitationStatus]
    assert schema["properties"]["citations"]["items"] == {"$ref": "#/$defs/Citation"}
    answer = answer_json_schema()
    assert answer["required"] == ["claims"] and answer["$defs"]["Support"]["required"] == ["chunk_id", "quote"]
    assert "error" not in answer["$defs"]["Claim"]["properties"]  # ours, not the model's
