"""Source formats: a file's bytes in, a ``ParsedDocument`` out (or a document error row).

Takes the bytes of one file and its media type; gives the document text, the map from every
character back to the file (PDF page and glyph box, HTML source range, identity for text),
hidden-text runs and warnings. ``parse_document`` turns any parser failure into the document's
error row. One package per format: ``pdf/`` (PyMuPDF, Tesseract for scans, passwords), ``html/``
(a positional tokenizer, the tree builder, and the optional Chromium layout), ``text.py``
(Markdown and plain text), ``office/`` (DOCX, PPTX, XLSX, EPUB, OpenDocument, legacy files
through LibreOffice, and LibreOffice's rendering for pages and glyph boxes); ``encoding.py``
decodes text formats as a browser would.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "parse": ["PARSER_VERSION", "RENDERED_TYPES", "media_type_of", "parse_document"],
    "pdf.passwords": ["Passwords"],
    "pdf.tesseract": ["describe", "find_tesseract", "resolve_ocr"],
    "html.defuse": ["Defuser"],
    "office.readback": ["office_run_problems"],
    "office.render": ["RenderError", "office_renderer_engine", "office_renderer_unavailable"],
    "office.align": ["OfficeLayout", "OfficeLayoutStats", "layout_office"],
    "html.layout": ["HtmlLayout", "LayoutError", "LayoutStats", "close_shared_browser", "layout_engine",
                    "shared_browser"],
})
