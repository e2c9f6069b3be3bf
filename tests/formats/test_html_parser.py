"""The HTML parser: visible text as a browser renders it, and its exact map to the source.

The run invariants are checked over every HTML page of sample_corpus/ and of
../shared/corpus/html/ (when present), over small fixtures, and over random
HTML. What the text should say is cross-checked against an independent parser
(BeautifulSoup on lxml).
"""

from __future__ import annotations

import codecs
import html
import re
from functools import cache
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, Comment, Declaration, Doctype, ProcessingInstruction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ingest.formats.html.parser import parse_html, parse_html_text
from schemas.errors import CorruptDocumentError, DocumentError
from schemas.records import ParsedDocument, RunKind

from conftest import SAMPLE_CORPUS, SHARED_CORPUS, examples

SHARED_HTML = SHARED_CORPUS / "html"
SAMPLE_HTML = sorted(p for p in (SAMPLE_CORPUS / "web").glob("*.html"))
SHARED_PAGES = sorted(SHARED_HTML.glob("*.html")) if SHARED_HTML.is_dir() else []
_SEPARATOR = re.compile(r"\n{1,2}\t?|\t| ")


def _shared_page(name: str) -> Path:
    path = SHARED_HTML / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


@cache
def _parsed(path: Path) -> ParsedDocument:
    return parse_html(path.read_bytes(), path.name)


def _pages() -> list:
    pages = [pytest.param(p, id=f"sample/{p.name}") for p in SAMPLE_HTML]
    pages += [pytest.param(p, id=f"shared/{p.name}") for p in SHARED_PAGES]
    return pages or [pytest.param(None, id="no-corpus")]


def _page(path: Path | None) -> ParsedDocument:
    if path is None:
        pytest.skip("no HTML corpus present")
    return _parsed(path)


# -- shared invariant helpers -------------------------------------------------------------------


def assert_runs_cover_text(doc: ParsedDocument) -> None:
    """Every character in exactly one run; runs sorted, contiguous, non-empty."""
    position = 0
    for run in doc.html_runs:
        assert run.start == position, f"gap or overlap at {position}: {run}"
        assert run.end > run.start, f"empty run {run}"
        position = run.end
    assert position == len(doc.text)


def assert_runs_match_source(doc: ParsedDocument) -> None:
    """Each run is what its kind says it is, and source offsets never go backwards."""
    text, source = doc.text, doc.decoded_source
    assert source is not None
    previous_src_end = 0
    for run in doc.html_runs:
        piece, spelled = text[run.start : run.end], source[run.src_start : run.src_end]
        assert 0 <= run.src_start <= run.src_end <= len(source)
        assert run.src_start >= previous_src_end, f"source offsets go backwards at {run}"
        previous_src_end = run.src_end
        if run.kind is RunKind.TEXT:
            assert piece == spelled, run
        elif run.kind is RunKind.ENTITY:
            assert spelled.startswith("&") and html.unescape(spelled) == piece, (run, spelled)
        elif run.kind is RunKind.WHITESPACE:
            assert piece in (" ", "\n"), run
            assert spelled and spelled.strip(" \t\n\r\f") == "", (run, spelled)
        else:
            assert run.kind is RunKind.SYNTHETIC, run
            assert run.src_start == run.src_end, run
            assert _SEPARATOR.fullmatch(piece), (run, piece)


def assert_no_separator_at_the_ends(doc: ParsedDocument) -> None:
    if doc.html_runs:
        assert doc.html_runs[0].kind is not RunKind.SYNTHETIC
        assert doc.html_runs[-1].kind is not RunKind.SYNTHETIC


def assert_valid_html_map(doc: ParsedDocument) -> None:
    assert_runs_cover_text(doc)
    assert_runs_match_source(doc)
    assert_no_separator_at_the_ends(doc)


def text_of(markup: str) -> str:
    doc = parse_html_text(markup, "fixture.html")
    assert_valid_html_map(doc)
    return doc.text


# -- every page of the corpora -----------------------------------------------------------------


@pytest.mark.parametrize("path", _pages())
def test_runs_cover_the_text_exactly_and_contiguously(path):
    assert_runs_cover_text(_page(path))


@pytest.mark.parametrize("path", _pages())
def test_every_run_maps_to_its_source_range(path):
    doc = _page(path)
    assert_runs_match_source(doc)
    assert_no_separator_at_the_ends(doc)


@pytest.mark.parametrize("path", _pages())
def test_corpus_pages_decode_without_replacement_characters(path):
    doc = _page(path)
    assert doc.text.strip()
    assert "\ufffd" not in doc.text


def _visible_text_by_beautifulsoup(decoded: str) -> str:
    """An independent oracle: lxml's tree, hidden things removed, blocks broken apart."""
    soup = BeautifulSoup(decoded, "lxml")
    hidden_tags = ["script", "style", "template", "noscript", "head", "title", "iframe",
                   "annotation", "annotation-xml", "noembed", "noframes", "datalist", "rp",
                   "audio", "video", "canvas"]
    for tag in soup.find_all(hidden_tags):
        tag.decompose()
    markup_only = (Comment, Doctype, ProcessingInstruction, Declaration)
    for node in soup.find_all(string=lambda s: isinstance(s, markup_only)):
        node.extract()
    for tag in soup.find_all(True):
        if tag.decomposed:
            continue
        style = tag.get("style") or ""
        if tag.has_attr("hidden") or re.search(
            r"display\s*:\s*none|visibility\s*:\s*hidden", str(style), re.I
        ):
            tag.decompose()
    blocks = ("p h1 h2 h3 h4 h5 h6 pre blockquote table ul ol dl figure section article header "
              "footer main nav aside hr form address div li dt dd tr td th caption figcaption "
              "option details summary br").split()
    for tag in soup.find_all(blocks):
        tag.insert_before("\n")
        tag.append("\n")
    return soup.get_text()


@pytest.mark.parametrize("path", _pages())
def test_visible_words_agree_with_an_independent_parser(path):
    doc = _page(path)
    ours = set(doc.text.split())
    theirs = set(_visible_text_by_beautifulsoup(doc.decoded_source).split())
    shared = ours & theirs
    assert len(shared) >= 0.95 * len(ours), f"leaked: {sorted(ours - theirs)[:20]}"
    assert len(shared) >= 0.95 * len(theirs), f"lost: {sorted(theirs - ours)[:20]}"


# -- the source map ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "url"),
    [
        ('<link rel="canonical" href="https://a.example/page?x=1&amp;y=2#frag">', "https://a.example/page?x=1&y=2"),
        ('<link rel="alternate Canonical" href="//b.example/p">', "https://b.example/p"),
        ('<meta property="og:url" content="http://c.example/og">', "http://c.example/og"),
        ('<meta property="og:url" content="https://c.example/og"><link rel=canonical href=https://d.example/c>',
         "https://d.example/c"),
        ('<link rel="canonical" href="/relative/path">', ""),
        ('<link rel="canonical" href="javascript:alert(1)">', ""),
        ('<link rel="canonical" href="https://e.example/a b">', ""),
        ('</head><body><p>text</p><link rel="canonical" href="https://late.example/">', ""),
    ],
)
def test_the_page_address_comes_from_its_canonical_link_or_og_url_in_the_head(head, url):
    doc = parse_html_text(f"<html><head><title>T</title>{head}</head><body><p>Body.</p></body></html>", "p.html")
    assert doc.source_url == url


def test_corpus_pages_that_name_their_address_keep_it():
    path = SHARED_HTML / "trafilatura__wikipedia-tsne.html"
    if not path.is_file():
        pytest.skip("shared corpus absent")
    doc = parse_html(path.read_bytes(), path.name)
    assert doc.source_url == "https://en.wikipedia.org/wiki/T-distributed_stochastic_neighbor_embedding"


def test_entity_maps_to_its_whole_source_range():
    doc = parse_html_text("<p>Fish &amp; chips &#x2019;n&#8217; caf&eacute caf&eacute;</p>", "e")
    assert_valid_html_map(doc)
    assert doc.text == "Fish & chips \u2019n\u2019 café café"
    entities = [r for r in doc.html_runs if r.kind is RunKind.ENTITY]
    spelled = [doc.decoded_source[r.src_start : r.src_end] for r in entities]
    assert spelled == ["&amp;", "&#x2019;", "&#8217;", "&eacute", "&eacute;"]
    amp = entities[0]
    assert (amp.end - amp.start, amp.src_end - amp.src_start) == (1, 5)


def test_entity_that_is_not_one_stays_literal_text():
    assert text_of("AT&T &notit; &ampx &#; &bogus;") == "AT&T \u00acit; &x &#; &bogus;"


def test_entity_expanding_to_two_code_points_is_one_run():
    doc = parse_html_text("a&NotEqualTilde;b", "e")
    assert_valid_html_map(doc)
    (entity,) = [r for r in doc.html_runs if r.kind is RunKind.ENTITY]
    assert doc.text[entity.start : entity.end] == "\u2242\u0338"


def test_separators_are_empty_ranges_at_the_tag_that_causes_them():
    source = "<p>one</p><p>two</p>"
    doc = parse_html_text(source, "s")
    assert_valid_html_map(doc)
    (sep,) = [r for r in doc.html_runs if r.kind is RunKind.SYNTHETIC]
    assert doc.text[sep.start : sep.end] == "\n\n"
    assert sep.src_start == sep.src_end == source.index("</p>")


def test_collapsed_whitespace_maps_to_the_whole_source_run():
    source = "a \r\n\t b"
    doc = parse_html_text(source, "w")
    assert_valid_html_map(doc)
    assert doc.text == "a b"
    (ws,) = [r for r in doc.html_runs if r.kind is RunKind.WHITESPACE]
    assert source[ws.src_start : ws.src_end] == " \r\n\t "


def test_text_runs_are_maximal():
    doc = parse_html_text("<p>plain words and more words</p>", "m")
    assert len(doc.html_runs) == 1 and doc.html_runs[0].kind is RunKind.TEXT


# -- what is visible ---------------------------------------------------------------------------


def test_hidden_content_never_appears():
    markup = """<!DOCTYPE html><html><head><title>T</title>
    <style>styleMARKER{}</style><script>scriptMARKER()</script>
    <meta name="x" content="headMARKER"></head><body>
    <p>visible one</p>
    <template><p>templateMARKER</p></template>
    <noscript>noscriptMARKER</noscript>
    <!-- commentMARKER -->
    <?php echo "piMARKER"; ?>
    <div hidden>hiddenMARKER</div>
    <span style="color: red; DISPLAY : none">displaynoneMARKER</span>
    <p style='visibility:hidden'>visibilityMARKER</p>
    <input type=hidden value="inputMARKER">
    <iframe>iframeMARKER</iframe>
    <math><semantics><mi>x</mi><annotation encoding="application/x-tex">annotationMARKER
    </annotation><annotation-xml>annotationxmlMARKER</annotation-xml></semantics></math>
    <svg><title>svgtitleMARKER</title><text>svg text</text></svg>
    <p>visible two</p></body></html>"""
    text = text_of(markup)
    assert "MARKER" not in text, text
    assert "visible one" in text and "visible two" in text and "svg text" in text


@pytest.mark.hostile("HTML with a malformed comment closer (`-- >`)", "handled: the comment hides what a browser hides")
def test_malformed_comment_closer_hides_like_a_browser():
    assert text_of("before<!-- a -- > <script>x</script> -->after") == "beforeafter"
    assert text_of("a<!-- b --!> c") == "a c"


def test_comments_end_where_the_html_tokenizer_ends_them():
    assert text_of("a<!-->b<!--->c<!---->d") == "abcd"
    assert text_of("a<!-- never closed <p>b</p>") == "a"
    assert text_of("a<!x>b<?pi ?>c</ bogus>d") == "abcd"


@pytest.mark.hostile("a `</script>` inside a JavaScript string", "handled: the script ends there, as in a browser; nothing leaks into the text")
def test_script_ends_at_its_end_tag_even_inside_a_string():
    # As in browsers, the first </script> ends the script; the rest is text.
    assert text_of("<script>var s = '</script>';</script>after") == "';after"
    assert text_of("<script><!--<script>x</script>y--></script>after") == "after"
    assert text_of("<style>p{content:'</p>'}</style>after") == "after"


def test_pre_keeps_whitespace():
    text = text_of("<p>x</p><pre>\r\n  two  spaces\r\n\tand a tab\n</pre><p>y</p>")
    assert text == "x\n\n  two  spaces\n\tand a tab\n\ny"


def test_whitespace_collapses_outside_pre_and_nbsp_is_kept():
    assert text_of("  a \n\t b  <b> c </b>  d  ") == "a b c d"
    assert text_of("a&nbsp;&nbsp; b\u00a0\u00a0c") == "a\u00a0\u00a0 b\u00a0\u00a0c"
    assert text_of("<p>  lead</p>  <p>trail  </p>") == "lead\n\ntrail"


def test_table_cells_are_separated_and_rows_are_lines():
    text = text_of(
        "<table><tr><th>A</th><th>B</th></tr><tr><td>1<td>2</tr><tr><td>3</td><td>4</td></table>"
    )
    assert text == "A\tB\n1\t2\n3\t4"


def test_br_gives_a_newline_and_p_a_blank_line():
    assert text_of("<p>one<br>two<BR/>three</p><p>four</p>") == "one\ntwo\nthree\n\nfour"


def test_never_more_than_two_newlines_from_separators():
    text = text_of("<div><p><br><br><br>a</p></div><br><br><hr><h1>b</h1><br><br><br><p>c</p>")
    assert text == "a\n\nb\n\nc"


def test_block_elements_close_implicitly():
    assert text_of("<ul><li>one<li>two</ul><p>a<div>b</div>") == "one\ntwo\n\na\n\nb"
    assert text_of("<p hidden>gone<div>shown</div>") == "shown"
    assert text_of("<dl><dt>term<dd>definition</dl>") == "term\ndefinition"
    assert text_of("<b>bold<p>para</b>still</p>") == "bold\n\nparastill"


def test_uppercase_tags_stray_end_tags_and_no_html_or_body():
    assert text_of("<P>Upper</P></div></span>Case<P>done") == "Upper\n\nCase\n\ndone"
    assert text_of("text <unclosed") == "text"
    assert text_of("a < b > c </") == "a < b > c </"


def test_title_goes_to_title_only_whitespace_collapsed():
    doc = parse_html_text("<title>  A &amp;\n  B </title><p>body</p>", "t")
    assert (doc.title, doc.text) == ("A & B", "body")


# -- decoding ----------------------------------------------------------------------------------


def test_windows_1252_bytes_decode_to_the_right_characters():
    source = b'<meta charset="windows-1252"><p>\x93quoted\x94 caf\xe9 \x80 \x81</p>'
    doc = parse_html(source, "legacy.html")
    assert_valid_html_map(doc)
    assert doc.text == "\u201cquoted\u201d caf\u00e9 \u20ac \x81"
    assert doc.encoding == "cp1252"


@pytest.mark.hostile("HTML whose declared charset is wrong (gb2312 on UTF-8 bytes)", "handled: decoded as UTF-8, with a warning")
def test_declared_legacy_charset_that_is_really_utf8_decodes_as_utf8_with_a_warning():
    doc = parse_html('<meta charset="gb2312"><p>Grüße, 你好</p>'.encode(), "lie.html")
    assert doc.text == "Grüße, 你好" and doc.encoding == "utf-8"
    assert doc.warnings == ("declared charset gb2312 does not match; decoded as utf-8",)


@pytest.mark.hostile("UTF-8 HTML with a stray Latin-1 byte", "handled: U+FFFD where a browser shows it, with a warning")
def test_utf8_with_a_stray_latin1_byte_shows_it_as_a_browser_does_with_a_warning():
    source = '<meta charset="utf-8"><p>naïve €</p><p>f'.encode() + b"\xfcr"
    doc = parse_html(source, "mixed.html")
    assert doc.text == "naïve €\n\nf\ufffdr" and doc.encoding == "utf-8"
    assert doc.decoded_source == source.decode("utf-8", "replace")
    assert len(doc.warnings) == 1 and "1 bytes" in doc.warnings[0]


@pytest.mark.hostile("HTML declared UTF-8 whose bytes are windows-1252", "handled: detected as cp1252, with a warning")
def test_declared_utf8_page_that_is_really_windows_1252_is_detected_with_a_warning():
    doc = parse_html(b'<meta charset="utf-8"><p>caf\xe9 cr\xe8me br\xfbl\xe9e</p>', "w.html")
    assert doc.text == "café crème brûlée" and doc.encoding == "cp1252"
    assert doc.warnings == ("declared charset utf-8 does not match; detected as cp1252",)


def test_undeclared_legacy_page_is_detected():
    doc = parse_html("<p>Подольски завершил карьеру в сборной</p>".encode("cp1251"), "ru.html")
    assert doc.text == "Подольски завершил карьеру в сборной" and doc.encoding == "cp1251"


@pytest.mark.parametrize(
    ("name", "encoding", "warned"),
    [
        ("readability__qq-gb2312-label.html", "utf-8", True),
        ("trafilatura__rinderleber-mixed-encoding.html", "utf-8", True),
        ("chardet__chuo-u-x-sjis.html", "cp932", False),
        ("trafilatura__ziemniaki-iso-8859-2.html", "iso8859-2", False),
        ("trafilatura__bundesliga-windows-1252.html", "cp1252", False),
    ],
)
def test_shared_corpus_charset_cases_decode_cleanly(name, encoding, warned):
    doc = _parsed(_shared_page(name))
    assert doc.encoding == encoding
    assert bool(doc.warnings) == warned, doc.warnings
    assert "\ufffd" not in doc.text


def test_byte_order_mark_wins_and_is_not_part_of_the_source():
    doc = parse_html(b"\xff\xfe" + '<meta charset="latin1"><p>héllo</p>'.encode("utf-16-le"), "b")
    assert (doc.text, doc.encoding) == ("héllo", "utf-16")
    doc = parse_html(b"\xef\xbb\xbf<p>h\xc3\xa9llo</p>", "bom8.html")
    assert (doc.text, doc.encoding) == ("héllo", "utf-8-sig")
    assert doc.decoded_source == "<p>héllo</p>"


_PAGE = '<html><head><title>Stahl</title></head><body><p>SteelJIS: S45C &amp; SUS304 \u2014 \u92fc\u6750\U0001f529</p>\r\n<p>caf\u00e9</p></body></html>'


@pytest.mark.parametrize(
    ("raw", "body_codec"),
    [
        (codecs.BOM_UTF16_LE + _PAGE.encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + _PAGE.encode("utf-16-be"), "utf-16-be"),
        (_PAGE.encode("utf-16-le"), "utf-16-le"),
        (_PAGE.encode("utf-16-be"), "utf-16-be"),
        (codecs.BOM_UTF8 + _PAGE.encode("utf-8"), "utf-8"),
        (codecs.BOM_UTF32_LE + _PAGE.encode("utf-32-le"), "utf-32-le"),
        (b"<meta charset=utf-8>" + _PAGE.encode("utf-8").replace(b"caf\xc3\xa9", b"caf\xe9"), "utf-8"),
    ],
    ids=["utf-16-le-bom", "utf-16-be-bom", "utf-16-le", "utf-16-be", "utf-8-bom", "utf-32-le-bom", "utf-8-one-bad-byte"],
)
def test_source_ranges_read_back_from_the_original_bytes_decoded_with_the_recorded_encoding(raw, body_codec):
    from ingest.formats.encoding import byte_offset

    doc = parse_html(raw, "page.html")
    decoded = raw.decode(doc.encoding, "replace")  # what any consumer of the record gets
    assert decoded == doc.decoded_source
    assert "SteelJIS: S45C & SUS304" in doc.text
    for run in doc.html_runs:
        source = decoded[run.src_start : run.src_end]
        text = doc.text[run.start : run.end]
        if run.kind is RunKind.TEXT:
            assert source == text
            if "\ufffd" in decoded[: run.src_end]:
                continue  # a replaced byte sequence has no known length: byte offsets stop being exact
            first, last = byte_offset(decoded, doc.encoding, run.src_start), byte_offset(decoded, doc.encoding, run.src_end)
            assert raw[first:last].decode(body_codec) == text
        elif run.kind is RunKind.ENTITY:
            assert html.unescape(source) == text


@pytest.mark.hostile('binary junk named .html', "error row: CorruptDocumentError, 'binary'")
def test_binary_junk_named_html_is_a_corrupt_document():
    with pytest.raises(CorruptDocumentError) as caught:
        parse_html(bytes(range(256)) * 40, "junk.html")
    assert caught.value.doc_id == "junk.html"
    assert "binary" in caught.value.message


@pytest.mark.hostile("an HTML file of zero bytes", "handled: empty text, no runs")
def test_zero_bytes_give_empty_text():
    doc = parse_html(b"", "empty.html")
    assert doc.text == "" and doc.html_runs == ()


@pytest.mark.hostile("an HTML page of markup and script with no visible text", "handled: empty text, no runs")
def test_markup_only_page_gives_empty_text():
    doc = parse_html(b"<html><head><script>x()</script></head><body> \n </body></html>", "m.html")
    assert doc.text == "" and doc.html_runs == ()


# -- random HTML -------------------------------------------------------------------------------

_TAGS = ["p", "div", "span", "b", "i", "pre", "li", "ul", "table", "tr", "td", "th", "h2", "a",
         "textarea", "svg", "title", "script", "style", "template", "head", "body", "font"]
_odd_text = st.text(
    alphabet=st.one_of(
        st.characters(blacklist_categories=("Cs",)),
        st.sampled_from(["\u0301", "\u200b", "\u200d", "\u200f", "\u05d0", "\u0627", "\ufeff",
                         "\r", "\t", "\f", " ", "\n", "\x00", "\u00a0", "&", "<", ">"]),
    ),
    max_size=12,
)
_fragment = st.one_of(
    _odd_text,
    st.sampled_from(_TAGS).map(lambda t: f"<{t}>"),
    st.sampled_from(_TAGS).map(lambda t: f"</{t}>"),
    st.sampled_from(["&amp;", "&lt;", "&nbsp;", "&#8217;", "&#x2019;", "&eacute", "&#10;",
                     "&#32;", "&#13;", "&#1;", "&#0;", "&NotEqualTilde;", "&ampx", "&#x110000;",
                     "&bogus;", "&"]),
    st.sampled_from(["<br>", "<br/>", "<hr>", "<!-- c -->", "<!-- -- > -->", "<!-->", "<!x>",
                     "<p hidden>", "<span style='display:none'>", "<td hidden>", "<?pi?>",
                     "<![CDATA[x]]>", "<a href='>'>", "\r\n", "  \t ", "</", "<"]),
)


@pytest.mark.hostile("random HTML: unbalanced and raw-text tags, entities, odd text (hypothesis)", "handled: every source-map invariant holds")
@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_fragment, max_size=30).map("".join))
def test_run_invariants_hold_for_random_html(markup):
    doc = parse_html_text(markup, "random.html")
    assert_valid_html_map(doc)
    assert parse_html_text(markup, "random.html").text == doc.text  # deterministic


_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")


@pytest.mark.hostile("random HTML as bytes (hypothesis)", "handled: every source-map invariant holds")
@settings(max_examples=examples(100), deadline=None)
@given(st.lists(_fragment, max_size=20).map(lambda parts: _CONTROL.sub("", "".join(parts))))
def test_run_invariants_hold_for_random_html_bytes(markup):
    doc = parse_html(markup.encode("utf-8"), "random.html")
    assert_valid_html_map(doc)
    if not markup.startswith("\ufeff"):
        assert doc.decoded_source == markup


# -- hostile input: bytes in any encoding, broken ones, lone surrogates -------------------------

_ENCODED = st.tuples(
    st.lists(_fragment, max_size=20).map("".join),
    st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "cp1252",
                     "iso8859-2", "shift_jis", "gb18030"]),
    st.lists(st.tuples(st.integers(0, 10_000), st.binary(min_size=1, max_size=3)), max_size=3),
)


@pytest.mark.hostile("any bytes in any encoding, with corrupted bytes (hypothesis)", "handled: a valid map over what the recorded encoding decodes, or a DocumentError")
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ENCODED)
@example(("<p>caf\u00e9</p>", "utf-16-le", [(3, b"\xd8")]))
def test_any_bytes_give_a_valid_map_over_what_the_recorded_encoding_decodes_or_a_document_error(encoded):
    markup, codec, damage = encoded
    raw = bytearray(markup.encode(codec, "replace"))
    for at, junk in damage:  # corrupt a few places, as transfers and editors do
        raw[at % (len(raw) + 1) : at % (len(raw) + 1)] = junk
    try:
        doc = parse_html(bytes(raw), "hostile.html")
    except DocumentError as error:
        assert error.doc_id == "hostile.html" and error.message
        return
    assert_valid_html_map(doc)
    decoded = bytes(raw).decode(doc.encoding, "replace")
    if doc.encoding == "cp1252":  # WHATWG's windows-1252 fills Python's five holes with C1 controls
        decoded = "".join(c if c != "\ufffd" else doc.decoded_source[i] for i, c in enumerate(decoded))
    assert decoded == doc.decoded_source


@pytest.mark.hostile("HTML with lone surrogates and bidi controls (hypothesis)", "handled: every source-map invariant holds")
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_fragment, st.sampled_from(["\ud800", "\udfff", "\udc80x", "\U0010ffff", "\u202e", "\u2066"])),
                max_size=30).map("".join))
def test_run_invariants_hold_with_lone_surrogates_and_bidi_controls(markup):
    assert_valid_html_map(parse_html_text(markup, "surrogates.html"))
