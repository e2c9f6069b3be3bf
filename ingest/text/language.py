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

import array
import collections
import contextlib
import functools
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

LANGUAGE_VERSION = 2  # bump when the languages found for the same text would differ
MIN_LETTERS = 24  # fewer letters than this: too little to tell a language by
MIN_PROBABILITY = 0.5  # the identifier's normalised probability below which it is not trusted
SAMPLE_CHARS = 1 << 20  # of a document's text identified as a whole (its main language)
SAMPLE_PIECES = 16  # slices of a longer text that make up its sample


_loading = threading.Lock()


def preload_identifier() -> None:
    """Start loading the identifier in a thread (a build's worker, before its first file)."""
    threading.Thread(target=_identifier, name="load-py3langid", daemon=True).start()


def _identifier():
    # Loaded once per process, on first use: builds that never ask pay nothing.
    with _loading:
        return _loaded_identifier()


@functools.cache
def _loaded_identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = _unpacked_model(LanguageIdentifier)
    if identifier is None:
        identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        _keep_unpacked(identifier)
    # ISO 639-1 only: the model also knows dialects and scripts under longer codes (yue, arz, zxx),
    # which would leave a chunk of Cantonese or Egyptian Arabic without the stemmer of its language.
    identifier.set_languages([code for code in identifier.nb_classes if len(code) == 2])
    return identifier


# py3langid ships its model LZMA-compressed: unpacking it takes 0.3 s of the 0.4 s a load costs,
# in every build worker and every reader that runs a hybrid query. The unpacked arrays are kept in
# the user's cache (~70 MB, once per py3langid version) and read from there in ~0.05 s.
def _unpacked_path() -> Path:
    from importlib.metadata import version

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "spanindex" / f"py3langid-{version('py3langid')}-model.npz"


def _unpacked_model(identifier_class):
    """The identifier from the unpacked copy, or None where there is none (or it cannot be read)."""
    try:
        with np.load(_unpacked_path(), allow_pickle=False) as arrays:
            return identifier_class(
                arrays["ptc"], arrays["pc"], arrays["classes"].tolist(), _as_array(arrays["nextmove"]),
                arrays["output"].tolist(), norm_probs=True, tk_row=_as_array(arrays["row"]))
    except (OSError, ValueError, KeyError):
        return None


def _as_array(values: np.ndarray) -> array.array:
    """The Python array py3langid's tables are (its typecode is the numpy dtype's char)."""
    return array.array(values.dtype.char, values.tobytes())


def _keep_unpacked(identifier) -> None:
    """Write the unpacked copy, through a temporary name; a cache that cannot be written is skipped."""
    path = _unpacked_path()
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as out:
            np.savez(out, ptc=identifier.nb_ptc, pc=identifier.nb_pc, classes=np.array(identifier.nb_classes),
                     nextmove=np.frombuffer(identifier.tk_nextmove, dtype=identifier.tk_nextmove.typecode),
                     row=np.frombuffer(identifier.tk_row, dtype=identifier.tk_row.typecode),
                     output=np.array(identifier.tk_output))
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
    if not _has_letters(text, MIN_LETTERS):
        return ""
    code, probability = _identifier().classify(text)
    return code if probability >= MIN_PROBABILITY else ""


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
    found = [identify_language(text) for text in texts]
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
