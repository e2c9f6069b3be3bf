"""Citation records as JSON Lines (what `verify` writes and `check` reads) and as W3C annotations.

Records are written and read by the rule of ``schemas.json_schema``, and
``record_json_schema()`` describes the lines that ``spanindex verify`` writes.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path

from schemas.citations import Citation, ClaimRecord
from schemas.errors import AnswerFormatError
from schemas.json_input import JsonInputError, lone_surrogate, loads
from schemas.json_schema import UNSET, field_types, json_schema_document, optional_vocabulary
from schemas.records import HiddenReason, Rect


def to_json(value) -> object:
    """Dataclasses, enums and tuples as plain JSON values (an unset optional vocabulary as "")."""
    if dataclasses.is_dataclass(value):
        unset = _unset_vocabularies(type(value))
        return {
            f.name: UNSET if f.name in unset and getattr(value, f.name) is None else to_json(getattr(value, f.name))
            for f in dataclasses.fields(value)
        }
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value.value if hasattr(value, "value") and isinstance(value, str) else value


def record_line(record: ClaimRecord) -> str:
    return json.dumps(to_json(record), ensure_ascii=False)


def citation_from_json(raw: dict) -> Citation:
    fields = _checked_fields(Citation, raw, nested=("rects",))
    rects = fields.get("rects") or []
    if not isinstance(rects, list):
        raise TypeError(f"rects: expected a list, got {type(rects).__name__}")
    fields["rects"] = tuple(Rect(**_checked_fields(Rect, r)) for r in rects)
    if "cells" in fields:
        fields["cells"] = tuple(fields["cells"] or ())
    if "hidden_reasons" in fields:
        fields["hidden_reasons"] = tuple(HiddenReason(reason) for reason in fields["hidden_reasons"])
    return Citation(**fields)


def claim_record_from_json(raw: dict) -> ClaimRecord:
    fields = _checked_fields(ClaimRecord, raw, nested=("citations",))
    citations = fields.get("citations") or []
    if not isinstance(citations, list):
        raise TypeError(f"citations: expected a list, got {type(citations).__name__}")
    fields["citations"] = tuple(citation_from_json(c) for c in citations)
    return ClaimRecord(**fields)


@functools.cache
def record_json_schema() -> dict:
    """The JSON Schema of one line of `spanindex verify` output (a claim and its citations)."""
    return json_schema_document(
        ClaimRecord,
        description="One line of `spanindex verify` output: a claim and its citations, each checked and located. "
        "Offsets are Unicode code points (offset_unit), half-open; char_* are chunk-relative, doc_* document-absolute.",
    )


def _checked_fields(cls: type, raw: object, nested: tuple[str, ...] = ()) -> dict:
    """The known fields of ``raw`` for ``cls``, each of its declared JSON type.

    Records come from files a user may have edited: a quote that is a number or an
    offset that is a string must be refused here, not crash whatever reads it next.
    """
    if not isinstance(raw, dict):
        raise TypeError(f"expected an object for {cls.__name__}, got {type(raw).__name__}")
    hints = _json_types(cls)
    fields = {k: v for k, v in raw.items() if k in hints}
    for name, value in fields.items():
        if name not in nested and not isinstance(value, hints[name]):
            raise TypeError(f"{name}: expected {_type_names(hints[name])}, got {type(value).__name__} {value!r:.40}")
        if isinstance(value, bool) and bool not in hints[name]:  # JSON true is not an offset
            raise TypeError(f"{name}: expected {_type_names(hints[name])}, got a boolean")
    for name, vocabulary in _vocabularies(cls).items():  # a value outside the vocabulary is a ValueError
        if name in fields:
            optional = name in _unset_vocabularies(cls)
            fields[name] = None if optional and fields[name] in (UNSET, None) else vocabulary(fields[name])
    return fields


@functools.cache
def _vocabularies(cls: type) -> dict[str, type[StrEnum]]:
    """Fields whose values come from a closed vocabulary, optional or not."""
    out = {}
    for name, hint in field_types(cls).items():
        vocabulary = optional_vocabulary(hint) or (hint if isinstance(hint, type) and issubclass(hint, StrEnum) else None)
        if vocabulary is not None:
            out[name] = vocabulary
    return out


@functools.cache
def _unset_vocabularies(cls: type) -> frozenset[str]:
    """Fields typed ``SomeStrEnum | None``: "" in JSON while None."""
    return frozenset(name for name, hint in field_types(cls).items() if optional_vocabulary(hint) is not None)


@functools.cache
def _json_types(cls: type) -> dict[str, tuple[type, ...]]:
    """Each field's declared type as the JSON value types that may carry it (a float may be written 3)."""
    out = {}
    for name, hint in field_types(cls).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        accepted: list[type] = []
        for arg in args:
            origin = typing.get_origin(arg) or arg
            if isinstance(origin, type) and issubclass(origin, StrEnum):
                origin = str  # its value; checked against the vocabulary afterwards
            accepted += {float: [float, int], type(None): [type(None)], tuple: [list]}.get(origin, [origin])
        out[name] = tuple(dict.fromkeys(accepted))
    return out


def _type_names(accepted: tuple[type, ...]) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in accepted)


def read_records(path: str | Path) -> Iterator[tuple[int, ClaimRecord | None, str]]:
    """(line number, record or None, error) for every non-empty line of a records file.

    A file that cannot be read at all is an AnswerFormatError (one line, naming it); a line
    that is not a record (not JSON, too deep, a number out of range, a lone surrogate in
    any string, a field of the wrong type) comes with its error, and the other lines are read.
    """
    path = Path(path)
    try:
        if path.is_dir():
            raise AnswerFormatError(f"{path}: is a folder, not a records file")
        data = path.read_bytes()
    except FileNotFoundError:
        raise AnswerFormatError(f"{path}: no such file") from None
    except OSError as exc:
        raise AnswerFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            raw = loads(line, where)
            surrogate = _first_surrogate(raw)
            if surrogate:
                raise ValueError(surrogate)
            yield number, claim_record_from_json(raw), ""
        except JsonInputError as exc:
            yield number, None, str(exc)
        except (ValueError, KeyError, TypeError) as exc:
            yield number, None, f"{where}: not a citation record: {exc}"


def _first_surrogate(value: object, field: str = "") -> str:
    """Where the first string with a lone surrogate is in a decoded JSON value, or ""."""
    if isinstance(value, str):
        return f"{field or 'a string'} is not Unicode text: {lone_surrogate(value)}" if lone_surrogate(value) else ""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and lone_surrogate(key):
            return f"a key is not Unicode text: {lone_surrogate(key)}"
        found = _first_surrogate(item, key if isinstance(key, str) else field)
        if found:
            return found
    return ""


def w3c_annotation(record: ClaimRecord, index_of_citation: int, citation: Citation) -> dict:
    """A verified citation as a W3C Web Annotation (the model annotation tools re-anchor from)."""
    selectors: list[dict] = [
        {"type": "TextQuoteSelector", "exact": citation.quote, "prefix": citation.prefix, "suffix": citation.suffix},
        {"type": "TextPositionSelector", "start": citation.doc_start, "end": citation.doc_end},
    ]
    if citation.page:
        selectors.append(
            {"type": "FragmentSelector", "conformsTo": "http://tools.ietf.org/rfc/rfc3778", "value": f"page={citation.page}"}
        )
    return {
        "@context": "http://www.w3.org/ns/anno.jsonld",
        "id": f"urn:spanindex:{record.answer_id}:{record.claim_id}:{index_of_citation}",
        "type": "Annotation",
        "motivation": "quoting",
        "body": {"type": "TextualBody", "value": record.text, "format": "text/plain", "purpose": "describing"},
        "target": {
            # The page's own address when it names one (what annotation tools re-anchor on), else the doc id.
            "source": citation.url.split("#", 1)[0] or citation.doc_id,
            "spanindex:docId": citation.doc_id,
            "state": {"type": "spanindex:DocVersion", "value": citation.doc_version},
            "selector": selectors,
        },
        "spanindex:status": citation.status.value,
        "spanindex:chunkId": citation.chunk_id,
        "spanindex:matchScore": citation.match_score,
    }
