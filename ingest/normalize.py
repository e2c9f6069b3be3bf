"""Normalised views of document text, each carrying a map back to the original.

The document text is never normalised in place. The string that is embedded
and the string that quotes are matched against are derived here: NFKC
(ligatures expanded, compatibility forms folded), curly quotes and dashes
straightened, soft hyphens and zero-width characters dropped, end-of-line
hyphenation joined, whitespace runs collapsed to one space, ends stripped.

Every character of the normalised string knows the half-open range of the
original it came from, so a match found in normalised space lands on exact
offsets of the unnormalised text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np

NORMALIZER_VERSION = 1

_QUOTES_AND_DASHES = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u00ab": '"', "\u00bb": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-",
        "\u2015": "-", "\u2212": "-", "\ufe58": "-", "\ufe63": "-", "\uff0d": "-",
    }
)
# Characters that carry no text: soft hyphen, zero-width space/joiners, word joiner, BOM.
_INVISIBLE = frozenset("\u00ad\u200b\u200c\u200d\u2060\ufeff")

_MARKS = "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
# A hyphen at a line end between letters: joined, the hyphen and the break vanish.
_HYPHEN_BREAK = r"(?<=[^\W\d_])[-\u00ad\u2010\u2011][ \t]*(?:\r\n|\r|\n|\f)\s*(?=[^\W\d_])"
_INVISIBLE_CLASS = "[\u00ad\u200b\u200c\u200d\u2060\ufeff]"
_MARK_OR_INVISIBLE = f"(?:{_MARKS}|{_INVISIBLE_CLASS})"
# A non-ASCII character, or a printable ASCII one followed by combining marks, with its
# marks and any invisible characters among them (dropped before NFKC, so that marks they
# separated are put in canonical order and normalising twice changes nothing).
_CLUSTER = r"(?:[^\x00-\x7f]|[!-~](?=" + _MARK_OR_INVISIBLE + "))" + _MARK_OR_INVISIBLE + "*"

# One pass splits the text into the pieces above and whitespace runs (collapsed to one
# space); everything between matches is plain ASCII and is copied as is.
# Control characters are not text: they count as whitespace (BERT deletes them, which
# would glue the words on either side together).
_SPACE_RUN = r"[\s\x00-\x08\x0e-\x1b\x7f]+"
CONTROL_TO_SPACE = {c: " " for c in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F]}
_PIECES = re.compile(f"({_HYPHEN_BREAK})|({_SPACE_RUN})|({_CLUSTER})")
_HYPHEN_BREAK_RE = re.compile(_HYPHEN_BREAK)
_CLUSTER_RE = re.compile(_CLUSTER)


@dataclass(frozen=True, slots=True, eq=False)
class NormalizedText:
    """``text[i]`` came from ``original[starts[i]:ends[i]]``; starts and ends never decrease."""

    text: str
    starts: np.ndarray
    ends: np.ndarray

    def original_span(self, norm_start: int, norm_end: int) -> tuple[int, int]:
        """The original range covering normalised ``[norm_start, norm_end)`` (non-empty).

        >>> n = normalize_with_map("a \\ufb01ne  day")
        >>> n.text, n.original_span(2, 6)
        ('a fine day', (2, 5))
        """
        return int(self.starts[norm_start]), int(self.ends[norm_end - 1])


def _fold(cluster: str) -> str:
    if any(c in _INVISIBLE for c in cluster):
        cluster = "".join(c for c in cluster if c not in _INVISIBLE)
    return unicodedata.normalize("NFKC", cluster).translate(_QUOTES_AND_DASHES)


def normalize_with_map(original: str) -> NormalizedText:
    """Normalise ``original`` and keep, per output character, its source range.

    >>> normalize_with_map("infra-\\nstructure \\u201cok\\u201d").text
    'infrastructure "ok"'
    """
    out: list[str] = []
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []

    def emit_copy(a: int, b: int) -> None:
        if b > a:
            out.append(original[a:b])
            rng = np.arange(a, b, dtype=np.int64)
            starts.append(rng)
            ends.append(rng + 1)

    def emit(piece: str, a: int, b: int) -> None:
        if piece:
            out.append(piece)
            starts.append(np.full(len(piece), a, dtype=np.int64))
            ends.append(np.full(len(piece), b, dtype=np.int64))

    pos = 0
    for m in _PIECES.finditer(original):
        emit_copy(pos, m.start())
        a, b = m.span()
        if m.group(1) is not None:
            pass  # joined hyphenation: contributes nothing
        elif m.group(2) is not None:
            emit(" ", a, b)
        else:
            folded = _fold(m.group(3))
            # NFKC may turn a character into spaces (NBSP, en space): keep them as one.
            emit(re.sub(r"\s+", " ", folded), a, b)
        pos = b
    emit_copy(pos, len(original))

    text = "".join(out)
    if not text:
        empty = np.zeros(0, dtype=np.int64)
        return NormalizedText("", empty, empty)
    starts_arr = np.concatenate(starts)
    ends_arr = np.concatenate(ends)
    return _collapse_spaces(text, starts_arr, ends_arr)


def _collapse_spaces(text: str, starts: np.ndarray, ends: np.ndarray) -> NormalizedText:
    """Merge adjacent spaces (pieces can meet space to space) and strip both ends."""
    chars = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    is_space = chars == 0x20
    # A space right after a space is dropped; its source range goes to the kept one.
    repeat = is_space & np.concatenate(([False], is_space[:-1]))
    keep = ~repeat
    if repeat.any():
        kept_idx = np.flatnonzero(keep)
        owner = kept_idx[np.searchsorted(kept_idx, np.flatnonzero(repeat), side="right") - 1]
        np.maximum.at(ends, owner, ends[repeat])
    # Leading and trailing spaces vanish with their ranges.
    kept_idx = np.flatnonzero(keep)
    if len(kept_idx) and is_space[kept_idx[0]]:
        keep[kept_idx[0]] = False
    if len(kept_idx) and is_space[kept_idx[-1]]:
        keep[kept_idx[-1]] = False
    if not keep.all():
        chars, starts, ends = chars[keep], starts[keep], ends[keep]
        text = chars.tobytes().decode("utf-32-le")
    return NormalizedText(text, starts, ends)


def normalize(original: str) -> str:
    """The normalised string alone (what is embedded); equal to ``normalize_with_map(s).text``.

    >>> normalize("  \ufb02ow\u2014and\u00a0more ")
    'flow-and more'
    """
    text = _HYPHEN_BREAK_RE.sub("", original)
    if not text.isascii():
        text = _CLUSTER_RE.sub(lambda m: _fold(m.group()), text)
    return " ".join(text.translate(CONTROL_TO_SPACE).split())
