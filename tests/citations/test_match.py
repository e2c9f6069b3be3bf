"""The matcher alone: statuses, offsets and the number guard, on small texts and random ones."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index.citations.match import match_quote, numbers_kept
from schemas.citations import CitationStatus

from conftest import examples

CHUNK = "Growth plan overage is billed at $0.12 per 1,000 API calls. Refunds take 14 days to arrive."


def test_an_exact_quote_gives_its_offsets_and_occurrences():
    m = match_quote(CHUNK + " " + CHUNK, "billed at $0.12 per 1,000")
    assert m.status is CitationStatus.EXACT and m.occurrences == 2
    assert CHUNK[m.char_start : m.char_end] == "billed at $0.12 per 1,000"


def test_a_reformatted_quote_is_normalized_onto_the_original_span():
    text = "The work\ufb02ow \u201cinfra-\nstructure\u201d is billed"
    m = match_quote(text, 'workflow "infrastructure" is billed')
    assert m.status is CitationStatus.NORMALIZED
    assert text[m.char_start : m.char_end] == "work\ufb02ow \u201cinfra-\nstructure\u201d is billed"


def test_a_quote_with_a_dropped_or_added_word_is_fuzzy_over_whole_words():
    dropped = match_quote(CHUNK, "Growth plan overage is billed $0.12 per 1,000 API calls.")
    assert dropped.status is CitationStatus.FUZZY
    assert CHUNK[dropped.char_start : dropped.char_end] == "Growth plan overage is billed at $0.12 per 1,000 API calls."
    added = match_quote(CHUNK, "Growth plan overage is always billed at $0.12 per 1,000 API calls.")
    assert added.status is CitationStatus.FUZZY and added.score >= 0.9
    assert CHUNK[added.char_start : added.char_end] == "Growth plan overage is billed at $0.12 per 1,000 API calls."
    too_far = match_quote(CHUNK, "Refunds usually take 14 days to arrive.")  # 31 of 39 characters: 0.89
    assert too_far.status is CitationStatus.QUOTE_NOT_FOUND


def test_a_changed_number_never_verifies_however_close_the_text():
    for altered in ["billed at $0.21 per 1,000 API calls", "billed at $0.12 per 10,000 API calls", "Refunds take 15 days to arrive."]:
        assert match_quote(CHUNK, altered).status is CitationStatus.QUOTE_NOT_FOUND, altered


def test_numbers_keep_their_separators_and_multiplicity():
    assert numbers_kept("1,000 and 1,000", "1,000 then 1,000")
    assert not numbers_kept("1,000 and 1,000", "1,000 then 2,000")
    assert not numbers_kept("1.000", "1,000")


@settings(max_examples=examples(300), deadline=None)
@given(st.text(min_size=20, max_size=300), st.data())
def test_any_substring_is_found_exactly_at_its_first_occurrence(text, data):
    start = data.draw(st.integers(0, len(text) - 12))
    end = data.draw(st.integers(start + 12, len(text)))
    quote = text[start:end]
    m = match_quote(text, quote, min_chars=1)
    assert m.status is CitationStatus.EXACT
    assert m.char_start == text.find(quote) and text[m.char_start : m.char_end] == quote


@settings(max_examples=examples(300), deadline=None)
@given(st.text(min_size=30, max_size=200), st.text(min_size=15, max_size=60))
def test_a_verified_match_always_lies_inside_the_chunk(text, quote):
    m = match_quote(text, quote)
    if m.status.verified:
        assert 0 <= m.char_start < m.char_end <= len(text)


_HOSTILE = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.sampled_from(["\x00", "\x0c", "\x85", "\u200b", "\u200f", "\u202e", "\u0301", "\ufb01", "\u3000",
                         "\u65e5", "\uff12", "2", "$", " ", "\n", "-", "\ud800", "\udfff"]),
    ),
    min_size=0,
    max_size=80,
)


@pytest.mark.hostile("quotes and chunk texts with NUL, control characters, lone surrogates, combining marks, bidi marks (hypothesis)", "handled: every quote gets a status; a verified one lies inside the chunk, an exact one reads back")
@settings(max_examples=examples(300), deadline=None)
@given(_HOSTILE, _HOSTILE, st.data())
def test_hostile_quotes_get_a_status_and_verified_ones_read_back_from_the_chunk(text, quote, data):
    if data.draw(st.booleans()) and len(text) > 2:  # half the time, a quote that is really there
        a = data.draw(st.integers(0, len(text) - 1))
        quote = text[a : data.draw(st.integers(a + 1, len(text)))] + quote[:3]
    m = match_quote(text, quote)
    assert isinstance(m.status, CitationStatus)
    if m.status.verified:
        assert 0 <= m.char_start < m.char_end <= len(text)
        if m.status is CitationStatus.EXACT:
            assert text[m.char_start : m.char_end] == quote


# Japanese, as it is typeset: a sentence wraps at a line break that is not a space.
JAPANESE = (
    "第二十五条の二　前条第一項の規定により届出をした者は、\n"
    "二〇一八年四月一日までに、その届出に係る事項を記載した書面を\n"
    "主務大臣に提出しなければならない。\n"
)


def test_a_cjk_sentence_quoted_without_its_line_break_is_normalized_onto_the_whole_sentence():
    quote = "届出をした者は、二〇一八年四月一日までに、その届出に係る事項を記載した書面を主務大臣に提出しなければならない。"
    m = match_quote(JAPANESE, quote)
    assert m.status is CitationStatus.NORMALIZED
    assert JAPANESE[m.char_start : m.char_end].replace("\n", "") == quote


def test_a_cjk_quote_missing_one_character_is_fuzzy_per_character_and_a_changed_digit_is_not():
    sentence = "その届出に係る事項を記載した書面を主務大臣に提出しなければならない。"  # 34 characters
    dropped = sentence.replace("記載した", "記載た")
    m = match_quote(JAPANESE, "二〇一八年四月一日までに、" + dropped)
    assert m.status is CitationStatus.FUZZY, m
    assert JAPANESE[m.char_start : m.char_end].replace("\n", "") == "二〇一八年四月一日までに、" + sentence
    changed = match_quote(JAPANESE.replace("二〇一八", "２０１８"), "２０１９年四月一日までに、" + sentence)
    assert changed.status is CitationStatus.QUOTE_NOT_FOUND


def test_full_width_digits_are_the_same_numbers_as_ascii_ones():
    text = "売上は２０１８年に１，２００万円でした。"
    assert match_quote(text, "売上は2018年に1,200万円でした。").status is CitationStatus.NORMALIZED
    assert numbers_kept("２０１８年", "2018年") and not numbers_kept("２０１８年", "2019年")
    assert match_quote(text, "売上は2018年に1,300万円でした。").status is CitationStatus.QUOTE_NOT_FOUND


def test_hangul_keeps_its_spaces():
    text = "코로나19 대응\n정책 보고서는 네 쪽이다."
    assert match_quote(text, "코로나19 대응 정책 보고서는 네 쪽이다.").status is CitationStatus.NORMALIZED
    assert match_quote(text, "코로나19 대응정책 보고서는 네 쪽이다.").status is not CitationStatus.NORMALIZED
