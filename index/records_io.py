"""Citation records as JSON Lines (what `verify` writes and `check` reads) and as W3C annotations."""

from __future__ import annotations

import dataclasses
import json
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
    known = {f.name for f in dataclasses.fields(Citation)}
    fields = {k: v for k, v in raw.items() if k in known}
    fields["status"] = CitationStatus(fields["status"])
    fields["rects"] = tuple(Rect(**r) for r in fields.get("rects") or ())
    return Citation(**fields)


def claim_record_from_json(raw: dict) -> ClaimRecord:
    known = {f.name for f in dataclasses.fields(ClaimRecord)}
    fields = {k: v for k, v in raw.items() if k in known}
    fields["verdict"] = ClaimVerdict(fields["verdict"])
    fields["citations"] = tuple(citation_from_json(c) for c in fields.get("citations") or ())
    return ClaimRecord(**fields)


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
            "source": citation.doc_id,
            "state": {"type": "spanindex:DocVersion", "value": citation.doc_version},
            "selector": selectors,
        },
        "spanindex:status": citation.status.value,
        "spanindex:chunkId": citation.chunk_id,
        "spanindex:matchScore": citation.match_score,
    }
