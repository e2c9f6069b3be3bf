"""The language of a document and of each of its chunks: ISO 639-1 codes, "" where undetermined.

Identified by py3langid (a maintained fork of langid.py: a naive Bayes model over byte n-grams
that ships inside the package, 4.5 MB installed, numpy its only dependency). Measured on this
machine against lingua-language-detector 2.1 in its low-accuracy mode: py3langid takes 0.1 ms
for 1,000 characters and 76 MB once loaded (0.8 s); lingua 2.5 ms, 70-100 MB and 96 MB
installed. Lingua is the better of the two on a few words, but a chunk is a paragraph or more,
where both are right, and a build identifies every chunk: py3langid is 20 times cheaper.

The document's language is its whole text's (a sample of a very long one): a Japanese page
whose longest parts are tables of kanji is Japanese as a whole, though each table alone reads
as Chinese. A chunk gets its own language where the identifier is confident of it (enough
letters, a probability of at least ``MIN_PROBABILITY``), else its document's: a page of Russian
news with a Ukrainian headline block says so chunk by chunk, and a table of numbers takes the
language of the text around it. Where the whole text is too short or too mixed to tell (a
notice in nine languages read as a whole came out as Scottish Gaelic), that is, where no chunk
is in the language found for the whole, the document's language is the one most of its chunk
text is in.

A query is often too short for this to be trusted (a name, three words): lexical search does not
ask for a query's language (see ``ingest.store.lexical``); hybrid search asks, to weigh the dense
ranking, and gets "" under ``MIN_LETTERS`` (``index.search.fusion``).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LANGUAGE_VERSION = 2  # bump when the languages found for the same text would differ
MIN_LETTERS = 24  # fewer letters than this: too little to tell a language by
MIN_PROBABILITY = 0.5  # the identifier's normalised probability below which it is not trusted
SAMPLE_CHARS = 1 << 20  # of a document's text identified as a whole (its main language)
SAMPLE_PIECES = 16  # slices of a longer text that make up its sample
WALK_BYTES = 1 << 20  # of texts whose automaton states are computed together (~20 bytes of arrays each)


_loading = threading.Lock()


def preload_identifier() -> None:
    """Start loading the identifier in a thread (a build's worker, before its first file)."""
    threading.Thread(target=_identifier, name="load-py3langid", daemon=True).start()


def _identifier() -> _Identifier:
    # Loaded once per process, on first use: builds that never ask pay nothing.
    with _loading:
        return _loaded_identifier()


@functools.cache
def _loaded_identifier() -> _Identifier:
    identifier = _unpacked_model()
    if identifier is None:
        identifier = _Identifier.of(_packaged_model())
        _keep_unpacked(identifier)
    return identifier


def _packaged_model():
    """py3langid's own identifier, unpacked from the package, over ISO 639-1 languages only: the model
    also knows dialects and scripts under longer codes (yue, arz, zxx), which would leave a chunk of
    Cantonese or Egyptian Arabic without the stemmer of its language."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    model.set_languages([code for code in model.nb_classes if len(code) == 2])
    return model


@dataclass(frozen=True, slots=True, eq=False)
class _Identifier:
    """py3langid's model and its classification (``LanguageIdentifier.classify`` with normalised
    probabilities), over many texts at once, giving the same bits.

    py3langid walks its byte automaton in a Python loop and scores each text from a float16
    table with one column per language of the full model: a build spent 0.19 s walking and
    0.22 s scoring the shared corpus's 1,131 chunks. The state after a byte depends only on
    the ``depth`` bytes before it (the automaton's deepest state), so the states of every
    byte of a batch of texts come from ``depth`` vectorised steps; the table is kept as
    float32 rows (the values py3langid's product promotes them to), so a text's rows are
    read contiguously.
    """

    next_move: np.ndarray  # (state row << 8) + byte -> the next state
    row_base: np.ndarray  # per state: its row << 8
    feature_of: np.ndarray  # per state: the feature it counts, -1 for none
    depth: int  # the longest byte string a state stands for
    weights: np.ndarray  # per feature, per language: float32, C order
    priors: np.ndarray  # per language
    languages: tuple[str, ...]
    aliases: tuple[tuple[int, int], ...]  # (first, dupe) columns of a language named twice (sr, uz)

    @classmethod
    def of(cls, model) -> _Identifier:
        row_base = np.frombuffer(model.tk_row, dtype=model.tk_row.typecode).astype(np.int32) << 8
        next_move = np.frombuffer(model.tk_nextmove, dtype=model.tk_nextmove.typecode).astype(np.int32)
        return cls(next_move, row_base, np.asarray(model.tk_output, dtype=np.int32), _deepest(next_move, row_base),
                   np.ascontiguousarray(model.nb_ptc, dtype=np.float32), model.nb_pc, tuple(model.nb_classes),
                   tuple(model._alias_pairs))

    def classify(self, texts: Sequence[str], walk_bytes: int = WALK_BYTES) -> list[tuple[str, float]]:
        """(language, normalised probability) of each text, as py3langid's ``classify`` gives it; the
        texts are walked together up to ``walk_bytes`` (a longer one alone)."""
        from py3langid.langid import LanguageIdentifier

        encoded = [LanguageIdentifier._encode(text) for text in texts]
        found: list[tuple[str, float]] = []
        group: list[bytes] = []
        size = 0
        for data in encoded + [None]:
            if data is None or (group and size + len(data) > walk_bytes):
                found += [self._decided(text, features, counts) for text, (features, counts) in
                          zip(group, self._feature_counts(group))]
                group, size = [], 0
            if data is not None:
                group.append(data)
                size += len(data)
        return found

    def _feature_counts(self, texts: list[bytes]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each text's features and how often each occurs, in the order of their first occurrence
        (py3langid's ``visit_counts``: the order its scores are summed in)."""
        if not texts:
            return []
        lengths = np.array([len(text) for text in texts], dtype=np.int64)
        data = np.frombuffer(b"".join(texts), dtype=np.uint8).astype(np.int32)
        owner = np.repeat(np.arange(len(texts)), lengths)
        position = np.arange(len(data)) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # within its text
        states = np.zeros(len(data), dtype=np.int32)
        for back in range(self.depth - 1, -1, -1):  # each byte's state: walked from the root over its last `depth` bytes
            at = np.flatnonzero(position >= back)
            states[at] = self.next_move[self.row_base[states[at]] + data[at - back]]
        features = self.feature_of[states]
        counted = features >= 0
        keys = owner[counted] * len(self.weights) + features[counted]
        keys, first, counts = np.unique(keys, return_index=True, return_counts=True)
        in_order = np.argsort(first, kind="stable")  # texts in turn, each's features by first occurrence
        keys, counts = keys[in_order], counts[in_order]
        bounds = np.searchsorted(keys // len(self.weights), np.arange(len(texts) + 1))
        return [(keys[a:b] % len(self.weights), counts[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]

    def _decided(self, text: bytes, features: np.ndarray, counts: np.ndarray) -> tuple[str, float]:
        # py3langid's _raw_score, _decide and classify, operation for operation.
        if len(features):
            scores = np.log1p(counts.astype(np.float32)) @ self.weights[features] + self.priors
        else:
            scores = np.zeros(len(self.languages), dtype=np.float32)
        scores *= 1.0 / math.sqrt(len(text) or 1)
        np.exp(scores - scores.max(), out=scores)
        scores /= scores.sum()
        for first, dupe in self.aliases:
            scores[first] += scores[dupe]
            scores[dupe] = 0.0
        best = int(scores.argmax())
        return self.languages[best], float(scores[best])


def _deepest(next_move: np.ndarray, row_base: np.ndarray) -> int:
    """The depth of the automaton's deepest state, by breadth from the root (a state's shortest path
    is the byte string it stands for)."""
    seen = np.zeros(len(row_base), dtype=bool)
    seen[0] = True
    frontier, depth = np.zeros(1, dtype=np.int32), 0
    while True:
        reached = np.unique(next_move[(row_base[frontier][:, None] + np.arange(256, dtype=np.int32)).ravel()])
        frontier = reached[~seen[reached]]
        if not len(frontier):
            return depth
        seen[frontier] = True
        depth += 1


# py3langid ships its model LZMA-compressed: unpacking it takes 0.3 s of the 0.4 s a load costs,
# in every build worker and every reader that runs a hybrid query. The unpacked arrays are kept in
# the user's cache (~60 MB, once per py3langid version) and read from there in ~0.05 s.
def _unpacked_path() -> Path:
    from importlib.metadata import version

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "spanindex" / f"py3langid-{version('py3langid')}-iso639-1.npz"


def _unpacked_model() -> _Identifier | None:
    """The identifier from the unpacked copy, or None where there is none (or it cannot be read)."""
    try:
        with np.load(_unpacked_path(), allow_pickle=False) as arrays:
            return _Identifier(arrays["next_move"], arrays["row_base"], arrays["feature_of"], int(arrays["depth"]),
                               arrays["weights"].astype(np.float32), arrays["priors"],
                               tuple(arrays["languages"].tolist()),
                               tuple(map(tuple, arrays["aliases"].reshape(-1, 2).tolist())))
    except (OSError, ValueError, KeyError):
        return None


def _keep_unpacked(identifier: _Identifier) -> None:
    """Write the unpacked copy, through a temporary name; a cache that cannot be written is skipped.
    The weights are kept as the float16 they were (half the bytes; widening them is exact)."""
    path = _unpacked_path()
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as out:
            np.savez(out, next_move=identifier.next_move, row_base=identifier.row_base,
                     feature_of=identifier.feature_of, depth=np.array(identifier.depth),
                     weights=identifier.weights.astype(np.float16), priors=identifier.priors,
                     languages=np.array(identifier.languages), aliases=np.array(identifier.aliases, dtype=np.int64))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def identify_language(text: str) -> str:
    """The language of ``text`` (ISO 639-1), or "" where it is too short or the identifier unsure.

    >>> identify_language("Die Äpfel schälen und würfeln, dazu geben und drei Minuten mitbraten.")
    'de'
    >>> identify_language("12 345 / 67"), identify_language("Ok")
    ('', '')
    """
    return _identified([text])[0]


def _identified(texts: Sequence[str]) -> list[str]:
    """``identify_language`` of each text, those with enough letters classified together."""
    lettered = [i for i, text in enumerate(texts) if _has_letters(text, MIN_LETTERS)]
    found = [""] * len(texts)
    for i, (code, probability) in zip(lettered, _identifier().classify([texts[i] for i in lettered])):
        found[i] = code if probability >= MIN_PROBABILITY else ""
    return found


def _has_letters(text: str, wanted: int) -> bool:
    """Whether ``text`` holds at least ``wanted`` letters, read only as far as they are found (every
    character of every chunk and document counted was half the time a build spent on languages).

    >>> _has_letters("12 34 ab", 2), _has_letters("12 34 a", 2)
    (True, False)
    """
    for char in text:
        if char.isalpha():
            wanted -= 1
            if wanted <= 0:
                return True
    return wanted <= 0


def chunk_languages(texts: Sequence[str], document_text: str) -> tuple[list[str], str]:
    """(each chunk's language, the document's main language) of a document's chunk ``texts`` and its
    whole text; a chunk the identifier is unsure of takes the document's.

    >>> chunk_languages(["Подольски завершил карьеру в сборной Германии после чемпионата Европы.",
    ...                  "Задовго до Роналду та Мессі: Марадона аматорського футболу з Іспанії.", "13:29"],
    ...                 "Подольски завершил карьеру в сборной Германии после чемпионата Европы.")
    (['ru', 'uk', 'ru'], 'ru')
    """
    found = _identified(texts)
    weight: collections.Counter[str] = collections.Counter()
    for text, language in zip(texts, found):
        if language:
            weight[language] += len(text)
    if found and all(found) and len(weight) == 1:
        # Every chunk is confidently in one language: the whole is taken to be in it too. The
        # identifier's scores add up over a text's features and each chunk's are highest for
        # that language (only the class prior, counted once for the whole, could tip the sum);
        # on the shared corpus the whole text said the same for 39 of 39 such documents. The
        # second reading of every character (half of a build's language time) is left to the
        # documents whose parts disagree or are unsure.
        return found, found[0]
    main = identify_language(_sample(document_text))
    if weight and main not in weight:  # none of its parts is in that language: the whole was too mixed to tell
        main = weight.most_common(1)[0][0]
    return [language or main for language in found], main


def _sample(text: str) -> str:
    """The whole of ``text`` up to SAMPLE_CHARS, else SAMPLE_PIECES slices spread over it: the identifier's
    cost follows the characters it reads, and a long document does not change language every page."""
    if len(text) <= SAMPLE_CHARS:
        return text
    piece = SAMPLE_CHARS // SAMPLE_PIECES
    starts = [(len(text) - piece) * i // (SAMPLE_PIECES - 1) for i in range(SAMPLE_PIECES)]  # the last ends the text
    return "\n".join(text[start : start + piece] for start in starts)
