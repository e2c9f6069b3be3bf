"""The lexical index of a segment: BM25 postings of its chunks' texts, beside its vectors.

Names, part numbers, figures and exact phrases are what an embedding blurs and
what a reader types; a BM25 index finds them. It is the Lucene variant of BM25
(the weights ``bm25s`` gives, to the bit). Each segment stores the postings of its
chunks as one Parquet table (``lexical.parquet``, schema ``schemas.tables.LEXICAL``),
one row per token: ``token``, ``vector_ids`` (the chunks holding it), ``counts``
(how often) and ``lengths`` (each chunk's length in tokens).

The weights depend on the whole live corpus (chunk count, document frequencies, mean
length), which changes with every reindex; so they are not stored. A reader weighs a
query's postings with the live generation's statistics (``bm25_weights``): document
frequencies counted over the live postings, the mean length from the manifest's
counts, and gets the scores a full rebuild of the live corpus gives, to the bit. A
build therefore tokenises only the chunks it writes. The table is built in two passes
so that memory does not grow with the segment: the first tokenises the chunks a batch
at a time and writes the batch's (token, chunk, count) triples to a file; the second
gathers a range of tokens at a time, read back from that file, and writes it as a row
group. Text a reader cannot see (hidden runs) is
left out, as it is left out of what is embedded: hidden text never draws a
search to a chunk.

Tokens. The same function tokenises chunks and queries:

- the text is folded as the embedder's normaliser folds it, without keeping
  an offset map (ten times faster): NFKC (ligatures, full-width forms), a
  hyphen at a line end between letters joined away, soft hyphens and
  zero-width characters dropped, no break between two CJK characters, then
  case-folded;
- Latin, Greek and Cyrillic diacritics and Arabic short vowels are removed,
  Arabic and Persian letter variants folded (ي/ى→ی, ك→ک, أ/إ/آ→ا), so a query
  typed without them still matches;
- a word is a run of letters, digits and combining marks (anything else separates);
- scripts written without spaces between words (Han, Hiragana, Katakana, Thai,
  Lao, Khmer, Myanmar) and Hangul, whose words carry attached particles, are
  cut into overlapping character bigrams (a single character stays a unigram):
  ``東京都`` → ``東京``, ``京都``. Bigrams need no dictionary and find any word
  of two or more characters; a one-character query word in those scripts only
  matches where it stands alone.

- a chunk holds each word as written and, where the Snowball stemmer (PyStemmer) of
  its language (``chunks.language``, ``ingest.text.language``; ``STEMMERS``: Arabic,
  German, English, Persian, Polish, Russian and 28 more) changes it, its stem as well:
  ``подольского`` gives ``подольского`` and ``подольск``. Words are stemmed before the
  diacritics are removed (Polish ``ą`` and Russian ``й`` end words the stemmers know);
  words with a digit (part numbers, figures) and bigrams are never stemmed.

A query is a few words, too few to tell its language by (a name, a figure, "Ok"); so each
of its words is looked up as written and as stemmed in every language whose stemmer the
index used (``languages`` in the table's metadata), and matches any of those forms
(``query_tokens``): the chunk's stem is among them whatever the chunk's language, and a
word typed as the text writes it weighs twice. Measured on the labelled questions' tune
split (recall@5 / MRR@10 of lexical search, 231 questions): no stemming 0.875 / 0.714;
stems alone, the query in the index's languages 0.879 / 0.754; the query in all 34
stemmers' 0.875 / 0.748; each word as written and its stem (this) 0.887 / 0.759.

No stop words: BM25's IDF already gives frequent words little weight.

What is tokenised for a chunk (``lexical_texts``) is its section context, the document's title
and the headings above it, then its visible text: a query that names a chapter or a page's title
finds the chunks under it. Everything that counts a chunk's tokens (the build, a masked
document's share of the mean length, fsck's rebuild) reads it through ``lexical_texts``, from
the stored chunk rows, so the statistics never drift. The context came with the chunks' title
and headings columns (format version 8), which a reader of an older index refuses and a build
rebuilds in full: the tokens of one stored row never change, so ``TOKENIZER_VERSION`` stays.
"""

from __future__ import annotations

import array
import collections
import itertools
import json
import math
import os
import re
import tempfile
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.parquet as pq
import regex
import Stemmer

from ingest.text import HiddenText, is_no_space_script, section_text
from schemas.tables import LEXICAL, META_LEXICAL, hidden_run_records, with_metadata

TOKENIZER_VERSION = 2  # bump when tokens would differ for the same text: the index must be rebuilt (2: stems)
K1 = 1.5
B = 0.75
METHOD = "lucene"
# The columns of chunks.parquet that ``lexical_texts`` reads: every caller selects these.
LEXICAL_CHUNK_COLUMNS = ("doc_id", "start", "text", "n_hidden", "title", "headings")  # what lexical_texts reads
ANALYSED_CHUNK_COLUMNS = (*LEXICAL_CHUNK_COLUMNS, "language")  # what chunk_analyses reads
POSTINGS_BATCH = 1024  # chunks tokenised per step of the first pass
RANGE_POSTINGS = 1 << 16  # postings weighed and written per step of the second (a row group, ~5 MB held)

# Letters, digits and the marks that belong to them (Indic vowel signs, viramas).
_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
# As in ingest.text.normalize: a hyphen (or soft hyphen) at a line end between two letters joins them.
_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])[-\u00ad\u2010\u2011][ \t]*(?:\r\n|\r|\n|\f)\s*(?=[^\W\d_])")
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
_GAP = re.compile(r"(?<=[^\x00-\x7f])\s+(?=[^\x00-\x7f])")
_DIACRITICS = re.compile("[\u0300-\u036f\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")
_DIGIT = re.compile(r"\d")
# The few of those that are not letters or marks: removed before words are cut (they join the letters around them).
_NON_MARK_DIACRITICS = re.compile("[\u06dd\u06de\u06e9]")
_LETTER_FOLDS = str.maketrans(
    {"\u064a": "\u06cc", "\u0649": "\u06cc", "\u0643": "\u06a9", "\u0623": "\u0627", "\u0625": "\u0627", "\u0622": "\u0627"}
)
# Beyond CJK (ingest.text.normalize): Thai, Lao, Myanmar, Khmer are written without spaces; Hangul
# words carry particles (확진자는 = 확진자 + 는), so bigrams find the word inside them.
_BIGRAM_RANGES = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF))
# The Snowball stemmers of PyStemmer, by the ISO 639-1 code of a chunk's language (chunks.language).
STEMMERS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish", "nl": "dutch",
    "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "st": "sesotho", "es": "spanish", "sv": "swedish",
    "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}


def _bigram_script(char: str) -> bool:
    code = ord(char)
    return is_no_space_script(char) or any(a <= code <= b for a, b in _BIGRAM_RANGES)


def _fold(text: str) -> str:
    """Case-folded, ligatures and hyphenation undone; diacritics and letter variants stay (``_unmark``)."""
    folded = _HYPHEN_BREAK.sub("", unicodedata.normalize("NFKC", text)).translate(_INVISIBLE)
    return _NON_MARK_DIACRITICS.sub("", _GAP.sub(_gap, folded).casefold())


def _unmark(word: str) -> str:
    """A word (or its stem) without diacritics and with Arabic and Persian letter variants unified."""
    if word.isascii():
        return word
    word = unicodedata.normalize("NFC", _DIACRITICS.sub("", unicodedata.normalize("NFD", word)))
    return word.translate(_LETTER_FOLDS)


def _gap(match: re.Match) -> str:
    # Whitespace between two CJK characters is a line break inside a sentence, not a word break.
    text, start, end = match.string, match.start(), match.end()
    return "" if is_no_space_script(text[start - 1]) and is_no_space_script(text[end]) else " "


_STEMMERS_OF_THREAD = threading.local()  # a PyStemmer object is not thread-safe: one per thread and language


def _stemmer(language: str):
    """The stemmer of ``language`` (ISO 639-1) as a function of a word; None where there is none."""
    name = STEMMERS.get(language)
    if name is None:
        return None
    stemmers = _STEMMERS_OF_THREAD.__dict__.setdefault("stemmers", {})
    if name not in stemmers:
        stemmers[name] = Stemmer.Stemmer(name).stemWord
    return stemmers[name]


def lexical_tokens(text: str, language: str = "") -> list[str]:
    """The BM25 tokens of ``text`` (a chunk's): its words as written (folded), then the stems of those
    that ``language``'s stemmer changes (ISO 639-1; "" or a language without one: none). A query's
    are ``query_tokens``.

    >>> lexical_tokens("The ﬁnal Top-5 accuracy: 65.2%")
    ['the', 'final', 'top', '5', 'accuracy', '65', '2']
    >>> lexical_tokens("Café Müller")
    ['cafe', 'muller']
    >>> lexical_tokens("梁振英道歉 확진자는 Wehr\\u00admauer")
    ['梁振', '振英', '英道', '道歉', '확진', '진자', '자는', 'wehrmauer']
    >>> lexical_tokens("Подольский забил голов", "ru")
    ['подольскии', 'забил', 'голов', 'подольск', 'заб', 'гол']
    """
    forms = token_forms(text, language)
    return [written for written, _ in forms] + [stem for written, stem in forms if stem != written]


def token_forms(text: str, language: str = "") -> list[tuple[str, str]]:
    """(as written, stem in ``language``) of each token of ``text``, in order; the stem is the token
    itself where there is no stemmer, a digit or a bigram.

    >>> token_forms("the runners were running 3rd", "en")
    [('the', 'the'), ('runners', 'runner'), ('were', 'were'), ('running', 'run'), ('3rd', '3rd')]
    """
    language_stem = _stemmer(language)
    forms: list[tuple[str, str]] = []
    for match in _WORD.finditer(_fold(text)):
        word = match.group()
        stem = None if _DIGIT.search(word) else language_stem  # a part number or figure stays as it is written
        if word.isascii():
            forms.append((word, stem(word) if stem else word))
            continue
        bare = _unmark(word)
        if not bare:  # marks alone (a spacing diaeresis, NFKC'd): nothing of a word
            continue
        if not any(map(_bigram_script, bare)):  # a word of an alphabet: stemmed as it is written
            forms.append((bare, _unmark(stem(word)) if stem else bare))
            continue
        start = 0
        while start < len(bare):
            bigrams = _bigram_script(bare[start])
            end = start + 1
            while end < len(bare) and _bigram_script(bare[end]) == bigrams:
                end += 1
            piece = bare[start:end]
            if not bigrams:
                forms.append((piece, _unmark(stem(piece)) if stem else piece))
            elif len(piece) == 1:
                forms.append((piece, piece))
            else:
                forms.extend((piece[i : i + 2],) * 2 for i in range(len(piece) - 1))
            start = end
    return forms


def query_tokens(query: str, languages: Iterable[str]) -> list[tuple[str, ...]]:
    """The forms of each token of ``query`` that a chunk holds, whatever its language among
    ``languages``: as written, then its stem in each of them, each form once.

    >>> query_tokens("Подольского голы 2016", ["ru", "en", "zh"])
    [('подольского', 'подольск'), ('голы', 'гол'), ('2016',)]
    """
    analyses = [token_forms(query, language) for language in sorted(set(languages)) if language in STEMMERS]
    analyses = analyses or [token_forms(query)]
    return [tuple(dict.fromkeys([forms[0][0], *(stem for _, stem in forms)])) for forms in zip(*analyses, strict=True)]


def lexical_texts(chunks: Iterable[pa.RecordBatch], hidden_text: pa.Table) -> Iterator[str]:
    """What each chunk gives the lexical index, in row order: its section context (the document's
    title and the headings above it, ``ingest.text.sections.section_text``), then its text with
    the runs a reader cannot see (``hidden_text`` rows) blanked, as they are left out of what it
    embeds. A query naming a chapter finds the chunks under it, not only the heading's own chunk.

    ``chunks``: batches with the columns ``LEXICAL_CHUNK_COLUMNS`` of chunks.parquet.
    """
    runs_by_doc: dict[str, HiddenText] = {}
    if hidden_text.num_rows:
        doc_ids = hidden_text.column("doc_id").to_pylist()
        for doc_id in dict.fromkeys(doc_ids):
            rows = hidden_text.filter(pa.compute.equal(hidden_text.column("doc_id"), doc_id))
            runs_by_doc[doc_id] = HiddenText(hidden_run_records(rows))
    for batch in chunks:
        columns = batch.to_pydict()
        for doc_id, start, text, n_hidden, title, headings in zip(*(columns[c] for c in LEXICAL_CHUNK_COLUMNS)):
            hidden = runs_by_doc.get(doc_id) if n_hidden else None
            visible = hidden.visible_in(text, start) if hidden else text
            context = section_text(title, headings or ())
            yield f"{context}\n{visible}" if context else visible


def chunk_analyses(chunks: Iterable[pa.RecordBatch], hidden_text: pa.Table) -> Iterator[tuple[str, str]]:
    """(what the lexical index takes of it, its language) of each chunk, in row order: ``lexical_texts``
    with the chunk's ``language`` beside (a column the batches carry besides those it reads)."""
    languages: collections.deque[str] = collections.deque()

    def batches():
        for batch in chunks:
            languages.extend(batch.column("language").to_pylist())
            yield batch

    for text in lexical_texts(batches(), hidden_text):  # it reads a batch whole before its first text
        yield text, languages.popleft()


def lexical_table(texts: Iterable[str | tuple[str, str]], vector_ids: np.ndarray | list[int] | None = None) -> pa.Table:
    """The postings table of ``texts`` (chunk i has vector id ``vector_ids[i]``, else i; a text, or a
    text and its language: ``chunk_analyses``), in memory
    (``write_lexical`` streams the same rows to a file); its schema metadata holds the settings a
    reader checks and the chunk and token counts (``lexical_metadata``).

    >>> table = lexical_table(["overage is billed per call", "billed monthly"])
    >>> row = dict(zip(table["token"].to_pylist(), zip(table["vector_ids"].to_pylist(), table["lengths"].to_pylist())))
    >>> row["billed"]
    ([0, 1], [5, 2])
    """
    with tempfile.TemporaryFile() as spill:
        counted = count_tokens(texts, Postings(spill))
        schema = LEXICAL.with_metadata(lexical_metadata(len(counted.chunk_lengths), int(counted.chunk_lengths.sum()),
                                                        counted.languages))
        ids = None if vector_ids is None else np.asarray(vector_ids, dtype=np.int64)
        return pa.Table.from_batches([b for t in posting_rows(counted, vector_ids=ids) for b in t.to_batches()], schema)


def count_tokens(texts: Iterable[str | tuple[str, str]], postings: Postings) -> TokenCounts:
    """The first pass over the chunk ``texts`` (each alone, or with its language): each chunk's token
    counts go to ``postings`` (a file), what BM25 needs of the whole corpus stays (lengths, document
    frequencies, the languages stemmed)."""
    vocabulary: dict[str, int] = {}
    stemmed: set[str] = set()
    lengths = array.array("q")
    doc_freqs = np.zeros(0, dtype=np.int64)
    texts = iter(texts)
    while batch := list(itertools.islice(texts, POSTINGS_BATCH)):
        first = len(lengths)
        ids = array.array("i")  # compact: a Python int per token for a whole corpus was the build's peak
        for item in batch:
            text, language = (item, "") if isinstance(item, str) else item
            tokens = lexical_tokens(text, language)
            if language in STEMMERS:
                stemmed.add(language)
            ids.extend([vocabulary.setdefault(token, len(vocabulary)) for token in tokens])
            lengths.append(len(tokens))
        triples = chunk_postings(np.frombuffer(ids, dtype=np.intc), np.array(lengths[first:], dtype=np.int64), first)
        doc_freqs = np.pad(doc_freqs, (0, len(vocabulary) - len(doc_freqs)))
        doc_freqs += np.bincount(triples[0], minlength=len(vocabulary))  # a token once per chunk: its df
        postings.add(triples)
    return TokenCounts(list(vocabulary), np.array(lengths, dtype=np.int64), doc_freqs, postings, tuple(sorted(stemmed)))


def chunk_postings(token_ids: np.ndarray, lengths: np.ndarray, first_chunk: int) -> np.ndarray:
    """(token id, vector id, count) of consecutive chunks, one column per token and chunk, sorted
    by token then chunk; ``token_ids`` are the chunks' tokens end to end, ``lengths`` how many each.

    >>> chunk_postings(np.array([5, 3, 5, 3]), np.array([3, 1]), 10).tolist()
    [[3, 3, 5], [10, 11, 10], [1, 1, 2]]
    """
    chunks = np.repeat(np.arange(first_chunk, first_chunk + len(lengths), dtype=np.int64), lengths)
    keys, counts = np.unique((token_ids.astype(np.int64) << 32) | chunks, return_counts=True)
    return np.stack([keys >> 32, keys & 0xFFFFFFFF, counts]).astype(np.int32)


def posting_rows(counted: TokenCounts, range_postings: int | None = None,
                 vector_ids: np.ndarray | None = None) -> Iterator[pa.Table]:
    """The rows of the postings table, token ids in order, a range of about ``range_postings``
    (default ``RANGE_POSTINGS``) postings at a time (a row group): what is held is that range,
    not the segment's postings. Chunk i of the texts is stored as vector id ``vector_ids[i]``
    (ascending), else i."""
    if not counted.tokens:
        return
    edges = _range_edges(counted.doc_freqs, range_postings or RANGE_POSTINGS)
    postings = counted.postings
    # Where each range starts in each spilled batch (each is sorted by token).
    starts = [np.searchsorted(postings.tokens(k), edges) for k in range(len(postings))]
    for r in range(len(edges) - 1):
        first, last = int(edges[r]), int(edges[r + 1])
        triples = np.concatenate([postings.segment(k, s[r], s[r + 1]) for k, s in enumerate(starts)], axis=1)
        # Batches come in chunk order: a stable sort by token keeps each token's chunks ascending.
        tokens, chunks, counts = triples[:, np.argsort(triples[0], kind="stable")]
        offsets = np.zeros(last - first + 1, dtype=np.int32)
        np.cumsum(np.bincount(tokens - first, minlength=last - first), out=offsets[1:])
        ids = chunks.astype(np.int64) if vector_ids is None else vector_ids[chunks]
        yield pa.table(
            [
                pa.array(counted.tokens[first:last], pa.string()),
                pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids, pa.int64())),
                pa.ListArray.from_arrays(pa.array(offsets), pa.array(counts.astype(np.int32))),
                pa.ListArray.from_arrays(pa.array(offsets), pa.array(counted.chunk_lengths[chunks].astype(np.int32))),
            ],
            schema=LEXICAL,
        )


def bm25_weights(counts: np.ndarray, lengths: np.ndarray, doc_freq: int, n_chunks: int, average: float) -> np.ndarray:
    """The BM25 weights of one token's postings in a corpus of ``n_chunks`` chunks of mean length
    ``average`` where ``doc_freq`` chunks hold it: bm25s's Lucene BM25, operation for operation
    (so equal to the bit): the IDF ``log(1 + (N - df + 0.5) / (df + 0.5))`` in float64 rounded to
    float32, times ``tf / (k1 * (1 - b + b * len / avg_len) + tf)`` in float64, rounded to float32.

    >>> weights = bm25_weights(np.array([1, 2]), np.array([4, 4]), doc_freq=2, n_chunks=4, average=4.0)
    >>> [round(float(w), 4) for w in weights]  # log 2 · 1/2.5, log 2 · 2/3.5
    [0.2773, 0.3961]
    """
    idf = bm25_idf(doc_freq, n_chunks)
    tf = counts.astype(np.float64)
    norms = K1 * ((1 - B) + B * lengths.astype(np.float64) / average)
    return (np.float64(idf) * (tf / (norms + tf))).astype(np.float32)


def bm25_idf(doc_freq: int, n_chunks: int) -> np.float32:
    """The IDF of a token ``doc_freq`` of ``n_chunks`` chunks hold, as ``bm25_weights`` weighs with
    it (float32); every weight of the token is below it.

    >>> round(float(bm25_idf(2, 4)), 4)  # log 2
    0.6931
    """
    return np.float32(math.log(1 + (n_chunks - doc_freq + 0.5) / (doc_freq + 0.5)))


def _range_edges(doc_freqs: np.ndarray, range_postings: int) -> np.ndarray:
    """Token id edges [0, ..., n_tokens] of ranges of about ``range_postings`` postings (a token
    with more is a range of its own)."""
    total = np.cumsum(doc_freqs)
    ends = np.searchsorted(total, np.arange(range_postings, total[-1], range_postings)) + 1
    return np.unique(np.concatenate([[0], ends, [len(doc_freqs)]]))


def lexical_metadata(n_chunks: int, n_tokens: int, languages: Iterable[str] = ()) -> dict[bytes, bytes]:
    """What a reader checks before it scores a query against the table, and what it holds (``languages``:
    those whose stemmer analysed its chunks, which a query is analysed in too)."""
    settings = {"tokenizer_version": TOKENIZER_VERSION, "k1": K1, "b": B, "method": METHOD, "n_chunks": n_chunks,
                "n_tokens": n_tokens, "languages": sorted(languages)}
    return {META_LEXICAL: json.dumps(settings, sort_keys=True).encode("utf-8")}


def write_lexical(path: Path, texts: Iterable[str | tuple[str, str]], model_id: str, model_dim: int,
                  vector_ids: np.ndarray | None = None) -> tuple[int, int]:
    """Build the postings table of the chunk ``texts`` and write it to ``path``, a range of tokens
    at a time; returns (chunks, tokens in them). ``vector_ids``: the texts' vector ids, in their
    order (an array that may be filled while ``texts`` is read); None: 0, 1, 2, ..."""
    # The postings wait in an unnamed file beside the table: gone however the build ends.
    with tempfile.TemporaryFile(dir=path.parent) as spill:
        counted = count_tokens(texts, Postings(spill))
        n_chunks, n_tokens = len(counted.chunk_lengths), int(counted.chunk_lengths.sum())
        metadata = {**with_metadata("lexical", model_id, model_dim).metadata,
                    **lexical_metadata(n_chunks, n_tokens, counted.languages)}
        with pq.ParquetWriter(path, LEXICAL.with_metadata(metadata), compression="zstd", use_dictionary=False) as writer:
            ids = None if vector_ids is None else np.asarray(vector_ids, dtype=np.int64)
            for rows in posting_rows(counted, vector_ids=ids):
                writer.write_table(rows)
            if not counted.tokens:
                writer.write_table(LEXICAL.empty_table())
    return n_chunks, n_tokens


@dataclass(frozen=True, slots=True, eq=False)
class TokenCounts:
    """What the first pass keeps of the corpus; its postings wait in a file."""

    tokens: list[str]  # by token id: the order of first occurrence
    chunk_lengths: np.ndarray  # int64, tokens per chunk, by vector id
    doc_freqs: np.ndarray  # int64, chunks holding each token, by token id
    postings: Postings
    languages: tuple[str, ...] = ()  # those whose stemmer analysed some chunk (STEMMERS' keys), sorted


class Postings:
    """Batches of (token, chunk, count) triples (``chunk_postings``) appended to ``file``, read
    back by slices."""

    def __init__(self, file) -> None:
        self._fd = file.fileno()
        self._batches: list[tuple[int, int]] = []  # (byte offset, postings)
        self._end = 0

    def __len__(self) -> int:
        return len(self._batches)

    def add(self, triples: np.ndarray) -> None:
        data = np.ascontiguousarray(triples, dtype=np.int32).tobytes()
        written = 0
        while written < len(data):
            written += os.pwrite(self._fd, data[written:], self._end + written)
        self._batches.append((self._end, triples.shape[1]))
        self._end += len(data)

    def tokens(self, batch: int) -> np.ndarray:
        offset, n = self._batches[batch]
        return self._read(offset, n)

    def segment(self, batch: int, start: int, stop: int) -> np.ndarray:
        """Postings ``start:stop`` of ``batch``, as a (3, stop - start) array."""
        offset, n = self._batches[batch]
        return np.stack([self._read(offset + 4 * (row * n + start), stop - start) for row in range(3)])

    def _read(self, offset: int, count: int) -> np.ndarray:
        data = b"".join(_pread_all(self._fd, 4 * int(count), int(offset)))
        return np.frombuffer(data, dtype=np.int32)


def _pread_all(fd: int, size: int, offset: int) -> Iterator[bytes]:
    while size > 0:
        block = os.pread(fd, size, offset)
        if not block:
            raise OSError(f"lexical postings file ended {size} bytes early")
        yield block
        size, offset = size - len(block), offset + len(block)
