"""Citation records as JSON Lines (what `verify` writes and `check` reads) and as W3C annotations."""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Iterator
from pathlib import Path

from schemas.citations import Citation, CitationStatus, ClaimRecord, ClaimVerdict
from schemas.errors import AnswerFormatError
from schemas.records import Rect


def to_json(value) -> object:
    """Dataclasses, enums and tuples as plain JSON values."""
    if dataclasses.is_dataclass(value):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value.value if hasattr(value, "value") and isinstance(value, str) else value


def record_line(record: ClaimRecord) -> str:
    return json.dumps(to_json(record), ensure_ascii=False)


def citation_from_json(raw: dict) -> Citation:
    fields = _checked_fields(Citation, raw, nested=("status", "rects"))
    fields["status"] = CitationStatus(fields["status"])
    rects = fields.get("rects") or []
    if not isinstance(rects, list):
        raise TypeError(f"rects: expected a list, got {type(rects).__name__}")
    fields["rects"] = tuple(Rect(**_checked_fields(Rect, r)) for r in rects)
    return Citation(**fields)


def claim_record_from_json(raw: dict) -> ClaimRecord:
    fields = _checked_fields(ClaimRecord, raw, nested=("verdict", "citations"))
    fields["verdict"] = ClaimVerdict(fields["verdict"])
    citations = fields.get("citations") or []
    if not isinstance(citations, list):
        raise TypeError(f"citations: expected a list, got {type(citations).__name__}")
    fields["citations"] = tuple(citation_from_json(c) for c in citations)
    return ClaimRecord(**fields)


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
    return fields


@functools.cache
def _json_types(cls: type) -> dict[str, tuple[type, ...]]:
    """Each field's declared type as the JSON value types that may carry it (a float may be written 3)."""
    out = {}
    for name, hint in typing.get_type_hints(cls).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        accepted: list[type] = []
        for arg in args:
            origin = typing.get_origin(arg) or arg
            accepted += {float: [float, int], type(None): [type(None)], tuple: [list]}.get(origin, [origin])
        out[name] = tuple(accepted)
    return out


def _type_names(accepted: tuple[type, ...]) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in accepted)


def read_records(path: str | Path) -> Iterator[tuple[int, ClaimRecord | None, str]]:
    """(line number, record or None, error) for every non-empty line of a records file."""
    try:
        lines = Path(path).read_bytes().decode("utf-8").splitlines()
    except FileNotFoundError:
        raise AnswerFormatError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise AnswerFormatError(f"{path}: not UTF-8: {exc}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, claim_record_from_json(json.loads(line)), ""
        except (ValueError, KeyError, TypeError) as exc:
            yield number, None, f"line {number}: not a citation record: {exc}"


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
