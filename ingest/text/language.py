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
import functools
import threading
from collections.abc import Sequence

LANGUAGE_VERSION = 1  # bump when the languages found for the same text would differ
MIN_LETTERS = 24  # fewer letters than this: too little to tell a language by
MIN_PROBABILITY = 0.5  # the identifier's normalised probability below which it is not trusted
SAMPLE_CHARS = 1 << 20  # of a document's text identified as a whole (its main language)
SAMPLE_PIECES = 16  # slices of a longer text that make up its sample


_loading = threading.Lock()


def preload_identifier() -> None:
    """Start loading the identifier in a thread (a build's worker, before its first file): most of
    the 0.4 s is LZMA decompression, which lets the parser run meanwhile."""
    threading.Thread(target=_identifier, name="load-py3langid", daemon=True).start()


def _identifier():
    # Loaded once per process, on first use: builds that never ask pay nothing.
    with _loading:
        return _loaded_identifier()


@functools.cache
def _loaded_identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    # ISO 639-1 only: the model also knows dialects and scripts under longer codes (yue, arz, zxx),
    # which would leave a chunk of Cantonese or Egyptian Arabic without the stemmer of its language.
    identifier.set_languages([code for code in identifier.nb_classes if len(code) == 2])
    return identifier


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
