"""Read a model's answer: the Answer shape, camelCase or snake_case.

A file that is not an answer at all, or is over a limit (``schemas.limits.AnswerLimits``:
size, claims), is an AnswerFormatError. A malformed claim or support is kept, with its
error, so that it is reported (and never verified) while the rest of the answer is
checked: a claim whose text or a quote that holds a lone surrogate (not Unicode text, and
not writable as UTF-8) is one, written with U+FFFD in its place; so is a quote over the
length limit. Identifiers with a lone surrogate are kept, with U+FFFD in its place.
``answer_json_schema()`` documents the shape for clients.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from schemas.citations import Answer, Claim, Support
from schemas.errors import AnswerFormatError
from schemas.json_input import loads, lone_surrogate, replace_surrogates
from schemas.json_schema import json_schema_document
from schemas.limits import MIB, AnswerLimits

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


def load_answer(path: str | Path, limits: AnswerLimits = AnswerLimits()) -> Answer:
    """The answer in the file at ``path``; an AnswerFormatError (one line, naming it) when it is none."""
    return parse_answer(loads(read_answer_bytes(path, limits), str(path)), where=str(path), limits=limits)


def read_answer_bytes(path: str | Path, limits: AnswerLimits = AnswerLimits()) -> bytes:
    """The bytes of an answer file (any answer format), refused over ``limits.max_bytes``."""
    path = Path(path)
    try:
        if path.is_dir():
            raise AnswerFormatError(f"{path}: is a folder, not an answer file")
        size = path.stat().st_size
        if size > limits.max_bytes:
            raise AnswerFormatError(
                f"{path}: {size / MIB:.1f} MB, over the limit of {limits.max_bytes / MIB:g} MB for an answer (--max-answer-mb)"
            )
        with path.open("rb") as answer_file:  # read no more than the limit, whatever stat said
            data = answer_file.read(limits.max_bytes + 1)
    except FileNotFoundError:
        raise AnswerFormatError(f"{path}: no such file") from None
    except OSError as exc:
        raise AnswerFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limits.max_bytes:
        raise AnswerFormatError(f"{path}: over the limit of {limits.max_bytes / MIB:g} MB for an answer (--max-answer-mb)")
    return data


def parse_answer(raw: object, where: str = "answer", limits: AnswerLimits = AnswerLimits()) -> Answer:
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
    if len(claims) > limits.max_claims:
        raise AnswerFormatError(
            f"{where}: {len(claims):,} claims, over the limit of {limits.max_claims:,} for an answer (--max-claims)"
        )
    answer_id = _get(raw, "answer_id")
    text = _get(raw, "text")
    return Answer(
        answer_id=_identifier(answer_id) if answer_id is not None else "",
        claims=tuple(_claim(c, i, limits) for i, c in enumerate(claims)),
        text=replace_surrogates(text) if isinstance(text, str) else "",
    )


def _claim(raw: object, position: int, limits: AnswerLimits) -> Claim:
    fallback_id = f"#{position + 1}"
    if not isinstance(raw, dict):
        return Claim(fallback_id, "", error=f"claim {position + 1} is not an object")
    claim_id = _get(raw, "claim_id")
    claim_id = _identifier(claim_id) if claim_id not in (None, "") else fallback_id
    text = _get(raw, "text")
    if not isinstance(text, str):
        return Claim(claim_id, "", error="claim 'text' missing or not a string")
    if lone_surrogate(text):
        return Claim(claim_id, replace_surrogates(text),
                     error=f"claim 'text' is not Unicode text: {lone_surrogate(text)} (written as U+FFFD)")
    support = _get(raw, "support")
    if support is None:
        support = []
    if not isinstance(support, list):
        return Claim(claim_id, text, error="'support' must be a list")
    return Claim(claim_id, text, tuple(_support(s, limits) for s in support))


def _support(raw: object, limits: AnswerLimits) -> Support:
    if not isinstance(raw, dict):
        return Support("", "", error="a support must be an object with chunk_id and quote")
    chunk_id, quote = _get(raw, "chunk_id"), _get(raw, "quote")
    rank, score = _get(raw, "retrieved_rank"), _get(raw, "retrieved_score")
    rank = rank if isinstance(rank, int) and not isinstance(rank, bool) else None
    score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score) else None
    if not isinstance(chunk_id, str) or not chunk_id:
        quote = replace_surrogates(quote) if isinstance(quote, str) else ""
        return Support("", quote, rank, score, error="'chunk_id' missing or not a string")
    if lone_surrogate(chunk_id):
        return Support(replace_surrogates(chunk_id), replace_surrogates(quote) if isinstance(quote, str) else "",
                       rank, score, error=f"'chunk_id' is not Unicode text: {lone_surrogate(chunk_id)}")
    if not isinstance(quote, str):
        return Support(chunk_id, "", rank, score, error=f"'quote' must be a string, got {type(quote).__name__}")
    if lone_surrogate(quote):
        return Support(chunk_id, replace_surrogates(quote), rank, score,
                       error=f"the quote is not Unicode text: {lone_surrogate(quote)} (written as U+FFFD); "
                             "no document holds it")
    if len(quote) > limits.max_quote_chars:
        return Support(chunk_id, quote[: limits.max_quote_chars], rank, score,
                       error=f"the quote has {len(quote):,} characters, over the limit of {limits.max_quote_chars:,} "
                             f"(--max-quote-chars); kept here cut to the limit")
    return Support(chunk_id, quote, rank, score)


def _identifier(value: object) -> str:
    return replace_surrogates(str(value))


def _get(raw: dict, snake: str):
    """A field by its snake_case name or its camelCase one."""
    if snake in raw:
        return raw[snake]
    head, *rest = snake.split("_")
    return raw.get(head + "".join(part.title() for part in rest))
