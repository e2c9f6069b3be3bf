"""HTML: bytes in, the text a browser renders out, each character mapped to the decoded source.

``parse_html(source, doc_id)``: ``encoding`` (one level up) decodes, ``tokens`` tokenizes with
positions, ``parser`` builds the visible text with ``tags``, ``text`` and ``visibility``
(``css_values``), ``meta`` finds the page's own address. The optional layout stage
(``layout``, ``layout_js``, ``dom``, ``boxes``) has Chromium lay out the source, made inert by
``defuse``, for boxes, pages and what a reader cannot see.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={"parser": ["parse_html"]})
