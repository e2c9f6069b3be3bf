"""Office documents: DOCX, PPTX, XLSX, OpenDocument and EPUB bytes in, the text and its map to the zip out.

``parse_docx``, ``parse_pptx``, ``parse_xlsx``, ``parse_odt``, ``parse_odp``, ``parse_ods`` and
``parse_epub`` each take a file's bytes and its ``doc_id``
and give a ``ParsedDocument`` whose ``office_runs`` map every real character to its part
(``word/document.xml``, ``ppt/slides/slide3.xml``, ``xl/sharedStrings.xml``) and its range in
that part's XML decoded as UTF-8; separators, titles and list labels are synthetic runs with no
source. Hidden text (DOCX hidden formatting, hidden slides, hidden rows, columns and sheets)
stays in the text and is listed in ``hidden_runs``.

The text of each format:

- DOCX: the body in reading order (paragraphs on lines, table cells separated by tabs and rows
  by newlines, text boxes where they are anchored, list labels such as "1.\\t" or "•\\t"), with
  tracked changes accepted and fields showing their results. Then, each after a blank line and a
  title line and only when it has text: "Headers", "Footers", "Footnotes", "Endnotes",
  "Comments" (every note and comment starts with a label "[1] ", "[2] ", ...).
- PPTX: the slides in order, a blank line between them; each slide's shapes in reading order
  (title placeholders, the other placeholders, then the other shapes top to bottom, left to
  right; groups and tables included), then its speaker notes after a line "Notes".
  ``office_pages`` gives each slide's range; its page is its number.
- XLSX: each sheet after a title line with its name, its rows as lines and cells separated by
  tabs, each cell as Excel displays it (number formats applied, formulas by their cached value).
  ``office_pages`` gives each sheet's range, ``office_cells`` each cell's range and reference.

- ODT, ODP, ODS: as DOCX, PPTX and XLSX (``odf``, ``ods``); EPUB: its chapters in spine order
  through the HTML parser, a page per chapter (``epub``).

``package`` reads the zip within limits (zip bombs, encrypted and legacy files), and
``xml_positions`` parses a part with expat into elements that know their source range.
``styles`` resolves a DOCX run's look (hidden, tiny, in its background's colour); ``geometry``
a PPTX shape's frame on its slide (``office_shapes``).

LibreOffice, where installed: ``render`` converts a legacy .doc/.ppt/.xls to OOXML and renders
DOCX, PPTX, ODT and ODP to PDF; ``align`` matches the rendered characters to the document text,
giving each a glyph box on its rendered page (``layout_office`` -> ``OfficeLayout``).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "docx": ["parse_docx"],
    "pptx": ["parse_pptx"],
    "xlsx": ["parse_xlsx"],
    "epub": ["parse_epub"],
    "odf": ["parse_odt", "parse_odp"],
    "ods": ["parse_ods"],
    "render": ["RenderError", "convert_legacy", "office_renderer_engine", "office_renderer_unavailable", "render_pdf"],
    "align": ["OfficeLayout", "OfficeLayoutStats", "align_rendered", "layout_office"],
})
