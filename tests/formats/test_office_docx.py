"""DOCX: the text a reader of the final document sees, every real character mapped to its part."""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from conftest import SHARED_CORPUS
from office_checks import parsed_and_checked
from ingest.formats.office import package as office_package
from ingest.formats.office import parse_docx
from schemas.errors import CorruptDocumentError, DocumentTooLargeError, EncryptedDocumentError
from schemas.records import HiddenReason, MediaType, RunKind

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
NS = (f'xmlns:w="{W}" xmlns:r="{R}" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
      'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
      'xmlns:v="urn:schemas-microsoft-com:vml"')
CORPUS = sorted(SHARED_CORPUS.glob("office/*.docx")) if (SHARED_CORPUS / "office").is_dir() else []


def docx(body: str, parts: dict[str, tuple[str, str]] | None = None, styles: str = "", background: str = "") -> bytes:
    """A DOCX whose body is ``body``; ``parts``: relationship type -> (part name, XML)."""
    parts = dict(parts or {})
    if styles:
        parts["styles"] = ("word/styles.xml", f"<w:styles {NS}>{styles}</w:styles>")
    rels = "".join(f'<Relationship Id="rId{i}" Type="{R}/{kind}" Target="{name.removeprefix("word/")}"/>'
                   for i, (kind, (name, _)) in enumerate(parts.items(), 10))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("_rels/.rels", f'<Relationships xmlns="{RELS}"><Relationship Id="rId1" '
                                  f'Type="{R}/officeDocument" Target="word/document.xml"/></Relationships>')
        z.writestr("word/document.xml", f'<?xml version="1.0" encoding="UTF-8"?>\r\n'
                                        f'<w:document {NS}>{background}<w:body>{body}</w:body></w:document>')
        z.writestr("word/_rels/document.xml.rels", f'<Relationships xmlns="{RELS}">{rels}</Relationships>')
        for name, xml in parts.values():
            z.writestr(name, xml)
    return buffer.getvalue()


def paragraph(*runs: str, properties: str = "") -> str:
    return f"<w:p>{properties}{''.join(runs)}</w:p>"


def run(text: str, properties: str = "") -> str:
    return f'<w:r>{properties}<w:t xml:space="preserve">{text}</w:t></w:r>'


def parse_checked(source: bytes, doc_id: str = "t.docx"):
    return parsed_and_checked(parse_docx, source, doc_id)


def synthetic_text(doc) -> str:
    return "".join(doc.text[r.start:r.end] for r in doc.office_runs if r.kind is RunKind.SYNTHETIC)


@pytest.mark.skipif(not CORPUS, reason="no shared office corpus")
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_office_run_reads_back_from_its_part(path):
    doc = parse_checked(path.read_bytes(), path.name)
    assert doc.media_type is MediaType.DOCX and doc.text.strip()


@pytest.mark.skipif(not CORPUS, reason="no shared office corpus")
def test_sentences_python_docx_extracts_are_in_the_text():
    docx_reader = pytest.importorskip("docx")
    found = total = 0
    for path in CORPUS:
        text = " ".join(parse_docx(path.read_bytes(), path.name).text.split())
        try:
            reader = docx_reader.Document(str(path))
        except KeyError:  # python-docx reads no Strict OOXML
            continue
        cells = [p for t in reader.tables for row in t.rows for c in row.cells for p in c.paragraphs]
        for para in list(reader.paragraphs) + cells:
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join(para.text.split())):
                if len(sentence) >= 20:
                    total += 1
                    found += sentence in text
    print(f"python-docx sentences found: {found}/{total}")
    assert total > 50 and found / total > 0.95, (found, total)


def test_tracked_deletions_never_reach_the_text_and_insertions_do():
    doc = parse_checked(docx(paragraph(
        run("Keep "), '<w:del w:id="1" w:author="a"><w:r><w:delText>gone </w:delText></w:r></w:del>',
        '<w:ins w:id="2" w:author="a">' + run("added ") + "</w:ins>",
        '<w:moveFrom w:id="3">' + run("moved away ") + "</w:moveFrom>", run("end"))))
    assert doc.text == "Keep added end"


def test_a_field_shows_its_result_never_its_instruction():
    body = paragraph(
        run("Page "), '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> PAGE </w:instrText></w:r>',
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r>', run("7"), '<w:r><w:fldChar w:fldCharType="end"/></w:r>',
        run(" see "), '<w:fldSimple w:instr=" REF x ">' + run("Table 2") + "</w:fldSimple>")
    doc = parse_checked(docx(body))
    assert doc.text == "Page 7 see Table 2"


def test_alternate_content_is_read_once_and_its_text_box_in_place():
    box = paragraph(run("In the box"))
    drawing = (f'<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wps:wsp><wps:txbx>'
               f'<w:txbxContent>{box}</w:txbxContent></wps:txbx></wps:wsp></w:drawing></mc:Choice>'
               f'<mc:Fallback><w:pict><v:shape><v:textbox><w:txbxContent>{box}</w:txbxContent></v:textbox>'
               f'</v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r>')
    doc = parse_checked(docx(paragraph(run("Before"), drawing, run("after")) + paragraph(run("Next"))))
    assert doc.text.count("In the box") == 1
    assert doc.text.index("Before") < doc.text.index("In the box") < doc.text.index("Next")


def test_a_tab_element_is_one_character_over_the_whole_element():
    doc = parse_checked(docx(paragraph('<w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t><w:cr/></w:r>')))
    assert doc.text == "a\tb\nc\n"
    tab = next(r for r in doc.office_runs if doc.text[r.start:r.end] == "\t")
    assert tab.kind is RunKind.ENTITY and tab.end - tab.start == 1 and tab.src_end - tab.src_start == len("<w:tab/>")


def test_entity_maps_to_its_whole_source_range():
    doc = parse_checked(docx(paragraph(run("Fish &amp; chips &#x2014; &lt;3"))))
    assert doc.text == "Fish & chips \u2014 <3"
    entities = [r for r in doc.office_runs if r.kind is RunKind.ENTITY]
    assert [r.src_end - r.src_start for r in entities] == [5, 8, 4]


def test_numbering_labels_are_synthetic_and_count_per_level():
    numbering = (f'<w:numbering {NS}><w:abstractNum w:abstractNumId="0">'
                 '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl>'
                 '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%1.%2)"/>'
                 '<w:suff w:val="space"/></w:lvl></w:abstractNum>'
                 '<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/>'
                 '<w:lvlText w:val="\uf0b7"/></w:lvl></w:abstractNum>'
                 '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>'
                 '<w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num></w:numbering>')

    def item(text, num, level=0):
        return paragraph(run(text), properties=f'<w:pPr><w:numPr><w:ilvl w:val="{level}"/>'
                                                 f'<w:numId w:val="{num}"/></w:numPr></w:pPr>')
    body = item("One", 1) + item("One a", 1, 1) + item("One b", 1, 1) + item("Two", 1) + item("Two a", 1, 1) \
        + item("Dot", 2)
    doc = parse_checked(docx(body, {"numbering": ("word/numbering.xml", numbering)}))
    assert doc.text == "1.\tOne\n1.a) One a\n1.b) One b\n2.\tTwo\n2.a) Two a\n\u2022\tDot"
    assert synthetic_text(doc).replace("\n", "") == "1.\t1.a) 1.b) 2.\t2.a) \u2022\t"


def test_hidden_text_stays_in_the_text_and_is_flagged():
    styles = '<w:style w:type="character" w:styleId="Secret"><w:rPr><w:vanish/></w:rPr></w:style>'
    doc = parse_checked(docx(paragraph(
        run("Seen "), run("unseen", "<w:rPr><w:vanish/></w:rPr>"), run(" also "),
        run("styled away", '<w:rPr><w:rStyle w:val="Secret"/></w:rPr>'),
        run(" shown", '<w:rPr><w:vanish w:val="0"/></w:rPr>')), styles=styles))
    assert doc.text == "Seen unseen also styled away shown"
    hidden = [(doc.text[h.start:h.end], h.reason) for h in doc.hidden_runs]
    assert hidden == [("unseen", HiddenReason.HIDDEN_FORMATTING), ("styled away", HiddenReason.HIDDEN_FORMATTING)]


def hidden_texts(doc) -> list[tuple[str, HiddenReason]]:
    return [(doc.text[h.start:h.end], h.reason) for h in doc.hidden_runs]


def test_white_on_white_and_text_under_one_point_are_hidden_with_their_reasons():
    white, tiny = '<w:rPr><w:color w:val="ffffff"/></w:rPr>', '<w:rPr><w:sz w:val="1"/></w:rPr>'
    doc = parse_checked(docx(paragraph(
        run("Seen "), run("white", white), run(" "), run("tiny", tiny), run(" "),
        run("one point", '<w:rPr><w:sz w:val="2"/></w:rPr>'), run(" "),
        run("auto", '<w:rPr><w:color w:val="auto"/></w:rPr>'), run(" "),
        run("white on black", '<w:rPr><w:color w:val="FFFFFF"/><w:highlight w:val="black"/></w:rPr>'))))
    assert hidden_texts(doc) == [("white", HiddenReason.BACKGROUND_COLOR), ("tiny", HiddenReason.TINY)]


def test_the_background_is_the_runs_then_the_paragraphs_then_the_cells_then_the_pages():
    navy = '<w:rPr><w:color w:val="000080"/></w:rPr>'
    shaded = '<w:pPr><w:shd w:val="clear" w:color="auto" w:fill="000080"/></w:pPr>'
    cell = ('<w:tbl><w:tr><w:tc><w:tcPr><w:shd w:val="clear" w:fill="000080"/></w:tcPr>'
            f'{paragraph(run("in a navy cell", navy))}</w:tc></w:tr></w:tbl>')
    doc = parse_checked(docx(paragraph(run("navy on white", navy)) + paragraph(run("navy on navy", navy),
                                                                              properties=shaded) + cell))
    assert hidden_texts(doc) == [("navy on navy", HiddenReason.BACKGROUND_COLOR),
                                 ("in a navy cell", HiddenReason.BACKGROUND_COLOR)]
    on_navy_page = parse_checked(docx(paragraph(run("navy page", navy), run(" white", '<w:rPr><w:color w:val="FFFFFF"/></w:rPr>')),
                                      background='<w:background w:color="000080"/>'))
    assert hidden_texts(on_navy_page) == [("navy page", HiddenReason.BACKGROUND_COLOR)]


def test_colour_and_size_come_from_the_style_chain_and_the_document_defaults():
    styles = ('<w:docDefaults><w:rPrDefault><w:rPr><w:color w:val="FFFFFF"/></w:rPr></w:rPrDefault></w:docDefaults>'
              '<w:style w:type="paragraph" w:styleId="Base"><w:rPr><w:color w:val="000000"/></w:rPr></w:style>'
              '<w:style w:type="paragraph" w:styleId="Body"><w:basedOn w:val="Base"/></w:style>'
              '<w:style w:type="character" w:styleId="Small"><w:rPr><w:sz w:val="1"/></w:rPr></w:style>')
    doc = parse_checked(docx(
        paragraph(run("default white")) + paragraph(run("body black"), run(" small", '<w:rPr><w:rStyle w:val="Small"/></w:rPr>'),
                                                    properties='<w:pPr><w:pStyle w:val="Body"/></w:pPr>'),
        styles=styles))
    assert hidden_texts(doc) == [("default white", HiddenReason.BACKGROUND_COLOR), (" small", HiddenReason.TINY)]


def test_tables_give_cells_by_tabs_and_rows_by_lines():
    def cell(*texts):
        return "<w:tc>" + "".join(paragraph(run(t)) if t else paragraph() for t in texts) + "</w:tc>"
    table = ("<w:tbl><w:tr>" + cell("a") + cell("") + cell("c1", "c2") + "</w:tr><w:tr>" + cell("") + cell("e")
             + cell("f") + "</w:tr></w:tbl>")
    doc = parse_checked(docx(paragraph(run("Intro")) + table + paragraph(run("After"))))
    assert doc.text == "Intro\na\t\tc1 c2\n\te\tf\nAfter"


def test_headers_footnotes_and_comments_follow_the_body_under_titles():
    header = f'<w:hdr {NS}>{paragraph(run("Running head"))}</w:hdr>'
    notes = (f'<w:footnotes {NS}><w:footnote w:type="separator" w:id="-1">{paragraph("<w:r><w:separator/></w:r>")}'
             f'</w:footnote><w:footnote w:id="1">{paragraph(run("A note."))}</w:footnote></w:footnotes>')
    comments = f'<w:comments {NS}><w:comment w:id="0" w:author="x">{paragraph(run("Nice."))}</w:comment></w:comments>'
    doc = parse_checked(docx(paragraph(run("Body")), {
        "header": ("word/header1.xml", header), "footnotes": ("word/footnotes.xml", notes),
        "comments": ("word/comments.xml", comments)}))
    assert doc.text == "Body\n\nHeaders\nRunning head\n\nFootnotes\n[1] A note.\n\nComments\n[1] Nice."
    note = doc.text.index("A note.")
    assert next(r.part for r in doc.office_runs if r.start <= note < r.end) == "word/footnotes.xml"


def test_strict_ooxml_reads_like_transitional():
    strict = docx(paragraph(run("Strict text"))).replace(W.encode(), b"http://purl.oclc.org/ooxml/wordprocessingml/main")
    assert parse_checked(strict).text == "Strict text"


def test_a_multibyte_part_maps_code_points_not_bytes():
    doc = parse_checked(docx(paragraph(run("Grüße, 日本語 \U0001f986 &amp; done"))))
    assert doc.text == "Grüße, 日本語 \U0001f986 & done"


@pytest.mark.hostile("an encrypted (password-protected) Word file", "error row: EncryptedDocumentError, 'encrypted'")
def test_an_encrypted_file_is_an_encrypted_document_error():
    ole = office_package.OLE_SIGNATURE + b"\0" * 100 + "EncryptionInfo".encode("utf-16-le") + b"\0" * 100
    with pytest.raises(EncryptedDocumentError):
        parse_docx(ole, "secret.docx")


@pytest.mark.hostile("a legacy binary Word 97-2003 file", "error row: CorruptDocumentError naming the format")
def test_a_legacy_doc_is_refused_by_name():
    with pytest.raises(CorruptDocumentError, match=r"Word 97-2003 \(\.doc\)"):
        parse_docx(office_package.OLE_SIGNATURE + b"\0" * 500, "old.doc")


@pytest.mark.hostile("a .docx that is not a zip, or a zip without its main part", "error row: CorruptDocumentError")
def test_a_corrupt_zip_or_a_missing_main_part_is_a_corrupt_document():
    with pytest.raises(CorruptDocumentError):
        parse_docx(b"PK\x03\x04 not really a zip", "broken.docx")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("word/document.xml", "<w:document/>")
    with pytest.raises(CorruptDocumentError, match="main document part"):
        parse_docx(buffer.getvalue(), "norels.docx")


@pytest.mark.hostile("a part with a DOCTYPE declaring an external entity (XXE)", "error row: CorruptDocumentError, 'DOCTYPE'; nothing is resolved or read")
def test_a_doctype_is_refused_so_no_entity_is_ever_expanded():
    source = docx(paragraph(run("x")))
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(source)) as old, zipfile.ZipFile(buffer, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            if info.filename == "word/document.xml":
                data = data.replace(b"?>\r\n", b'?>\r\n<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>')
            new.writestr(info, data)
    with pytest.raises(CorruptDocumentError, match="DOCTYPE"):
        parse_docx(buffer.getvalue(), "xxe.docx")


@pytest.mark.hostile("a part that decompresses over the limit (a zip bomb)", "error row: DocumentTooLargeError before it is decompressed")
def test_a_part_over_the_size_limit_is_refused_before_it_is_decompressed(monkeypatch):
    monkeypatch.setattr(office_package, "MAX_PART_BYTES", 1000)
    with pytest.raises(DocumentTooLargeError):
        parse_docx(docx(paragraph(run("x" * 5000))), "bomb.docx")


@pytest.mark.hostile("Word XML nested thousands of content controls deep", "error row: CorruptDocumentError, not a RecursionError")
def test_content_nested_deeper_than_python_recurses_is_a_corrupt_document():
    deep = "<w:sdt><w:sdtContent>" * 3000 + paragraph(run("x")) + "</w:sdtContent></w:sdt>" * 3000
    with pytest.raises(CorruptDocumentError, match="nested too deep"):
        parse_docx(docx(deep), "deep.docx")
