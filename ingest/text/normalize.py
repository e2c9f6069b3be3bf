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
import operator
import re
import unicodedata
from dataclasses import dataclass
from typing import NamedTuple

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


def _has_no_space_script(codes: np.ndarray) -> bool:
    """Whether any of the code points is of a script written without spaces (a numpy pass:
    the regex that looks for spaces between two such characters is slow on other text)."""
    high = codes[codes >= _NO_SPACE_BOUNDS[0]]
    return bool(len(high)) and bool((np.searchsorted(_NO_SPACE_BOUNDS, high, side="right") % 2 == 1).any())


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
_FIRST_GROUP = operator.itemgetter(1)  # a replacement in C: a template (r"\1") runs Python per match
_MARK_OR_INVISIBLE_RE = re.compile(_MARK_OR_INVISIBLE)
_INVISIBLE_RUN = re.compile(f"{_INVISIBLE_CLASS}*")
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


# What a character is to ``changing_pieces``, a bit per kind, in a table over the BMP.
_CHANGING, _SEPARATOR, _SPLIT_BLIND, _HYPHEN, _BLANK_OR_BREAK, _CONTROL = 1, 2, 4, 8, 16, 32


@functools.cache
def _char_kinds() -> np.ndarray:
    """The kinds of every BMP character (index with codes clipped to 0xFFFF: U+FFFF, where
    every astral character lands, counts as changing, as every astral character does)."""
    kinds = np.zeros(0x10000, dtype=np.uint8)
    kinds[[ord(c) for c in changing_set()]] |= _CHANGING
    kinds[0xFFFF] |= _CHANGING
    kinds[[*range(0x21), 0x7F]] |= _SEPARATOR  # ASCII whitespace and control characters
    kinds[[*range(0x09), *range(0x0E, 0x1C), 0x7F]] |= _SPLIT_BLIND  # controls str.split() keeps
    kinds[[ord(c) for c in "-\u00ad\u2010\u2011"]] |= _HYPHEN
    kinds[[ord(c) for c in " \t\r\n\f"]] |= _BLANK_OR_BREAK
    kinds[[*range(0x09), *range(0x0B, 0x20), 0x7F]] |= _CONTROL  # CONTROLS
    return kinds


def _kinds(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The code points of ``text``, the same clipped to 0xFFFF (to index tables over the BMP),
    and their kinds."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    bmp = np.minimum(codes, 0xFFFF)
    return codes, bmp, _char_kinds()[bmp]


def changing_pieces(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` outside of which ``normalize`` only collapses whitespace.

    Each span is a run between separators (ASCII whitespace and control characters, or the
    text's ends) holding a character that folding may change (``changing_set``), or runs
    that normalising joins: a line-end hyphen, or whitespace between two CJK characters
    (then all of them). Each normalises on its own: ``normalize(text)`` is the words of
    ``text`` with every span replaced by ``normalize(text[a:b])``, joined by single spaces.
    A superset: a span may come out unchanged.

    >>> changing_pieces("an e\\ufb03cient, ab-\\ncd way")
    [(3, 11), (12, 18)]
    """
    codes, bmp, kinds = _kinds(text)
    return _changing_pieces(text, codes, bmp, kinds, (kinds & _CHANGING).nonzero()[0], _has_no_space_script(codes))[0]


class Join(NamedTuple):
    """Where normalising joins words: ``text[start:end]`` is a line-end hyphen with its break,
    or a CJK character and the whitespace after it, which normalising brings next to the
    CJK character ``text[after]`` (None for a hyphen)."""

    start: int
    end: int
    after: int | None


def _changing_pieces(
    text: str, codes: np.ndarray, bmp: np.ndarray, kinds: np.ndarray, hits: np.ndarray, no_space_script: bool
) -> tuple[list[tuple[int, int]], list[Join]]:
    """``changing_pieces``, and the spans where normalising joins words: a line-end hyphen,
    or whitespace between two CJK characters (``hits``: where the characters that may change
    are; ``no_space_script``: whether the text holds CJK characters)."""
    joins = [Join(start, end, None) for start, end in _hyphen_breaks(text, kinds)]
    if no_space_script:
        joins += [Join(start, end, _INVISIBLE_RUN.match(text, end).end())
                  for start, end in _cjk_breaks(text, codes, bmp)]
    starts, ends = hits, hits + 1
    if joins:
        spans = np.array([(join.start, join.end) for join in joins], dtype=np.int64)
        starts, ends = np.concatenate((starts, spans[:, 0])), np.concatenate((ends, spans[:, 1]))
    if not len(starts):
        return [], joins
    order = starts.argsort(kind="stable")
    starts, ends = starts[order], ends[order]
    # Widen each to the separators around it (every control character is one, as a space).
    # Sentinels at both ends: a text's ends bound a span as a separator does.
    separators = np.concatenate(([-1], (kinds & _SEPARATOR).nonzero()[0], [len(kinds)]))
    lo = separators[separators.searchsorted(starts) - 1] + 1
    hi = separators[separators.searchsorted(ends)]
    # Merge spans that overlap or touch: a new one begins where it starts past all before it.
    reach = np.maximum.accumulate(hi)
    first = np.concatenate(([True], lo[1:] > reach[:-1]))
    group_lo = lo[first]
    group_hi = np.maximum.reduceat(hi, first.nonzero()[0])
    return list(zip(group_lo.tolist(), group_hi.tolist())), joins


@functools.cache
def _after_cjk() -> np.ndarray:
    """What may follow a CJK character where whitespace after it is dropped: its marks and
    invisible characters, or the whitespace (``_SPACE_RUN``), as a table over the BMP."""
    after = re.compile(f"{_MARK_OR_INVISIBLE}|{_SPACE_RUN}")
    return np.array([after.fullmatch(chr(code)) is not None for code in range(0x10000)], dtype=bool)


def _cjk_breaks(text: str, codes: np.ndarray, bmp: np.ndarray) -> list[tuple[int, int]]:
    """The spans of ``_BETWEEN_NO_SPACE_SCRIPT`` in ``text``, as ``finditer`` gives them: the
    pattern is tried only at a CJK character followed by whitespace, a mark or an invisible
    character (the regex engine would try every character); ``bmp``: ``codes`` clipped to 0xFFFF."""
    follows = _after_cjk()[bmp[1:]].nonzero()[0]
    before = codes[follows]
    candidates = follows[np.searchsorted(_NO_SPACE_BOUNDS, before, side="right") % 2 == 1]
    return _matches_at(_BETWEEN_NO_SPACE_SCRIPT, text, candidates)


def _hyphen_breaks(text: str, kinds: np.ndarray) -> list[tuple[int, int]]:
    """The spans of ``_HYPHEN_BREAK`` in ``text``, as ``finditer`` gives them: the pattern is
    tried only at a hyphen followed by a blank or a line break (the regex engine would try
    every character)."""
    candidates = ((kinds[:-1] & _HYPHEN).astype(bool) & (kinds[1:] & _BLANK_OR_BREAK).astype(bool)).nonzero()[0]
    return _matches_at(_HYPHEN_BREAK_RE, text, candidates)


def _matches_at(pattern: re.Pattern, text: str, candidates: np.ndarray) -> list[tuple[int, int]]:
    """The spans ``pattern.finditer(text)`` gives, where every match starts at one of the sorted
    ``candidates``: the pattern is tried there only."""
    found, reached = [], 0
    for at in candidates.tolist():
        if at >= reached and (match := pattern.match(text, at)):
            found.append(match.span())
            reached = match.end()
    return found


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
        kept_idx = keep.nonzero()[0]
        owner = kept_idx[kept_idx.searchsorted(repeat.nonzero()[0], side="right") - 1]
        np.maximum.at(ends, owner, ends[repeat])
    # Leading and trailing spaces vanish with their ranges.
    kept_idx = keep.nonzero()[0]
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
    text = _HYPHEN_BREAK_RE.sub("", _BETWEEN_NO_SPACE_SCRIPT.sub(_FIRST_GROUP, original))
    # Without combining marks every cluster is one character (an invisible one folds to
    # nothing on its own as in a cluster): the scan looks for folded characters only.
    changing = changing_clusters() if _MARKS_RE.search(text) else folded_character()
    text = changing.sub(lambda m: _fold(m.group()), text)
    return " ".join(CONTROLS.sub(" ", text).split())


# Between the pieces that ``normalize_each`` normalises in one call: a noncharacter, which no
# normalisation step touches or joins to a neighbour.
_PIECE_SEPARATOR = "\uffff"


def normalize_each(pieces: list[str]) -> list[str]:
    """``[normalize(p) for p in pieces]`` for pieces that normalise on their own (the
    ``changing_pieces`` of a text), in one pass of each regex rather than one per piece.

    >>> normalize_each(["\\ufb01ne", "ab-\\ncd", "\\u00ad", "x\\u0301"])
    ['fine', 'abcd', '', 'x\u0301']
    """
    if len(pieces) < 2 or any(_PIECE_SEPARATOR in piece for piece in pieces):
        return [normalize(piece) for piece in pieces]
    # Between spaces: nothing joins across a space and a noncharacter, and a piece alone has
    # nothing before or after it either.
    joined = normalize(f" {_PIECE_SEPARATOR} ".join(pieces))
    return [part.strip(" ") for part in joined.split(_PIECE_SEPARATOR)]


# Control characters that str.split() does not split at (it splits at \t \n \v \f \r \x1c-\x1f).
_SPLIT_BLIND_CONTROLS = re.compile("[\x00-\x08\x0e-\x1b\x7f]")


# (first, last, left, right): pieces first .. last-1 lie whole in a slice; left and right are
# the parts in it of the pieces its start and its end cut (see SliceNormalizer.pieces)
SlicePieces = tuple[int, int, tuple[int, int] | None, tuple[int, int] | None]


class SliceNormalizer:
    """``normalize`` of many slices of one text (a document's chunks), with the regex passes
    made once for the whole text.

    ``changing_pieces`` are found and normalised once; outside them normalising only
    collapses whitespace, and each normalises on its own. The whole text is kept once more
    with every piece that changes replaced by its normalised text (between spaces: pieces
    lie between separators anyway), so a slice is one substring of that, split and joined.
    Only a piece that a slice's end cuts is normalised again, clipped. A match of the
    patterns within a slice is a match in the whole text (they look no further than the
    slice holds), so the clipped pieces cover the slice's own.

    >>> text = "A \\ufb01ne day.\\n\\nAnother  \\u201cday\\u201d."
    >>> slices = SliceNormalizer(text)
    >>> slices(0, 11), slices(11, len(text)), slices(3, 25)
    ('A fine day.', 'Another "day".', 'ne day. Another "day')
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.codes, self.bmp, kinds = _kinds(text)
        self.changing = (kinds & _CHANGING).nonzero()[0]  # where the characters that may change are
        # joins: the spans where normalising joins words (a line-end hyphen, a break between
        # two CJK characters), each inside one piece
        self.has_no_space_script = _has_no_space_script(self.codes)  # CJK characters
        spans, self.joins = _changing_pieces(text, self.codes, self.bmp, kinds, self.changing, self.has_no_space_script)
        self.has_controls = bool((kinds & _CONTROL).any())  # whether CONTROLS matches in it
        self.los = [lo for lo, _ in spans]
        self.his = [hi for _, hi in spans]
        originals = [text[lo:hi] for lo, hi in spans]
        distinct = list(dict.fromkeys(originals))  # pieces repeat (a word with a ligature or a curly quote)
        by_text = dict(zip(distinct, normalize_each(distinct)))
        # per piece: its normalised text, None where normalising leaves it as it is
        self.folded: list[str | None] = [None if by_text[o] == o else by_text[o] for o in originals]
        # The text with changed pieces replaced; a control character that str.split() would
        # keep in a word is a space, as in ``normalize``.
        plain = _SPLIT_BLIND_CONTROLS.sub(" ", text) if (kinds & _SPLIT_BLIND).any() else text
        parts, at, shift = [], 0, 0
        self._shift_after: list[int] = []  # how much longer the replaced text is after each piece
        for lo, hi, folded in zip(self.los, self.his, self.folded):
            if folded is not None:
                parts += (plain[at:lo], " ", folded, " ")
                at = hi
                shift += len(folded) + 2 - (hi - lo)
            self._shift_after.append(shift)
        parts.append(plain[at:])
        self._collapse("".join(parts))
        self._clipped: dict[tuple[int, int], str] = {}

    def _collapse(self, replaced: str) -> None:
        """Keep the replaced text with its whitespace collapsed as ``str.split`` would (each run one
        space), and the offsets of the spaces that collapsing drops: a slice's words are then one
        substring of it, stripped of a space at either end, not a split and a join per slice.

        Every whitespace character left in the replaced text is ASCII (the others lie in pieces
        that normalising changes, and ``plain`` holds no control that is not a space)."""
        codes = np.frombuffer(replaced.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        space = codes <= 0x20
        dropped = (space[1:] & space[:-1]).nonzero()[0] + 1  # the second and later spaces of each run
        self._dropped = dropped.tolist()
        if not len(dropped) and not space.any():
            self._collapsed = replaced
            return
        kept = np.ones(len(codes), dtype=bool)
        kept[dropped] = False
        collapsed = np.where(space, np.uint32(0x20), codes)[kept]
        self._collapsed = collapsed.tobytes().decode("utf-32-le", "surrogatepass")

    def __call__(self, start: int, end: int) -> str:
        """``normalize(self.text[start:end])``."""
        return self.normalized(start, end, self.pieces(start, end))

    def normalized(self, start: int, end: int, pieces: SlicePieces) -> str:
        """``normalize(self.text[start:end])``, given its ``pieces``."""
        _, _, left, right = pieces
        inner_start, inner_end = left[1] if left else start, right[0] if right else end
        inner = ""
        if inner_start < inner_end:
            at_start, at_end = self._at(inner_start), self._at(inner_end)
            dropped = self._dropped
            inner = self._collapsed[at_start - bisect.bisect_left(dropped, at_start) :
                                    at_end - bisect.bisect_left(dropped, at_end)].strip(" ")
        if not left and not right:
            return inner
        return " ".join(part for part in (self.clipped(*left) if left else "", inner,
                                          self.clipped(*right) if right else "") if part)

    def pieces(self, start: int, end: int) -> SlicePieces:
        """The pieces within ``text[start:end]``: ``first .. last - 1`` lie in it whole; ``left``
        and ``right`` are the parts in it of a piece that its start or its end cuts."""
        first = bisect.bisect_right(self.his, start)  # the first piece that ends after start
        last = bisect.bisect_left(self.los, end, first)  # pieces first .. last-1 meet the slice
        left = right = None
        if first < last and self.los[first] < start:
            left = (start, min(self.his[first], end))
            first += 1
        if first < last and self.his[last - 1] > end:
            last -= 1
            right = (self.los[last], end)
        return first, last, left, right

    def clipped(self, lo: int, hi: int) -> str:
        """``normalize(text[lo:hi])`` of a part of a piece."""
        folded = self._clipped.get((lo, hi))
        if folded is None:
            folded = self._clipped[lo, hi] = normalize(self.text[lo:hi])
        return folded

    def _at(self, offset: int) -> int:
        """Where ``offset`` (outside every changed piece, or at its end) is in the replaced text."""
        before = bisect.bisect_right(self.his, offset)  # pieces that end at or before it
        return offset + (self._shift_after[before - 1] if before else 0)
