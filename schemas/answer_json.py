"""Read a model's answer: the Answer shape, camelCase or snake_case.

A file that is not an answer at all is an AnswerFormatError. A malformed
claim or support is kept, with its error, so that it is reported (and never
verified) while the rest of the answer is checked. ``answer_json_schema()``
documents the shape for clients.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

from schemas.citations import Answer, Claim, Support
from schemas.errors import AnswerFormatError
from schemas.json_schema import json_schema_document

# What an answer must give; everything else may be left out. ``error`` is ours, not the model's.
REQUIRED = {Answer: ("claims",), Claim: ("text",), Support: ("chunk_id", "quote")}
NOT_FROM_THE_MODEL = ("error",)
ANSWER_DESCRIPTION = (
    "A model's answer. camelCase keys (answerId, claimId, chunkId) are accepted too; a malformed claim "
    "or support is reported, never verified, and the rest of the answer is checked."
)


@functools.cache
def answer_json_schema() -> dict:
    """The JSON Schema of an answer, as clients should write it (snake_case).

    >>> answer_json_schema()["properties"]["claims"]["items"]
    {'$ref': '#/$defs/Claim'}
    """
    return json_schema_document(Answer, description=ANSWER_DESCRIPTION, required=REQUIRED, omit=NOT_FROM_THE_MODEL)


def load_answer(path: str | Path) -> Answer:
    try:
        raw = json.loads(Path(path).read_bytes())
    except FileNotFoundError:
        raise AnswerFormatError(f"{path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AnswerFormatError(f"{path}: not valid JSON: {exc}") from None
    return parse_answer(raw, where=str(path))


def parse_answer(raw: object, where: str = "answer") -> Answer:
    """An Answer from decoded JSON.

    >>> parse_answer({"answerId": "a1", "claims": [{"claimId": "c1", "text": "t",
    ...     "support": [{"chunkId": "d.pdf#tok:0", "quote": "some quoted words"}]}]}).claims[0].support[0].chunk_id
    'd.pdf#tok:0'
    """
    if not isinstance(raw, dict):
        raise AnswerFormatError(f"{where}: an answer is a JSON object with a 'claims' list, got {type(raw).__name__}")
    claims = _get(raw, "claims")
    if not isinstance(claims, list):
        raise AnswerFormatError(f"{where}: 'claims' must be a list")
    answer_id = _get(raw, "answer_id")
    return Answer(
        answer_id=str(answer_id) if answer_id is not None else "",
        claims=tuple(_claim(c, i) for i, c in enumerate(claims)),
        text=_get(raw, "text") if isinstance(_get(raw, "text"), str) else "",
    )


def _claim(raw: object, position: int) -> Claim:
    fallback_id = f"#{position + 1}"
    if not isinstance(raw, dict):
        return Claim(fallback_id, "", error=f"claim {position + 1} is not an object")
    claim_id = _get(raw, "claim_id")
    claim_id = str(claim_id) if claim_id not in (None, "") else fallback_id
    text = _get(raw, "text")
    if not isinstance(text, str):
        return Claim(claim_id, "", error="claim 'text' missing or not a string")
    support = _get(raw, "support")
    if support is None:
        support = []
    if not isinstance(support, list):
        return Claim(claim_id, text, error="'support' must be a list")
    return Claim(claim_id, text, tuple(_support(s) for s in support))


def _support(raw: object) -> Support:
    if not isinstance(raw, dict):
        return Support("", "", error="a support must be an object with chunk_id and quote")
    chunk_id, quote = _get(raw, "chunk_id"), _get(raw, "quote")
    rank, score = _get(raw, "retrieved_rank"), _get(raw, "retrieved_score")
    rank = rank if isinstance(rank, int) and not isinstance(rank, bool) else None
    score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score) else None
    if not isinstance(chunk_id, str) or not chunk_id:
        return Support("", quote if isinstance(quote, str) else "", rank, score, error="'chunk_id' missing or not a string")
    if not isinstance(quote, str):
        return Support(chunk_id, "", rank, score, error=f"'quote' must be a string, got {type(quote).__name__}")
    return Support(chunk_id, quote, rank, score)


def _get(raw: dict, snake: str):
    """A field by its snake_case name or its camelCase one."""
    if snake in raw:
        return raw[snake]
    head, *rest = snake.split("_")
    return raw.get(head + "".join(part.title() for part in rest))
