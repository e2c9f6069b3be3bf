"""PDF: bytes in, document text with every real character's page and glyph box out.

``parse_pdf(source, doc_id)`` reads the text layer with PyMuPDF (``parser``), judges what a
reader can see (``visibility``), reads pages without a usable text layer by OCR (``text_layer``
decides which, ``ocr`` and ``tesseract`` read them) and opens encrypted files with the
``--passwords`` lines that match (``passwords``).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={"parser": ["parse_pdf"]})
