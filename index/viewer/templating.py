"""The Jinja environment, the viewer's own assets, and JSON that is safe inside a page.

Autoescape is on for every template: document text, quotes and claim text are
untrusted and reach the page only escaped. The only ``Markup`` made here is our
own CSS and JavaScript and JSON passed through ``script_json``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from importlib import resources

import jinja2
from markupsafe import Markup

from schemas.limits import VIEW_CHUNK_CHARS

# A <script type="application/json"> block ends at the first "</script": escaping "<", ">"
# and "&" as JSON \u escapes keeps any string inside it inert. U+2028/9 for old JS parsers.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


# Control characters the parsers keep (the form feed between PDF pages, a CR of CRLF
# text) drawn as their Unicode control pictures, so the inspector shows what is there.
_VISIBLE_CONTROLS = {c: chr(0x2400 + c) for c in range(0x20) if chr(c) not in "\n\t"} | {0x7F: "\u2421"}
_VISIBLE_CONTROLS[0x0C] = "\u240c\n"  # still a break: a page ends here


def visible_controls(text: str) -> str:
    r"""``text`` with control characters other than newline and tab drawn as symbols.

    >>> visible_controls("end of page 1\fpage 2\r\n")
    'end of page 1␌\npage 2␍\n'
    """
    return text.translate(_VISIBLE_CONTROLS)


def clip(text: str, limit: int = VIEW_CHUNK_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there are: what a page shows of a chunk.

    >>> clip("abcdef", 4)
    'abcd … [2 more characters]'
    """
    return text if len(text) <= limit else f"{text[:limit]} … [{len(text) - limit:,} more characters]"


def script_json(value: object) -> Markup:
    """JSON to embed in a ``<script type="application/json">`` block.

    >>> str(script_json({"q": "</script><script>alert(1)</script>"}))
    '{"q": "\\\\u003c/script\\\\u003e\\\\u003cscript\\\\u003ealert(1)\\\\u003c/script\\\\u003e"}'
    """
    return Markup(json.dumps(value, ensure_ascii=False).translate(_SCRIPT_SAFE))


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("index.viewer", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["script_json"] = script_json
    env.filters["visible_controls"] = visible_controls
    env.filters["clip"] = clip
    env.filters["pct"] = lambda value: f"{value:.4f}%"
    return env


@functools.cache
def asset(name: str) -> str:
    """One of our own static files (viewer.css, viewer.js) as text."""
    return (resources.files("index.viewer") / "static" / name).read_text(encoding="utf-8")


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"
