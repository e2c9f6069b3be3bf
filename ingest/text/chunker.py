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
import dataclasses
import functools
import hashlib
import itertools
import operator
import re
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ingest.text.hidden import HiddenText
from ingest.text.normalize import CONTROLS, Join, SliceNormalizer, changing_set, normalize, normalize_each
from ingest.text.sections import SectionPaths, document_title
from schemas.errors import ChunkerError
from schemas.records import Chunk, ChunkerSettings, HiddenRun, ParsedDocument

# Boundary strengths (higher is a better place to cut).
INSIDE_WORD = -1
ATTACHED = 0  # between words with nothing between them: "sign|-|on", "on|,": only where nothing else is
WORD = 1
LINE = 2
SENTENCE = 3
PARAGRAPH = 4
_CUT_STRENGTHS = (PARAGRAPH, SENTENCE, LINE, WORD, ATTACHED)  # strongest first

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

    >>> from ingest.embed.model import load_tokenizer, resolve_model
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


_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)
# Characters tokenized at a time. The tokenizer holds ~125 bytes a character while it works;
# in calls of ~2,000 characters that stays in the CPU's cache, and the pass over a corpus
# costs 8% less than one call per document (benchmarks/chunker_speed.py measures both).
TOKENIZE_CHARS = 2048


@dataclass(frozen=True, slots=True, eq=False)
class TokenSpans:
    """Tokens of a text as arrays: token i covers ``text[starts[i]:ends[i]]`` and belongs to
    word ``word_ids[i]`` (numbered through the whole text)."""

    starts: np.ndarray
    ends: np.ndarray
    word_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)


def encode_in_pieces(text: str, tokenizer) -> TokenSpans:
    """Token offsets and word ids of ``text`` (control characters already spaces), exactly as one
    call would give them, from calls on pieces of about ``TOKENIZE_CHARS`` cut at whitespace.

    >>> from ingest.embed.model import load_tokenizer, resolve_model
    >>> tokens = encode_in_pieces("Hello world", load_tokenizer(resolve_model()))
    >>> tokens.starts.tolist(), tokens.ends.tolist(), tokens.word_ids.tolist()
    ([0, 6], [5, 11], [0, 1])
    """
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    word_ids: list[np.ndarray] = []
    start, n, words = 0, len(text), 0
    while start < n:
        stop = n
        if n - start > TOKENIZE_CHARS:
            found = _PIECE_SPACE.search(text, start + TOKENIZE_CHARS)
            stop = found.end() if found else n
        encoding = tokenizer.encode(text[start:stop], add_special_tokens=False)
        count = len(encoding)
        if count:
            # Straight from the tokenizer's lists into arrays: no Python object per token survives.
            pairs = encoding.offsets
            piece_starts = np.fromiter(map(_FIRST, pairs), np.int32, count)
            piece_ends = np.fromiter(map(_SECOND, pairs), np.int32, count)
            piece_words = np.fromiter(encoding.word_ids, np.int32, count)  # no special tokens: never None
            starts.append(piece_starts + start if start else piece_starts)
            ends.append(piece_ends + start if start else piece_ends)
            word_ids.append(piece_words + words if words else piece_words)
            words += 1 + int(piece_words[-1])  # word ids rise with the tokens
        start = stop
    if not starts:
        empty = np.zeros(0, np.int32)
        return TokenSpans(empty, empty, empty)
    if len(starts) == 1:
        return TokenSpans(starts[0], ends[0], word_ids[0])
    return TokenSpans(np.concatenate(starts), np.concatenate(ends), np.concatenate(word_ids))


def _chunk_segment(doc_text: str, tokenizer, settings: ChunkerSettings, budget: int) -> tuple[list[ChunkSpan], int]:
    """Spans of one piece of text (offsets and token numbers relative to it), and its token count."""
    # Control characters become spaces (one for one: offsets stay valid) as they do in the
    # normalised text; BERT would delete them and glue "3\f1" into one word.
    slices = SliceNormalizer(doc_text)
    tokens = encode_in_pieces(CONTROLS.sub(" ", doc_text) if slices.has_controls else doc_text, tokenizer)
    n = len(tokens)
    if n == 0:
        return [], 0
    scores = _BoundaryScores(doc_text, slices.bmp, tokens)
    pieces = _ChangedPieces(slices, tokens.starts, tokenizer)

    spans: list[ChunkSpan] = []
    shrunk: dict[int, int] = {}  # chunk start token -> lowered upper bound for its cut
    last_cut = 0  # token where the last accepted chunk ended
    s: int | None = 0
    while s is not None:
        plan = _plan_cuts(s, last_cut, n, budget, settings.overlap, scores, shrunk)
        char_starts = tokens.starts[[a for a, _ in plan]].tolist()
        char_ends = tokens.ends[[p - 1 for _, p in plan]].tolist()
        exact_cuts = [p - a if scores.exact_cut(a) and scores.exact_cut(p) else None for a, p in plan]
        counts = _model_token_counts(list(zip(char_starts, char_ends)), exact_cuts, pieces, tokenizer)
        s = None if plan[-1][1] >= n else _next_start(plan[-1][1], plan[-1][0], settings.overlap, scores)
        for (a, p), start, end, (n_model, normalized) in zip(plan, char_starts, char_ends, counts):
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
            spans.append(ChunkSpan(start, end, a, n_model, normalized))
            last_cut = p
    return spans, n


def _plan_cuts(s, last_cut, n, budget, overlap, scores: _BoundaryScores, shrunk) -> list[tuple[int, int]]:
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


def _model_token_counts(
    char_ranges: list[tuple[int, int]], raw_counts: list[int | None], pieces: _ChangedPieces, tokenizer
) -> list[tuple[int, str]]:
    """(tokens the model sees, normalised text) per chunk ``doc_text[start:end]``.

    A chunk cut cleanly between words has its ``raw`` document tokens. Normalisation leaves
    its text as it is but for whitespace, except in a few space-delimited pieces
    (``changing_pieces``), and WordPiece tokenizes space-delimited pieces independently:
    the count is ``raw`` plus what normalising those pieces adds, plus [CLS] and [SEP].
    A chunk cut inside a word is tokenized again whole.
    """
    layouts = [pieces.slices.pieces(start, end) for start, end in char_ranges]
    normalized = [pieces.slices.normalized(start, end, layout) for (start, end), layout in zip(char_ranges, layouts)]
    counts = [0 if r is None else r + 2 for r in raw_counts]
    recount = [i for i, r in enumerate(raw_counts) if r is None]
    if recount:
        for i, enc in zip(recount, tokenizer.encode_batch([normalized[i] for i in recount], add_special_tokens=False)):
            counts[i] = len(enc.ids) + 2
    counted = [i for i, r in enumerate(raw_counts) if r is not None]
    pieces.count_edges([edge for i in counted for edge in layouts[i][2:] if edge], tokenizer)
    for i in counted:
        counts[i] += pieces.added(*layouts[i])
    return list(zip(counts, normalized))


class _ChangedPieces:
    """The pieces of one text that normalisation changes (``changing_pieces``, found once for
    the whole text by ``SliceNormalizer``, which also gives each chunk's normalised text),
    and the tokens each adds once normalised, summed over a chunk's pieces."""

    def __init__(self, slices: SliceNormalizer, token_starts: np.ndarray, tokenizer) -> None:
        self.token_starts = token_starts
        self.slices = slices
        self._tokenizer = tokenizer
        self._tokens_by_text: dict[str, int] = {}  # normalised piece -> its model tokens
        # Every whole piece's added tokens at once; 0, without asking the tokenizer, where no
        # character of it may change the count.
        los, his, folded = self.slices.los, self.slices.his, self.slices.folded
        codes, changing = self.slices.codes, self.slices.changing
        # the characters that may change the count: some of those that normalising may change
        recount_at = changing[_recount_table()[self.slices.bmp[changing]] | (codes[changing] > 0xFFFF)]
        self._isolates_cjk = _isolates_cjk(tokenizer)
        joins = self.slices.joins
        counted = np.ones(len(joins), dtype=bool)
        if self._isolates_cjk and joins:
            counted = ~_joins_keeping_count(codes, joins)
        # the joins that may change the count, by where they start
        self._counted_joins = sorted((join.start, join.end) for join, kept in zip(joins, counted.tolist()) if kept)
        self._recount_at = recount_at.tolist()
        # what makes a part of a piece worth counting: a character that may change the count, or
        # the start of a join that may (sorted positions)
        self._triggers = np.union1d(recount_at, np.array([start for start, _ in self._counted_joins], dtype=np.int64))
        # where normalising joins a line-end hyphen to the letters on either side: no part ends there
        hyphens = [(join.start - 1, join.end) for join in joins if join.after is None]
        self._hyphen_zones = (np.array([lo for lo, _ in hyphens], dtype=np.int64),
                              np.maximum.accumulate(np.array([hi for _, hi in hyphens], dtype=np.int64)))
        added = [0] * len(los)
        if los:
            may_change = self._triggers.searchsorted(his) > self._triggers.searchsorted(los)
            recount = [k for k in may_change.nonzero()[0].tolist() if folded[k] is not None]
            for k, extra in zip(recount, self._added_by_parts([(los[k], his[k]) for k in recount],
                                                              [folded[k] for k in recount])):
                added[k] = extra
        self._added_before = list(itertools.accumulate(added, initial=0))
        self._edge_added: dict[tuple[int, int], int] = {}  # part of a piece cut by a chunk's end -> added

    def added(self, first: int, last: int, left: tuple[int, int] | None, right: tuple[int, int] | None) -> int:
        """Tokens that normalising adds to a chunk with these pieces (``SliceNormalizer.pieces``)."""
        total = self._added_before[last] - self._added_before[first]
        return total + sum(self._edge_added[edge] for edge in (left, right) if edge)

    def count_edges(self, edges: list[tuple[int, int]], tokenizer) -> None:
        """Count the tokens added by these parts of pieces (in one tokenizer call)."""
        text = self.slices.text
        new = [edge for edge in dict.fromkeys(edges) if edge not in self._edge_added]
        recount = []
        for lo, hi in new:
            if self.slices.clipped(lo, hi) != text[lo:hi] and self._may_change_count(lo, hi):
                recount.append((lo, hi))
            else:
                self._edge_added[lo, hi] = 0
        if recount:
            added = self._added_by_parts(recount, [self.slices.clipped(*edge) for edge in recount])
            self._edge_added.update(zip(recount, added))

    def _added_by_parts(self, ranges: list[tuple[int, int]], normalized: list[str]) -> list[int]:
        """Tokens that normalising adds to each ``text[lo:hi]`` (normalised: ``normalized``).

        With a tokenizer that makes every Chinese character and punctuation mark a word of its
        own (``_isolates_cjk``), a range's count is the sum of its parts' between such characters
        where normalising keeps them as they are: only the parts holding something that may
        change the count are tokenized again (in CJK text, pieces between ASCII spaces are
        whole sentences; their parts are a few characters). Other texts' pieces are words:
        counted whole.
        """
        if self._isolates_cjk and self.slices.has_no_space_script:
            parts, owners = self._parts(ranges)
        else:
            parts, owners = ranges, list(range(len(ranges)))
        whole = [(lo, hi) == ranges[k] for (lo, hi), k in zip(parts, owners)]
        text = self.slices.text
        fresh = [text[lo:hi] for (lo, hi), is_whole in zip(parts, whole) if not is_whole]
        fresh_normalized = iter(normalize_each(list(dict.fromkeys(fresh))) if fresh else ())
        by_text = dict(zip(dict.fromkeys(fresh), fresh_normalized))
        part_texts = [normalized[k] if is_whole else by_text[text[lo:hi]]
                      for (lo, hi), k, is_whole in zip(parts, owners, whole)]
        added = [0] * len(ranges)
        for k, after, before in zip(owners, self.tokens_of(part_texts, self._tokenizer), self.raw_tokens(parts)):
            added[k] += after - before
        return added

    def _parts(self, ranges: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], list[int]]:
        """The parts of each range between characters at which token counts add up (a Chinese
        character or punctuation mark that normalising keeps a word of its own), those that
        may change the count, and the range each lies in."""
        bounds = np.array(ranges, dtype=np.int64).reshape(-1, 2)
        sizes = bounds[:, 1] - bounds[:, 0]
        firsts = sizes.cumsum() - sizes
        positions = (bounds[:, 0] - firsts).repeat(sizes) + np.arange(int(sizes.sum()))
        owner = np.arange(len(bounds)).repeat(sizes)
        codes = self.slices.codes
        split = _alone_table()[self.slices.bmp[positions]] & (codes[positions] <= 0xFFFF)
        split &= ~np.isin(positions, self._triggers)  # kept as it is
        following = np.minimum(positions + 1, len(codes) - 1)
        split &= ~_attach_table()[self.slices.bmp[following]]  # no mark or invisible joins it
        zone_starts, zone_ends = self._hyphen_zones
        if len(zone_starts):
            zone = zone_starts.searchsorted(positions, side="right") - 1
            split &= ~((zone >= 0) & (positions <= zone_ends[np.maximum(zone, 0)]))
        # parts: runs of the positions that are not split points, within one range
        opens = np.zeros(len(positions), dtype=bool)
        opens[firsts[sizes > 0]] = True
        opens[1:] |= split[:-1]
        part = opens.cumsum()
        kept = ~split
        if not kept.any():
            return [], []
        kept_positions, kept_parts = positions[kept], part[kept]
        run_starts = (np.concatenate(([True], kept_parts[1:] != kept_parts[:-1]))).nonzero()[0]
        part_lo = kept_positions[run_starts]
        part_hi = kept_positions[np.concatenate((run_starts[1:], [len(kept_positions)])) - 1] + 1
        counts = self._triggers.searchsorted(part_hi) > self._triggers.searchsorted(part_lo)
        return (list(zip(part_lo[counts].tolist(), part_hi[counts].tolist())),
                owner[kept][run_starts][counts].tolist())

    def _may_change_count(self, lo: int, hi: int) -> bool:
        """Whether normalising ``text[lo:hi]`` (a part of a piece) may change its token count:
        it holds a character that may, or a whole join that may."""
        if bisect.bisect_left(self._recount_at, lo) < bisect.bisect_left(self._recount_at, hi):
            return True
        joins = self._counted_joins
        return any(end <= hi for _, end in joins[bisect.bisect_left(joins, (lo,)) : bisect.bisect_left(joins, (hi,))])

    def tokens_of(self, folded: list[str], tokenizer) -> list[int]:
        """Model tokens of each normalised piece, without [CLS] and [SEP].

        Pieces repeat (a word with a ligature, the overlap of two chunks): each text is
        counted once. The new ones are tokenized in one call, joined by spaces, and their
        tokens told apart by offsets: a space separates words for WordPiece, so each piece
        tokenizes as it would alone, and one call costs far less than one per piece.
        """
        new = sorted({text for text in folded if text not in self._tokens_by_text})
        if new:
            joined, starts, at = [], [], 0
            for text in new:
                starts.append(at)
                joined.append(text)
                at += len(text) + 1
            offsets = tokenizer.encode(" ".join(joined), add_special_tokens=False).offsets
            token_starts = np.fromiter(itertools.chain.from_iterable(offsets), np.int64, 2 * len(offsets))[::2]
            bounds = token_starts.searchsorted(np.array(starts + [at], dtype=np.int64))
            self._tokens_by_text.update(zip(new, np.diff(bounds).tolist()))
        return [self._tokens_by_text[text] for text in folded]

    def raw_tokens(self, pieces: list[tuple[int, int]]) -> list[int]:
        """The document's tokens that start in each piece."""
        if not pieces:
            return []
        bounds = self.token_starts.searchsorted(np.array(pieces, dtype=self.token_starts.dtype))
        return (bounds[:, 1] - bounds[:, 0]).tolist()


@functools.cache
def _recount_table() -> np.ndarray:
    """``_recount_characters`` over the BMP as a table (astral characters all count)."""
    table = np.zeros(0x10000, dtype=bool)
    table[[ord(c) for c in _recount_characters()]] = True
    return table


def _joins_keeping_count(codes: np.ndarray, joins: list[Join]) -> np.ndarray:
    """Per join, whether it leaves the model's tokens as they were: whitespace between two CJK
    characters where one of them is a word of its own to the tokenizer anyway (a Chinese
    character or punctuation; see ``_isolates_cjk``). A line-end hyphen joins two words into
    one: never."""
    between_cjk = np.array([join.after is not None for join in joins], dtype=bool)
    sides = codes[np.array([(join.start, join.start if join.after is None else join.after) for join in joins],
                           dtype=np.int64)]
    alone = _alone_table()[np.minimum(sides, 0xFFFF)] & (sides <= 0xFFFF)
    for row, column in zip(*np.nonzero(sides > 0xFFFF)):  # astral characters: rare, looked at one by one
        alone[row, column] = _alone_to_bert(chr(sides[row, column]))
    return between_cjk & alone.any(axis=1)


# BERT's "Chinese characters": its normaliser puts spaces around each.
_BERT_CHINESE = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
                 (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _alone_to_bert(char: str) -> bool:
    code = ord(char)
    return _is_punctuation(char) or any(a <= code <= b for a, b in _BERT_CHINESE)


def _isolates_cjk(tokenizer) -> bool:
    """Whether the tokenizer makes every Chinese character and punctuation mark a word of its
    own (BERT's normaliser with ``handle_chinese_chars`` and its pre-tokenizer), so that
    removing whitespace next to one changes no token."""
    normalizer, pre_tokenizer = getattr(tokenizer, "normalizer", None), getattr(tokenizer, "pre_tokenizer", None)
    return (
        type(normalizer).__name__ == "BertNormalizer"
        and bool(getattr(normalizer, "handle_chinese_chars", False))
        and type(pre_tokenizer).__name__ == "BertPreTokenizer"
    )


@functools.cache
def _recount_characters() -> frozenset[str]:
    """Characters whose normalisation may change how many tokens the model sees around them.

    Of the characters normalisation changes (``changing_set``), some keep the count: a
    punctuation character folded to one punctuation character (each is a token of its own,
    or [UNK]), a format character folded to nothing (BERT deletes it too), and a space
    separator (BERT splits at it as Python does). The rest, and every astral character, may not.
    """
    keeps = set()
    for char in changing_set():
        folded = normalize(char)
        category = unicodedata.category(char)
        if (
            (_is_punctuation(char) and len(folded) == 1 and _is_punctuation(folded))
            or (category == "Cf" and folded == "")
            or category[0] == "Z"
        ):
            keeps.add(char)
    return frozenset(changing_set() - keeps)


def _is_punctuation(char: str) -> bool:
    # BERT's rule: ASCII punctuation, or any character of a Unicode punctuation category
    return char in _ASCII_PUNCTUATION or unicodedata.category(char)[0] == "P"


_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@functools.cache
def _alone_table() -> np.ndarray:
    """``_alone_to_bert`` over the BMP (index with codes clipped to 0xFFFF; astral ones apart)."""
    return np.array([_alone_to_bert(chr(code)) for code in range(0x10000)], dtype=bool)


@functools.cache
def _attach_table() -> np.ndarray:
    """The characters that may join the one before them into one cluster, over the BMP: marks
    and format characters (the invisible ones among them); U+FFFF, where astral characters
    land, counts."""
    table = np.array([unicodedata.category(chr(code))[0] == "M" or unicodedata.category(chr(code)) == "Cf"
                      for code in range(0x10000)], dtype=bool)
    table[0xFFFF] = True
    return table


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


def _best_cut(scores: _BoundaryScores, lo: int, hi: int, s: int) -> int:
    """The highest-scoring cut in [lo, hi]; a forced cut at hi when no word boundary exists."""
    ties = scores.strongest(max(lo, s + 1), hi)
    if not ties:
        return hi
    if len(ties) == 1:
        return ties[0]
    # Ties between boundaries of one strength: the highest hash of the text around them wins
    # (the first of equal hashes), so the choice depends on the content, not the position.
    hashes = scores.content_hashes(ties)
    return ties[hashes.index(max(hashes))]


def _next_start(cut: int, prev_start: int, overlap: int, scores: _BoundaryScores) -> int:
    """Where the chunk after a cut at token ``cut`` begins: up to ``overlap`` tokens back.

    The start is the strongest boundary in the first three quarters of the overlap, the
    earliest of equals (most context kept), so a chunk opens on a paragraph or a sentence
    where one is near rather than mid-clause; at least a quarter of the overlap remains.
    Like the cuts, it depends only on the text around it.
    """
    lo = max(cut - overlap, prev_start + 1)
    hi = max(lo, cut - overlap // 4)
    first = scores.strongest(lo, hi, first_only=True)
    if first:
        return first[0]
    start = lo  # no boundary in the window: the first after it, else the cut itself
    while start < cut and scores.strength[start] < 0:
        start += 1
    return start


def _lookup(chars) -> np.ndarray:
    """A table over the BMP, True at ``chars`` (index with codes clipped to 0xFFFF, kept False)."""
    table = np.zeros(0x10000, dtype=bool)
    table[[ord(c) for c in chars]] = True
    return table


_SENTENCE_ENDS = _lookup(_SENTENCE_END)
_SPACES = _lookup(c for c in map(chr, range(0x10000)) if c.isspace())  # what \s matches
_CLOSES = _lookup(_CLOSERS)


class _BoundaryScores:
    """How good a place to cut before each token p is: ``strength[p]`` (INSIDE_WORD ... PARAGRAPH;
    ``strength[n]`` is the end of the text) and, for ties, a hash of the text around it.

    Strengths are computed for every token at once; hashes only for the ties a cut has to break.
    """

    def __init__(self, doc_text: str, bmp: np.ndarray, tokens: TokenSpans) -> None:
        n = len(tokens)
        self.starts, self.ends = tokens.starts, tokens.ends
        self._doc_text = doc_text
        strength = np.empty(n + 1, dtype=np.int8)
        strength[0] = INSIDE_WORD  # never a cut: a chunk holds a token at least
        strength[n] = ATTACHED  # the end of the document, only ever chosen as the last cut
        if n > 1:
            strength[1:n] = _strengths(doc_text, bmp, self.starts, self.ends, tokens.word_ids)
        self.strength = strength
        # A cut before token p whose slice holds exactly the tokens on its side: p begins a
        # word and shares no character with the token before it (the jamo of one Hangul
        # syllable are several tokens with the same offsets). A gap is not enough: BERT deletes
        # control characters (U+0080..U+009F, NEL), so a word can run on across one.
        clean = np.ones(n + 1, dtype=bool)
        clean[1:n] = ((strength[1:n] >= 0) & (self.ends[:-1] <= self.starts[1:])
                      & (tokens.word_ids[1:] != tokens.word_ids[:-1]))
        self._clean = clean
        # The line, sentence and paragraph boundaries as sorted lists per strength, made when
        # first needed: a window's best boundaries are found by bisection, not by a pass over
        # the window. Word boundaries, most tokens, are looked for in the window itself (few
        # windows hold no line break).
        self._by_strength: dict[int, list[int]] | None = None

    def strongest(self, lo: int, hi: int, first_only: bool = False) -> list[int]:
        """The boundaries in [lo, hi] of the highest strength there (ATTACHED at least), in
        order; only the first with ``first_only``; none when no boundary lies there."""
        by_strength = self._by_strength
        if by_strength is None:
            at = (self.strength >= LINE).nonzero()[0]
            levels = self.strength[at]
            by_strength = self._by_strength = {level: at[levels == level].tolist() for level in _CUT_STRENGTHS[:3]}
        for level in _CUT_STRENGTHS[:3]:
            positions = by_strength[level]
            i = bisect.bisect_left(positions, lo)
            if i < len(positions) and positions[i] <= hi:
                return [positions[i]] if first_only else positions[i : bisect.bisect_right(positions, hi, i)]
        window = self.strength[lo : hi + 1]
        for level in _CUT_STRENGTHS[3:]:
            found = (window == level).nonzero()[0]
            if len(found):
                return [lo + int(found[0])] if first_only else (found + lo).tolist()
        return []

    def exact_cut(self, p: int) -> bool:
        return bool(self._clean[p])

    def content_hashes(self, boundaries: list[int]) -> list[int]:
        """crc32 of the UTF-8 of the two tokens around each boundary (before token p) and what
        lies between; 0 for the end of the text."""
        n, text, starts, ends = len(self.starts), self._doc_text, self.starts, self.ends
        # from the start of the token before the boundary to the end of the token after it
        return [zlib.crc32(text[starts.item(p - 1) : ends.item(p)].encode("utf-8", "surrogatepass")) if p < n else 0
                for p in boundaries]


def _strengths(doc_text: str, bmp: np.ndarray, starts: np.ndarray, ends: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """Boundary strength before tokens 1 .. n-1 (see the constants at the top); ``bmp``: the
    text's code points clipped to 0xFFFF."""
    prev_start, prev_end, next_start = starts[:-1], ends[:-1], starts[1:]
    inside = (word_ids[1:] == word_ids[:-1]) & (next_start == prev_end)
    has_gap = next_start > prev_end
    # The token's last character; a lone closing quote or bracket passes the test to the one before.
    last = _CHAR_KINDS[bmp[prev_end - 1]]  # (an empty first token's end, 0, reads the text's last)
    closers = ((last & _CLOSER).astype(bool) & (prev_end - prev_start == 1) & (prev_start > 0)).nonzero()[0]
    ends_sentence = last & _SENTENCE_ENDER
    ends_sentence[closers] = _CHAR_KINDS[bmp[prev_start[closers] - 1]] & _SENTENCE_ENDER
    cjk_next = (_CHAR_KINDS[bmp[next_start]] & _CJK).astype(bool)
    apart = has_gap | cjk_next
    strength = (apart | (last & _CJK).astype(bool)).view(np.int8)  # WORD where True, else ATTACHED
    strength[ends_sentence.astype(bool) & apart] = SENTENCE
    gaps = has_gap.nonzero()[0]
    if len(gaps):
        _mark_breaks(doc_text, bmp, gaps, prev_end[gaps], next_start[gaps], strength)
    strength[inside] = INSIDE_WORD
    return strength


# What a character is for a cut, a bit per kind, over the BMP (astral ones index U+FFFF: none).
_SENTENCE_ENDER, _CLOSER, _CJK = 1, 2, 4
_CHAR_KINDS = (
    _SENTENCE_ENDS * _SENTENCE_ENDER
    + _CLOSES * _CLOSER
    # scripts written without spaces, between whose characters a cut needs no gap. Not Hangul:
    # Korean puts spaces between words, and the model splits a syllable into jamo tokens that
    # share its offsets, so a cut between syllables would fall inside a word.
    + _lookup(chr(c) for c in [*range(0x3000, 0xA000), *range(0xF900, 0xFB00)]) * _CJK
).astype(np.uint8)

# What a gap between tokens holds, a bit per kind of character (astral ones index U+FFFF: not a space).
_NEWLINE, _LINE_BREAK_CHAR, _FORM_FEED, _NOT_SPACE = 1, 2, 4, 8
_GAP_FLAGS = np.where(_SPACES, 0, _NOT_SPACE).astype(np.uint8)
_GAP_FLAGS[0x0A] |= _NEWLINE | _LINE_BREAK_CHAR
_GAP_FLAGS[0x0D] |= _LINE_BREAK_CHAR
_GAP_FLAGS[0x0C] |= _FORM_FEED


def _mark_breaks(doc_text: str, bmp: np.ndarray, gaps: np.ndarray, lo: np.ndarray, hi: np.ndarray, strength: np.ndarray) -> None:
    """Raise the strength of the gaps ``doc_text[lo:hi]`` before tokens ``gaps`` that hold a line
    break (LINE, unless a sentence ends there) or a paragraph break (PARAGRAPH)."""
    held, newlines = _gap_contents(bmp, lo, hi)
    line = (held & _LINE_BREAK_CHAR).astype(bool) & (strength[gaps] != SENTENCE)
    strength[gaps[line]] = LINE
    # A paragraph: a form feed, or two newlines with only whitespace between them (a gap of
    # whitespace alone with two newlines has that; any other gap is searched).
    two_newlines = newlines >= 2
    only_spaces = (held & _NOT_SPACE) == 0
    strength[gaps[(held & _FORM_FEED).astype(bool) | (two_newlines & only_spaces)]] = PARAGRAPH
    for q, a, b in zip(*(x[two_newlines & ~only_spaces].tolist() for x in (gaps, lo, hi))):
        if _PARAGRAPH_GAP.search(doc_text, a, b):
            strength[q] = PARAGRAPH


def _gap_contents(bmp: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per gap ``[lo, hi)``: the ``_GAP_FLAGS`` of its characters or'ed, and its newlines.

    Most gaps are one space: those are looked up directly; the characters of the others are
    gathered into one array and reduced per gap, so the work follows the gaps, not the text.
    """
    lengths = hi - lo
    held = _GAP_FLAGS[bmp[lo]]  # right for gaps of one character
    newlines = (held & _NEWLINE).astype(np.int64)
    longer = (lengths > 1).nonzero()[0]
    if len(longer):
        sizes = lengths[longer]
        firsts = sizes.cumsum() - sizes  # where each gap's characters begin in the gathered array
        positions = (lo[longer] - firsts).repeat(sizes) + np.arange(int(sizes.sum()))
        flags = _GAP_FLAGS[bmp[positions]]
        held[longer] = np.bitwise_or.reduceat(flags, firsts)
        newlines[longer] = np.add.reduceat(flags & _NEWLINE, firsts, dtype=np.int64)
    return held, newlines


def make_chunks(doc: ParsedDocument, spans: list[ChunkSpan], first_vector_id: int = 0) -> list[Chunk]:
    """Chunk records of one document, with pages where the document has them, its title, and
    the headings each chunk starts under (``ingest.text.sections``)."""
    pages = doc.pages or doc.office_pages  # PDF pages, or PPTX slides and XLSX sheets
    page_starts = [p.start for p in pages]
    doc_version = doc.doc_version
    hidden = HiddenText(doc.hidden_runs)
    if doc.headings and doc.hidden_runs:  # a heading a reader cannot see (a browser's verdict, too) heads nothing
        doc = dataclasses.replace(doc, headings=tuple(h for h in doc.headings if not hidden.count(h.start, h.start + 1)))
    title, sections = document_title(doc), SectionPaths(doc.headings)
    chunks = []
    for seq, span in enumerate(spans):
        text = doc.text[span.start : span.end]
        page_start = page_end = None
        if page_starts:
            page_start = pages[max(0, bisect.bisect_right(page_starts, span.start) - 1)].page
            page_end = pages[max(0, bisect.bisect_right(page_starts, span.end - 1) - 1)].page
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
                title=title,
                headings=sections.at(span.start),
            )
        )
    return chunks


def embed_text(chunk_text: str) -> str:
    """The string the model embeds for a chunk: its normalised text."""
    return normalize(chunk_text)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
