"""Cut document text into token windows whose offsets index it exactly.

The document is tokenized once with the embedding model's own fast tokenizer;
its offset mapping gives every token's character range. A cut may fall only
between two words, and cuts prefer a paragraph break, then a sentence end,
then a line break, then any word boundary.

Cuts are anchored to the content, not counted from the start of the document:
within the window of allowed cut positions the best boundary wins, and ties
between boundaries of the same kind are broken by a hash of the text around
each boundary. An edit therefore moves only the cuts near it; further on, the
windows meet the same best boundaries again and the chunks come out
identical, so their embeddings and citations survive a reindex.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ingest.hidden import HiddenText
from ingest.normalize import CONTROL_TO_SPACE, normalize
from schemas.errors import ChunkerError
from schemas.records import Chunk, ChunkerSettings, HiddenRun, ParsedDocument

# Boundary strengths (higher is a better place to cut).
INSIDE_WORD = -1
ATTACHED = 0  # between words with nothing between them: "sign|-|on", "on|,": only where nothing else is
WORD = 1
LINE = 2
SENTENCE = 3
PARAGRAPH = 4

_SENTENCE_END = frozenset(".!?;:\u3002\uff01\uff1f\uff1b\u2026\u061f\u06d4\u0964")
_CLOSERS = frozenset("\"')]}\u2019\u201d\u00bb\u300d\u300f")
_PARAGRAPH_GAP = re.compile(r"\n[^\S\n]*\n|\f")
_LINE_BREAK = re.compile(r"[\r\n]+")
# Where a long text may be cut into pieces: whitespace the tokenizer also sees as
# whitespace once control characters are spaces (CONTROL_TO_SPACE). Not Python's \s:
# NEL (U+0085) and the other C1 controls are \s to Python but deleted by BERT's
# normaliser, which glues the words on either side ("E\x85x" is one word, "ex").
_PIECE_SPACE = re.compile(r"[ \t\n\r\x0b\x0c\x1c-\x1f]+")


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """A chunk before it has a document: ``doc_text[start:end]``."""

    start: int
    end: int
    token_start: int
    n_tokens: int  # tokens the model sees for the normalised text, special tokens included
    embed_text: str  # the normalised text: what the model embeds


def chunk_spans(
    doc_text: str, tokenizer, settings: ChunkerSettings, hidden: Sequence[HiddenRun] = ()
) -> list[ChunkSpan]:
    """Cut ``doc_text`` into spans of at most ``settings.max_tokens`` model tokens.

    Cuts and token numbers are those of the whole text; what each chunk embeds leaves
    out the ``hidden`` runs (text a reader cannot see), so hidden text never draws a
    search to a chunk.

    >>> from ingest.model import load_tokenizer, resolve_model
    >>> tok = load_tokenizer(resolve_model())
    >>> [s.start for s in chunk_spans("One. Two.\\n\\nThree.", tok, ChunkerSettings())]
    [0]
    """
    budget = settings.max_tokens - 2  # [CLS] and [SEP]
    if budget < 8:
        raise ChunkerError(f"max_tokens {settings.max_tokens} is too small to hold any text")
    if not 0 <= settings.overlap <= budget // 2:
        raise ChunkerError(f"overlap {settings.overlap} must be between 0 and {budget // 2}")
    spans: list[ChunkSpan] = []
    tokens_before = 0
    for seg_start, seg_end in _segments(doc_text):
        segment_spans, n_tokens = _chunk_segment(doc_text[seg_start:seg_end], tokenizer, settings, budget)
        for span in segment_spans:
            spans.append(ChunkSpan(span.start + seg_start, span.end + seg_start, span.token_start + tokens_before,
                                   span.n_tokens, span.embed_text))
        tokens_before += n_tokens
    if hidden:
        spans = _without_hidden(doc_text, spans, hidden, tokenizer, settings.max_tokens)
    return spans


def _without_hidden(doc_text, spans, runs, tokenizer, max_tokens) -> list[ChunkSpan]:
    """The spans with what they embed recomputed where hidden text lies inside them."""
    hidden, out = HiddenText(runs), []
    for span in spans:
        if not hidden.overlapping(span.start, span.end):
            out.append(span)
            continue
        normalized = embed_text(hidden.visible(doc_text, span.start, span.end))
        n_model = len(tokenizer.encode(normalized).ids)
        if n_model > max_tokens:  # a space where hidden text split a word can add a token
            normalized, n_model = _fit_embed_text(normalized, tokenizer, max_tokens)
        out.append(ChunkSpan(span.start, span.end, span.token_start, n_model, normalized))
    return out


SEGMENT_CHARS = 1_000_000  # a longer text is tokenized and cut in pieces of about this size


def _segments(doc_text: str) -> list[tuple[int, int]]:
    """``doc_text`` as pieces of about ``SEGMENT_CHARS`` ending at a paragraph break.

    Tokenizing a 20 MB text at once holds ~125 bytes a character (offsets, word ids,
    scores): 2.7 GB. Pieces keep that to the size of one piece. A piece ends where a cut
    would fall anyway (a paragraph break, else a line break, else a space), so tokens are
    the same as in the whole text and token numbers simply add up.
    """
    pieces, start, n = [], 0, len(doc_text)
    while n - start > SEGMENT_CHARS:
        lo, hi = start + SEGMENT_CHARS, min(n, start + 2 * SEGMENT_CHARS)
        found = (
            _PARAGRAPH_GAP.search(doc_text, lo, hi)
            or _LINE_BREAK.search(doc_text, lo, hi)
            or _PIECE_SPACE.search(doc_text, lo)
        )
        if found is None:  # no space to the end: the rest is one piece (and few tokens)
            break
        pieces.append((start, found.end()))
        start = found.end()
    pieces.append((start, n))
    return pieces


TOKENIZE_CHARS = 65_536  # characters tokenized at a time (the tokenizer holds ~125 bytes a character)


def encode_in_pieces(text: str, tokenizer) -> tuple[list[tuple[int, int]], list[int | None]]:
    """Token offsets and word ids of ``text`` (control characters already spaces), exactly as one
    call would give them, from calls on pieces of about ``TOKENIZE_CHARS`` cut at whitespace.

    >>> from ingest.model import load_tokenizer, resolve_model
    >>> encode_in_pieces("Hello world", load_tokenizer(resolve_model()))
    ([(0, 5), (6, 11)], [0, 1])
    """
    offsets: list[tuple[int, int]] = []
    word_ids: list[int | None] = []
    start, n, words = 0, len(text), 0
    while start < n:
        stop = n
        if n - start > TOKENIZE_CHARS:
            found = _PIECE_SPACE.search(text, start + TOKENIZE_CHARS)
            stop = found.end() if found else n
        encoding = tokenizer.encode(text[start:stop], add_special_tokens=False)
        offsets.extend(encoding.offsets if not start else [(a + start, b + start) for a, b in encoding.offsets])
        piece_words = encoding.word_ids
        word_ids.extend(piece_words if not words else [None if w is None else w + words for w in piece_words])
        words += 1 + max((w for w in piece_words if w is not None), default=-1)
        start = stop
    return offsets, word_ids


def _chunk_segment(doc_text: str, tokenizer, settings: ChunkerSettings, budget: int) -> tuple[list[ChunkSpan], int]:
    """Spans of one piece of text (offsets and token numbers relative to it), and its token count."""
    # Control characters become spaces (one for one: offsets stay valid) as they do in the
    # normalised text; BERT would delete them and glue "3\f1" into one word.
    offsets, word_ids = encode_in_pieces(doc_text.translate(CONTROL_TO_SPACE), tokenizer)
    n = len(offsets)
    if n == 0:
        return [], 0
    scores = _boundary_scores(doc_text, offsets, word_ids)
    word_start = scores >= 0  # token p begins a word (p == 0 included)
    word_start[0] = True

    spans: list[ChunkSpan] = []
    shrunk: dict[int, int] = {}  # chunk start token -> lowered upper bound for its cut
    last_cut = 0  # token where the last accepted chunk ended
    s: int | None = 0
    while s is not None:
        plan = _plan_cuts(s, last_cut, n, budget, settings.overlap, scores, shrunk)
        texts = [doc_text[offsets[a][0] : offsets[p - 1][1]] for a, p in plan]
        exact_cuts = [p - a if word_start[a] and (p == n or word_start[p]) else None for a, p in plan]
        counts = _model_token_counts(texts, exact_cuts, tokenizer)
        s = None if plan[-1][1] >= n else _next_start(plan[-1][1], plan[-1][0], settings.overlap, scores)
        for (a, p), (n_model, normalized) in zip(plan, counts):
            if n_model > settings.max_tokens and p - a > 1:
                # Normalisation changed the count (rare: NFKC expansions); cut earlier,
                # but never back to where the previous chunk ended: then drop the overlap.
                lowered = a + max(1, min(p - a - 1, (p - a) * settings.max_tokens // n_model))
                if lowered <= last_cut < p:
                    s = last_cut
                else:
                    shrunk[a] = lowered
                    s = a
                break
            if n_model > settings.max_tokens:
                normalized, n_model = _fit_embed_text(normalized, tokenizer, settings.max_tokens)
            spans.append(ChunkSpan(offsets[a][0], offsets[p - 1][1], a, n_model, normalized))
            last_cut = p
    return spans, n


def _plan_cuts(s, last_cut, n, budget, overlap, scores, shrunk) -> list[tuple[int, int]]:
    """Token ranges [a, p) of the next chunks from token s, by raw token counts.

    Every cut lies beyond the previous one, so no chunk is a tail of the one before.
    """
    plan = []
    min_tokens = budget // 2
    while len(plan) < _PLAN_AHEAD:
        hi = shrunk.get(s, min(s + budget, n))
        lo = max(s + min(min_tokens, hi - s - 1), last_cut + 1)
        p = n if hi == n else _best_cut(scores, min(lo, hi), hi, s)
        plan.append((s, p))
        if p >= n:
            return plan
        s, last_cut = _next_start(p, s, overlap, scores), p
    return plan


_PLAN_AHEAD = 64  # chunks measured per batch; a rare recount re-plans only these
# Where normalisation may change the WordPiece count of ASCII text: a joined line-end hyphen.
_JOINED_HYPHEN = re.compile(r"[-\u00ad\u2010\u2011][ \t]*[\r\n\f]")


def _model_token_counts(
    texts: list[str], raw_counts: list[int | None], tokenizer
) -> list[tuple[int, str]]:
    """(tokens the model sees, normalised text) per chunk text.

    Where a chunk was cut between words and normalisation only collapses whitespace
    (ASCII text without line-end hyphens or control characters), WordPiece gives the
    raw count plus [CLS] and [SEP]; the rest is tokenized again.
    """
    normalized = [embed_text(t) for t in texts]
    counts = [0 if r is None else r + 2 for r in raw_counts]
    recount = [
        i
        for i, t in enumerate(texts)
        if raw_counts[i] is None or not t.isascii() or _JOINED_HYPHEN.search(t)
    ]
    if recount:
        encodings = tokenizer.encode_batch([normalized[i] for i in recount])
        for i, enc in zip(recount, encodings):
            counts[i] = len(enc.ids)
    return list(zip(counts, normalized))


def _fit_embed_text(normalized: str, tokenizer, max_tokens: int) -> tuple[str, int]:
    """Shorten the embedded string of a one-token chunk that normalises past the limit.

    The last resort for a single raw "word" that normalisation splits into more pieces
    than a chunk may hold: the chunk keeps its exact text, the model sees a prefix of it
    rather than truncating silently.
    """
    encoding = tokenizer.encode(normalized)
    while len(encoding.ids) > max_tokens:
        cut = encoding.offsets[max_tokens - 2][0]  # start of the first content token that does not fit
        normalized = normalized[:cut].rstrip()
        encoding = tokenizer.encode(normalized)
    return normalized, len(encoding.ids)


def _best_cut(scores: np.ndarray, lo: int, hi: int, s: int) -> int:
    """The highest-scoring cut in [lo, hi]; a forced cut at hi when no word boundary exists."""
    lo = max(lo, s + 1)
    window = scores[lo : hi + 1]
    best = int(np.argmax(window))
    if window[best] < 0:
        return hi
    return lo + best


def _next_start(cut: int, prev_start: int, overlap: int, scores: np.ndarray) -> int:
    """Where the chunk after a cut at token ``cut`` begins: up to ``overlap`` tokens back.

    The start is the strongest boundary in the first three quarters of the overlap, the
    earliest of equals (most context kept), so a chunk opens on a paragraph or a sentence
    where one is near rather than mid-clause; at least a quarter of the overlap remains.
    Like the cuts, it depends only on the text around it.
    """
    lo = max(cut - overlap, prev_start + 1)
    hi = max(lo, cut - overlap // 4)
    strengths = scores[lo : hi + 1] >> 32
    best = int(strengths.max())
    if best > INSIDE_WORD:
        return lo + int(np.argmax(strengths == best))
    start = lo  # no boundary in the window: the first after it, else the cut itself
    while start < cut and scores[start] < 0:
        start += 1
    return start


def _boundary_scores(doc_text: str, offsets: list, word_ids: list) -> np.ndarray:
    """Score of cutting before token p: strength in the high bits, a content hash below."""
    n = len(offsets)
    scores = np.full(n + 1, -1, dtype=np.int64)
    shift = np.int64(1) << 32
    for p in range(1, n):
        prev_start, prev_end = offsets[p - 1]
        next_start, next_end = offsets[p]
        if word_ids[p] == word_ids[p - 1] and next_start == prev_end:
            continue
        gap = doc_text[prev_end:next_start]
        if _PARAGRAPH_GAP.search(gap):
            strength = PARAGRAPH
        elif _ends_sentence(doc_text, prev_start, prev_end) and (gap or _is_cjk(doc_text[next_start])):
            strength = SENTENCE
        elif "\n" in gap or "\r" in gap:
            strength = LINE
        elif gap or _is_cjk(doc_text[next_start]) or _is_cjk(doc_text[prev_end - 1]):
            strength = WORD
        else:
            strength = ATTACHED
        around = doc_text[prev_start:next_end].encode("utf-8")
        scores[p] = strength * shift + zlib.crc32(around)
    scores[n] = 0  # the end of the document, only ever chosen as the last cut
    return scores


def _ends_sentence(doc_text: str, tok_start: int, tok_end: int) -> bool:
    last = doc_text[tok_end - 1]
    if last in _CLOSERS and tok_end - tok_start == 1 and tok_start > 0:
        last = doc_text[tok_start - 1]
    return last in _SENTENCE_END


def _is_cjk(char: str) -> bool:
    return "\u3000" <= char <= "\u9fff" or "\uac00" <= char <= "\ud7af" or "\uf900" <= char <= "\ufaff"


def make_chunks(doc: ParsedDocument, spans: list[ChunkSpan], first_vector_id: int = 0) -> list[Chunk]:
    """Chunk records of one document, with pages where the document has them."""
    page_starts = [p.start for p in doc.pages]
    doc_version = doc.doc_version
    hidden = HiddenText(doc.hidden_runs)
    chunks = []
    for seq, span in enumerate(spans):
        text = doc.text[span.start : span.end]
        page_start = page_end = None
        if page_starts:
            page_start = doc.pages[max(0, bisect.bisect_right(page_starts, span.start) - 1)].page
            page_end = doc.pages[max(0, bisect.bisect_right(page_starts, span.end - 1) - 1)].page
        chunks.append(
            Chunk(
                chunk_id=f"{doc.doc_id}#tok:{span.token_start}",
                doc_id=doc.doc_id,
                doc_version=doc_version,
                seq=seq,
                start=span.start,
                end=span.end,
                text=text,
                text_sha256=sha256_text(text),
                token_start=span.token_start,
                n_tokens=span.n_tokens,
                page_start=page_start,
                page_end=page_end,
                vector_id=first_vector_id + seq,
                embed_sha256=sha256_text(span.embed_text),
                n_hidden=hidden.count(span.start, span.end),
            )
        )
    return chunks


def embed_text(chunk_text: str) -> str:
    """The string the model embeds for a chunk: its normalised text."""
    return normalize(chunk_text)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
