"""Is a PDF page's text layer text? The test that decides which pages ``--ocr auto`` reads.

A page is read by OCR when its layer is missing or is not text. Three tests,
on the page's characters alone (no dictionary, no language model, so that it
holds for every script):

- **no text**: the layer has no real character (a scan, an image-only page).
- **unmapped**: at least a quarter of its visible characters are U+FFFD, private
  use or control code points: glyphs whose font gives no Unicode (at least 10).
- **garbled**: the words are not words. A word (a run of letters and digits
  with at least 4 letters) is *misshapen* when its case changes from lower to
  upper inside it (``HanoroBbIH``) or a digit sits between two letters
  (``H8norosbiH``). Real text in any cased script has few (names like
  ``McCallum``, ``TriviaQA``: under 5% of words on the shared corpus's pages;
  math notation like ``x2y2``, ``fdA`` stays under 10%), a text layer made by an
  OCR engine that read Cyrillic as Latin look-alikes (the Russian form
  ``pdfjs__issue12963.pdf``) has 45-80%. A page is garbled at 30% over at
  least 12 words; a page of a document whose words are garbled at 30% overall
  is garbled from 15% (a document's layer is made by one producer, so a page
  with few misshapen words is still that producer's guess). Scripts without
  case (CJK, Arabic, Hebrew, Thai...) never count as misshapen: their layers
  are trusted unless unmapped.

A fourth verdict needs the page, not only its text (``ingest.formats.pdf.ocr``):
**sparse**, fewer than ``SPARSE_CHARS`` visible characters over images that
cover at least half the page: a scan with a digital stamp, a Bates number or a
page number. OCR reads the whole page, and replaces the layer when it reads at
least twice as many characters.

OCR replaces a garbled layer only when its own text is not garbled (see
``is_better_than``): reading Russian with ``eng`` gives Latin look-alikes again,
and then the original layer is kept and a warning says to set ``--ocr-lang``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

MIN_WORD_LETTERS = 4
GARBLED_SHARE = 0.30
GARBLED_SHARE_IN_GARBLED_DOCUMENT = 0.15
MIN_WORDS = 12
MIN_WORDS_IN_GARBLED_DOCUMENT = 5
SPARSE_CHARS = 200
SPARSE_IMAGE_SHARE = 0.5
UNMAPPED_SHARE = 0.25
MIN_UNMAPPED = 10

_WORD = re.compile(r"[^\W_]+")
_DIGIT_INSIDE = re.compile(r"[^\W\d_]\d+[^\W\d_]")
_WHITESPACE = re.compile(r"\s")
# U+FFFD, controls other than whitespace, surrogates, private use (BMP and planes 15-16).
_UNMAPPED = re.compile("[\ufffd\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ud800-\udfff\ue000-\uf8ff\U000f0000-\U0010ffff]")


class LayerVerdict(StrEnum):
    """Why a page's text layer is (not) used as its text."""

    USABLE = "usable"
    NO_TEXT = "no_text"
    UNMAPPED = "unmapped"  # glyphs without Unicode: U+FFFD, private use, controls
    GARBLED = "garbled"  # the words are not words (mojibake, look-alike letters)
    SPARSE = "sparse"  # a few words over a page-sized image (a stamp or page number on a scan)


@dataclass(frozen=True, slots=True)
class LayerStats:
    """Counts of one page's text layer that the verdicts are made of."""

    visible_chars: int  # characters that are not whitespace
    unmapped_chars: int
    words: int  # runs of letters and digits with at least MIN_WORD_LETTERS letters
    misshapen_words: int

    @property
    def unmapped_share(self) -> float:
        return self.unmapped_chars / self.visible_chars if self.visible_chars else 0.0

    @property
    def misshapen_share(self) -> float:
        return self.misshapen_words / self.words if self.words else 0.0


def layer_stats(text: str) -> LayerStats:
    """The counts of ``text`` (one page) that decide whether it is text.

    >>> s = layer_stats("Hanorosas AeKnapauHs no Hanory")
    >>> s.words, s.misshapen_words
    (3, 1)
    """
    visible = len(text) - len(_WHITESPACE.findall(text))
    unmapped = len(_UNMAPPED.findall(text))
    words = misshapen = 0
    for match in _WORD.finditer(text):
        word = match.group()
        if sum(c.isalpha() for c in word) < MIN_WORD_LETTERS:
            continue
        words += 1
        misshapen += _is_misshapen(word)
    return LayerStats(visible, unmapped, words, misshapen)


def _is_misshapen(word: str) -> bool:
    if _DIGIT_INSIDE.search(word) and _has_cased_letter(word):
        return True
    seen_lower = False
    for char in word:
        if char.islower():
            seen_lower = True
        elif seen_lower and char.isupper():
            return True
    return False


def _has_cased_letter(word: str) -> bool:
    return any(c.islower() or c.isupper() for c in word)


def judge_layers(stats: Sequence[LayerStats]) -> list[LayerVerdict]:
    """One verdict per page of a document, from the counts of every page.

    >>> judge_layers([layer_stats(""), layer_stats("A page of plain words, nothing odd about them.")])
    [<LayerVerdict.NO_TEXT: 'no_text'>, <LayerVerdict.USABLE: 'usable'>]
    """
    total_words = sum(s.words for s in stats)
    total_misshapen = sum(s.misshapen_words for s in stats)
    document_garbled = total_words >= MIN_WORDS and total_misshapen / total_words >= GARBLED_SHARE
    verdicts = []
    for page in stats:
        if page.visible_chars == 0:
            verdicts.append(LayerVerdict.NO_TEXT)
        elif page.unmapped_chars >= MIN_UNMAPPED and page.unmapped_share >= UNMAPPED_SHARE:
            verdicts.append(LayerVerdict.UNMAPPED)
        elif _is_garbled(page, document_garbled):
            verdicts.append(LayerVerdict.GARBLED)
        else:
            verdicts.append(LayerVerdict.USABLE)
    return verdicts


def _is_garbled(page: LayerStats, document_garbled: bool) -> bool:
    if page.words >= MIN_WORDS and page.misshapen_share >= GARBLED_SHARE:
        return True
    return (
        document_garbled
        and page.words >= MIN_WORDS_IN_GARBLED_DOCUMENT
        and page.misshapen_share >= GARBLED_SHARE_IN_GARBLED_DOCUMENT
    )


def is_better_than(ocr: LayerStats, layer: LayerStats, verdict: LayerVerdict) -> bool:
    """Whether OCR text should replace a page's layer: only when it is text itself (and, over a
    sparse layer, reads at least twice as much)."""
    if verdict is LayerVerdict.NO_TEXT:
        return ocr.visible_chars > 0
    if ocr.visible_chars == 0:
        return False
    if verdict is LayerVerdict.SPARSE and ocr.visible_chars < 2 * layer.visible_chars:
        return False
    if ocr.unmapped_chars >= MIN_UNMAPPED and ocr.unmapped_share >= UNMAPPED_SHARE:
        return False
    if ocr.words >= MIN_WORDS_IN_GARBLED_DOCUMENT and ocr.misshapen_share >= GARBLED_SHARE_IN_GARBLED_DOCUMENT:
        return False
    return True
