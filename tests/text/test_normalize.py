"""The normaliser's index map: every normalised character points back into the original, in order."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ingest.text.normalize import (
    CONTROL_TO_SPACE,
    CONTROLS,
    SEPARATORS,
    SliceNormalizer,
    changing_pieces,
    normalize,
    normalize_each,
    normalize_with_map,
)

from conftest import examples

# Text that stresses the map: combining marks, CRLF, zero-width characters, RTL,
# ligatures, soft hyphens, hyphenated line ends, curly quotes, astral characters.
_SPECIAL = list(
    "\u0301\u0308\u0327\r\n\t \u00a0\u200b\u200d\ufeff\u00ad\ufb01\ufb02\u2019\u201c\u201d"
    "\x00\x07\x7f\x0c\u2014-\u05d0\u05d1\u0627\u0644\u202e\u00bd\u2460\uff21\u3000\u1100\u1161\u11a8\U0001f600"
    "\u65e5\u672c\u3002\u3001\uff08\uff09\uff12\uff71\u30a2\u3042\ud55c\U0001f21a\U00020000"
    "\ud800\udfff\u200f\u2066\u2069\u0000"  # lone surrogates (a model's broken output), bidi controls
)
texts = st.lists(
    st.one_of(st.sampled_from(_SPECIAL), st.characters(codec="utf-8"), st.sampled_from(["a", "b", "-\n", " "])),
    max_size=60,
).map("".join)


@pytest.mark.hostile('text with lone surrogates, bidi controls, NUL, ligatures, combining marks (hypothesis)', "handled: the normaliser's index map stays inside the original, in order")
@settings(max_examples=examples(400), deadline=None)
@given(texts)
def test_every_normalised_character_maps_inside_the_original_in_order(original):
    n = normalize_with_map(original)
    assert len(n.starts) == len(n.ends) == len(n.text)
    if not n.text:
        return
    assert (n.starts >= 0).all() and (n.ends <= len(original)).all()
    assert (n.starts < n.ends).all()
    assert (n.starts[1:] >= n.starts[:-1]).all(), "starts go backwards"
    assert (n.ends[1:] >= n.ends[:-1]).all(), "ends go backwards"


@settings(max_examples=examples(400), deadline=None)
@given(texts)
@example("\ufb01\xad\rA")  # found by hypothesis: the cluster swallowed a soft hyphen at a line end
def test_fast_normalise_equals_the_mapped_one(original):
    assert normalize(original) == normalize_with_map(original).text


@settings(max_examples=examples(300), deadline=None)
@given(texts)
def test_plain_ascii_characters_map_to_themselves(original):
    n = normalize_with_map(original)
    for i, char in enumerate(n.text):
        if char.isascii() and char.isalnum() and n.ends[i] - n.starts[i] == 1:
            source = original[n.starts[i]]
            assert char == source or char in unicodedata.normalize("NFKC", source)


@settings(max_examples=examples(200), deadline=None)
@given(texts)
def test_normalising_twice_changes_nothing(original):
    once = normalize(original)
    assert normalize(once) == once


def test_ligatures_expand_and_map_to_the_ligature_glyph():
    n = normalize_with_map("the \ufb01nal \ufb02ow")
    assert n.text == "the final flow"
    assert n.original_span(4, 9) == (4, 8)  # "final" <- "ﬁnal"


def test_end_of_line_hyphenation_is_joined_and_maps_across_the_break():
    original = "the infra-\nstructure team"
    n = normalize_with_map(original)
    assert n.text == "the infrastructure team"
    start, end = n.original_span(4, 18)
    assert original[start:end] == "infra-\nstructure"


def test_hyphen_before_a_number_is_kept():
    assert normalize("pages 10-\n12") == "pages 10- 12"


def test_quotes_dashes_spaces_and_invisibles_are_folded():
    assert normalize("\u201cit\u2019s\u201d \u2014 a\u00a0b\u200b c\r\n\r\nd\u00ad") == "\"it's\" - a b c d"


def test_decomposed_and_precomposed_accents_meet():
    assert normalize("e\u0301te\u0301") == normalize("\u00e9t\u00e9") == "\u00e9t\u00e9"


@settings(max_examples=examples(400), deadline=None)
@given(texts)
def test_normalising_the_changing_pieces_alone_gives_the_whole(original):
    # The chunker counts tokens piece by piece on the strength of this.
    separators = " \t\n\r" + "".join(map(chr, CONTROL_TO_SPACE))
    rebuilt, pos = [], 0
    for a, b in changing_pieces(original):
        assert (a == 0 or original[a - 1] in separators) and (b == len(original) or original[b] in separators)
        rebuilt += [original[pos:a], " ", normalize(original[a:b]), " "]
        pos = b
    rebuilt.append(original[pos:])
    assert " ".join("".join(rebuilt).translate(CONTROL_TO_SPACE).split()) == normalize(original)


def test_the_control_regexes_match_the_control_table():
    ascii_chars = "".join(map(chr, range(128)))
    assert CONTROLS.sub(" ", ascii_chars) == ascii_chars.translate(CONTROL_TO_SPACE)
    assert SEPARATORS.sub(" ", ascii_chars) == ascii_chars.translate({**CONTROL_TO_SPACE, 9: " ", 10: " "})


def test_a_line_break_inside_a_cjk_sentence_is_not_a_space():
    original = "\u7b2c\u4e8c\u5341\u4e94\n\u6761\u306e\u4e8c\u3000\uff08\u5c4a\u51fa\uff09\r\n\u306f Tokyo\n\u5927\u5b66"
    n = normalize_with_map(original)
    # Full-width parentheses fold to ASCII and still count as CJK; Latin keeps its space.
    assert n.text == "\u7b2c\u4e8c\u5341\u4e94\u6761\u306e\u4e8c(\u5c4a\u51fa)\u306f Tokyo \u5927\u5b66"
    assert n.original_span(3, 5) == (3, 6)  # "\u4e94\u6761" <- "\u4e94\n\u6761": the break inside the span


def test_hangul_keeps_its_spaces():
    assert normalize("\ucf54\ub85c\ub098 \ub300\uc751\n\uc815\ucc45") == "\ucf54\ub85c\ub098 \ub300\uc751 \uc815\ucc45"


@settings(max_examples=examples(400), deadline=None)
@given(texts, st.data())
def test_the_slice_normaliser_gives_normalise_of_the_slice(original, data):
    # The chunker normalises every chunk through it.
    slices = SliceNormalizer(original)
    for _ in range(5):
        start = data.draw(st.integers(0, len(original)))
        end = data.draw(st.integers(start, len(original)))
        assert slices(start, end) == normalize(original[start:end])


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(texts, min_size=1, max_size=4))
def test_normalising_pieces_together_gives_each_alone(originals):
    pieces = [text[a:b] for text in originals for a, b in changing_pieces(text)]
    pieces += [word for text in originals for word in text.split(" ")]
    assert normalize_each(pieces) == [normalize(piece) for piece in pieces]
