"""Section context: the heading path at a chunk's start, the document's title, the context line."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ingest.text.sections import SectionPaths, document_title, section_text
from schemas.records import Heading, MediaType, ParsedDocument

from conftest import examples


def _brute_force_path(headings: list[Heading], offset: int) -> tuple[str, ...]:
    """A heading is above ``offset`` when it starts at or before it and no heading after it, up
    to ``offset``, is of its level or an outer one (which would close its section)."""
    before = [h for h in headings if h.start <= offset]
    return tuple(h.text for i, h in enumerate(before) if all(later.level > h.level for later in before[i + 1 :]))


_headings = st.lists(st.tuples(st.integers(0, 60), st.integers(1, 6)), max_size=25).map(
    lambda rows: [Heading(start, level, f"h{i}") for i, (start, level) in enumerate(sorted(rows, key=lambda r: r[0]))]
)


@settings(max_examples=examples(300), deadline=None)
@given(_headings, st.integers(-1, 70))
@example([Heading(0, 2, "a"), Heading(0, 1, "b"), Heading(5, 2, "c")], 0)  # two at one offset: the later is inside
@example([Heading(3, 3, "a"), Heading(4, 1, "b"), Heading(5, 3, "c")], 4)
def test_section_path_equals_a_brute_force_walk_of_the_headings(headings, offset):
    assert SectionPaths(headings).at(offset) == _brute_force_path(headings, offset)


def test_a_heading_that_starts_where_a_chunk_starts_is_above_it():
    paths = SectionPaths([Heading(0, 1, "Guide"), Heading(40, 2, "Install")])
    assert paths.at(39) == ("Guide",) and paths.at(40) == ("Guide", "Install")


def test_unsorted_headings_are_refused():
    with pytest.raises(ValueError):
        SectionPaths([Heading(9, 1, "b"), Heading(0, 1, "a")])


def test_title_is_the_documents_own_else_its_first_outermost_heading():
    headings = (Heading(0, 2, "Navigation"), Heading(20, 1, "The  article"), Heading(50, 1, "Comments"))
    assert document_title(ParsedDocument("a.html", MediaType.HTML, "x", title=" Own ", headings=headings)) == "Own"
    assert document_title(ParsedDocument("a.html", MediaType.HTML, "x", headings=headings)) == "The article"
    assert document_title(ParsedDocument("a.txt", MediaType.TEXT, "x")) == ""


def test_section_text_leaves_out_a_heading_that_repeats_the_title_and_empty_lines():
    assert section_text("Rate card", ["Rate card", " ", "1.  Plans\n at a glance"]) == "Rate card\n1. Plans at a glance"


def test_a_heading_a_reader_cannot_see_heads_no_chunk(tokenizer):
    from ingest.text.chunker import chunk_spans, make_chunks
    from schemas.records import ChunkerSettings, HiddenReason, HiddenRun

    text = "Visible\n\nSecret heading\n\n" + "Words of the section. " * 40
    hidden = (HiddenRun(9, 23, HiddenReason.CSS_HIDDEN),)
    doc = ParsedDocument("a.html", MediaType.HTML, text, hidden_runs=hidden,
                         headings=(Heading(0, 1, "Visible"), Heading(9, 2, "Secret heading")))
    chunks = make_chunks(doc, chunk_spans(text, tokenizer, ChunkerSettings(max_tokens=32, overlap=4), hidden))
    assert len(chunks) > 1 and all(c.headings == ("Visible",) and c.title == "Visible" for c in chunks)
