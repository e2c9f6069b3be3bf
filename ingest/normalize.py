"""Normalised views of document text, each carrying a map back to the original.

The document text is never normalised in place. The string that is embedded
and the string that quotes are matched against are derived here: NFKC
(ligatures expanded, compatibility forms folded), curly quotes and dashes
straightened, soft hyphens and zero-width characters dropped, end-of-line
hyphenation joined, whitespace runs collapsed to one space, ends stripped, and
no space at all between two characters of scripts written without spaces
(Chinese, Japanese): a line break inside such a sentence is not a space.

Every character of the normalised string knows the half-open range of the
original it came from, so a match found in normalised space lands on exact
offsets of the unnormalised text.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from dataclasses import dataclass

import numpy as np

NORMALIZER_VERSION = 2  # 2: no space between two CJK characters

# Scripts written without spaces between words: Han, Hiragana, Katakana (half-width too),
# Bopomofo, and the CJK punctuation, symbols and full-width forms used among them.
# Hangul is written with spaces and is not here.
_NO_SPACE_RANGES = (
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x2FF0, 0x303F),  # ideographic description, CJK symbols and punctuation
    (0x3040, 0x312F),  # Hiragana, Katakana, Bopomofo
    (0x3190, 0x31FF),  # Kanbun, Bopomofo extended, CJK strokes, Katakana extensions
    (0x3200, 0x33FF),  # enclosed CJK letters, CJK compatibility
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFE30, 0xFE4F),  # CJK compatibility forms
    (0xFF00, 0xFF9F),  # full-width forms, half-width Katakana
    (0xFFE0, 0xFFEF),  # full-width signs
    (0x1F200, 0x1F2FF),  # enclosed ideographic supplement (NFKC folds it to CJK)
    (0x20000, 0x3134F),  # CJK extensions B-G, compatibility supplement
)
_NO_SPACE_CLASS = "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _NO_SPACE_RANGES) + "]"
_NO_SPACE_BOUNDS = [bound for a, b in _NO_SPACE_RANGES for bound in (a, b + 1)]


def is_no_space_script(char: str) -> bool:
    """A character of a script written without spaces between words (CJK).

    >>> is_no_space_script("\u65e5"), is_no_space_script("\u3002"), is_no_space_script("\ud55c"), is_no_space_script("a")
    (True, True, False, False)
    """
    return bisect.bisect_right(_NO_SPACE_BOUNDS, ord(char)) % 2 == 1


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

_MARKS_BODY = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_MARKS = f"[{_MARKS_BODY}]"
_MARKS_RE = re.compile(_MARKS)
# A hyphen at a line end between letters: joined, the hyphen and the break vanish.
# (The hyphen comes first and the letter before it is checked behind: a pattern that opens
# on a character class lets the regex engine skip ahead to the next hyphen.)
_HYPHEN_BREAK = r"[-\u00ad\u2010\u2011](?<=[^\W\d_][-\u00ad\u2010\u2011])[ \t]*(?:\r\n|\r|\n|\f)\s*(?=[^\W\d_])"
_INVISIBLE_CLASS = "[\u00ad\u200b\u200c\u200d\u2060\ufeff]"
_MARK_OR_INVISIBLE = f"(?:{_MARKS}|{_INVISIBLE_CLASS})"
# A non-ASCII character, or a printable ASCII one followed by combining marks, with its
# marks and any invisible characters among them (dropped before NFKC, so that marks they
# separated are put in canonical order and normalising twice changes nothing).
# A soft hyphen that ends a line is a hyphen break, not a part of the cluster before it.
_CLUSTER = (
    r"(?:[^\x00-\x7f]|[!-~](?=" + _MARK_OR_INVISIBLE + "))"
    + "(?:(?!" + _HYPHEN_BREAK + ")" + _MARK_OR_INVISIBLE + ")*"
)

# One pass splits the text into the pieces above and whitespace runs (collapsed to one
# space); everything between matches is plain ASCII and is copied as is.
# Control characters are not text: they count as whitespace (BERT deletes them, which
# would glue the words on either side together).
_SPACE_RUN = r"[\s\x00-\x08\x0e-\x1b\x7f]+"
CONTROL_TO_SPACE = {c: " " for c in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F]}
# The same as regexes: str.translate looks up every character of a non-ASCII string in the
# table (~20 MB/s), a regex skips to the next match (most texts have none).
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
SEPARATORS = re.compile("[\x00-\x1f\x7f]")  # the controls and ASCII whitespace: \t \n \v \f \r
_PIECES = re.compile(f"({_HYPHEN_BREAK})|({_SPACE_RUN})|({_CLUSTER})")
# Whitespace between two CJK characters (the one before may carry marks or invisible
# characters, the one after may follow invisible ones): dropped, not folded to a space.
# Decided on the original characters, so that full-width punctuation, which NFKC folds
# to ASCII, still counts as CJK.
_BETWEEN_NO_SPACE_SCRIPT = re.compile(
    f"({_NO_SPACE_CLASS}{_MARK_OR_INVISIBLE}*){_SPACE_RUN}(?={_INVISIBLE_CLASS}*{_NO_SPACE_CLASS})"
)
_MARK_OR_INVISIBLE_RE = re.compile(_MARK_OR_INVISIBLE)
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


@functools.cache
def folded_set() -> frozenset[str]:
    """The characters of the BMP that folding changes on their own: NFKC changes them, or
    they are quotes, dashes or invisible characters. Built once per process (a few ms)."""
    changing = {
        c
        for c in map(chr, range(0x80, 0x10000))
        if not 0xD800 <= ord(c) <= 0xDFFF and not unicodedata.is_normalized("NFKC", c)
    }
    return frozenset(changing | _INVISIBLE | {chr(code) for code in _QUOTES_AND_DASHES})


@functools.cache
def changing_set() -> frozenset[str]:
    """The BMP characters that can make ``normalize`` of a text without ASCII whitespace differ
    from it: those that fold, combining marks, and whitespace other than ASCII's (Python splits
    at NEL, where BERT deletes it and glues the words). Every astral character counts too."""
    spaces = {c for c in map(chr, range(0x80, 0x3001)) if c.isspace()}
    marks = {c for c in map(chr, range(0x80, 0x10000)) if _MARKS_RE.match(c)}
    return folded_set() | spaces | marks


def char_class(chars: frozenset[str] | set[str], astral: bool = True) -> re.Pattern:
    """One character of ``chars`` (or, with ``astral``, beyond the BMP), as a compiled regex."""
    body = _ranges(sorted(chars)) + ("\U00010000-\U0010ffff" if astral else "")
    return re.compile(f"[{body}]")


def _ranges(chars: list[str]) -> str:
    """Sorted characters as the body of a regex class, runs written as ranges."""
    out, i = [], 0
    while i < len(chars):
        j = i
        while j + 1 < len(chars) and ord(chars[j + 1]) == ord(chars[j]) + 1:
            j += 1
        out.append(re.escape(chars[i]) if i == j else f"{re.escape(chars[i])}-{re.escape(chars[j])}")
        i = j + 1
    return "".join(out)


@functools.cache
def folded_character() -> re.Pattern:
    """One character that folds to something else (see ``folded_set``; astral ones all count)."""
    return char_class(folded_set())


@functools.cache
def changing_clusters() -> re.Pattern:
    """The clusters (as ``_CLUSTER`` cuts them) that ``_fold`` may change: a folded character,
    or any character with combining marks or invisible characters after it. Every other
    cluster is one character that folds to itself, and is left alone without a visit."""
    marks = _MARK_OR_INVISIBLE
    return re.compile(
        rf"(?:{folded_character().pattern}|[^\x00-\x7f](?={marks})|[!-~](?={marks}))(?:(?!{_HYPHEN_BREAK}){marks})*"
    )


@functools.cache
def changing_character() -> re.Pattern:
    return char_class(changing_set())


def changing_pieces(text: str, characters: re.Pattern | None = None) -> list[tuple[int, int]]:
    """Spans of ``text`` outside of which ``normalize`` only collapses whitespace.

    Each span is a run between ASCII whitespace (or the text's ends) holding a character
    that folding may change (``characters``, by default ``changing_character()``; a caller
    may narrow it to what it cares about), or runs that normalising joins: a line-end hyphen,
    or whitespace between two CJK characters (then all of them). Each
    normalises on its own: ``normalize(text)`` is the words of ``text`` with every span
    replaced by ``normalize(text[a:b])``, joined by single spaces. A superset: a span may
    come out unchanged.

    >>> changing_pieces("an e\\ufb03cient, ab-\\ncd way")
    [(3, 11), (12, 18)]
    """
    spaced = SEPARATORS.sub(" ", text)  # every separator one space: offsets stay
    found = [m.span() for m in _HYPHEN_BREAK_RE.finditer(text)]
    if not text.isascii():
        found += [m.span() for m in _BETWEEN_NO_SPACE_SCRIPT.finditer(text)]
    found += [m.span() for m in (characters or changing_character()).finditer(spaced)]
    spans: list[tuple[int, int]] = []
    for a, b in sorted(found):
        lo = spaced.rfind(" ", 0, a) + 1
        hi = spaced.find(" ", b)
        hi = len(spaced) if hi < 0 else hi
        if spans and lo <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], hi))
        else:
            spans.append((lo, hi))
    return spans


@functools.lru_cache(maxsize=8192)  # a document repeats its few folded clusters (ligatures, quotes)
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
            if not _between_no_space_script(original, a, b):
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


def _between_no_space_script(original: str, a: int, b: int) -> bool:
    """Whether the whitespace ``original[a:b]`` stands between two CJK characters."""
    before = a - 1
    while before >= 0 and _MARK_OR_INVISIBLE_RE.match(original, before):
        before -= 1
    after = b
    while after < len(original) and original[after] in _INVISIBLE:
        after += 1
    return (
        before >= 0
        and after < len(original)
        and is_no_space_script(original[before])
        and is_no_space_script(original[after])
    )


def _collapse_spaces(text: str, starts: np.ndarray, ends: np.ndarray) -> NormalizedText:
    """Merge adjacent spaces (pieces can meet space to space) and strip both ends."""
    chars = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
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
        text = chars.tobytes().decode("utf-32-le", "surrogatepass")
    return NormalizedText(text, starts, ends)


def normalize(original: str) -> str:
    """The normalised string alone (what is embedded); equal to ``normalize_with_map(s).text``.

    >>> normalize("  \ufb02ow\u2014and\u00a0more ")
    'flow-and more'
    """
    if original.isascii():
        return " ".join(CONTROLS.sub(" ", _HYPHEN_BREAK_RE.sub("", original)).split())
    text = _HYPHEN_BREAK_RE.sub("", _BETWEEN_NO_SPACE_SCRIPT.sub(r"\1", original))
    # Without combining marks every cluster is one character (an invisible one folds to
    # nothing on its own as in a cluster): the scan looks for folded characters only.
    changing = changing_clusters() if _MARKS_RE.search(text) else folded_character()
    text = changing.sub(lambda m: _fold(m.group()), text)
    return " ".join(CONTROLS.sub(" ", text).split())
