"""Where an HTML page lives on the web, and when it was published, as the page itself says.

A saved page usually names its address: ``<link rel="canonical">`` or the Open
Graph ``<meta property="og:url">``. With it, a citation becomes a link that
opens the live page at the quote (the address plus a text fragment). Only an
absolute http(s) address is taken: a relative one has nothing to resolve
against, and any other scheme is not a page to open.

Its date: ``<meta property="article:published_time">`` (Open Graph), else the first
``<time datetime>`` of the page (``published_date``).
"""

from __future__ import annotations

import html
from urllib.parse import urlsplit

from ingest.formats.dates import iso_date
from ingest.formats.html.tags import IN_HEAD
from ingest.formats.html.tokens import END, START, TEXT, Tokenizer, parse_attrs


def canonical_url(decoded_source: str) -> str:
    """The page's own absolute address, from its head; "" when it names none.

    >>> canonical_url('<head><meta property="og:url" content="https://a.example/x">'
    ...               '<link rel="Canonical" href="//b.example/y?p=1&amp;q=2">')
    'https://b.example/y?p=1&q=2'
    >>> canonical_url('<link rel="canonical" href="/relative/only">')
    ''
    """
    canonical = og_url = ""
    # Only the head is read: it ends, as for the tree builder, at </head>, at the first
    # element that does not belong in a head, or at text that is not whitespace.
    for token in Tokenizer(decoded_source):
        kind = token[0]
        if kind == TEXT:
            if decoded_source[token[1] : token[2]].strip():
                break
            continue
        if kind == END and token[3] == "head":
            break
        if kind != START:
            continue
        _, _, end, name, _, attrs_at = token
        if name not in IN_HEAD and name != "html":
            break
        if name not in ("link", "meta"):
            continue
        attrs = parse_attrs(decoded_source, attrs_at, end - 1)
        if name == "link" and "canonical" in attrs.get("rel", "").lower().split() and not canonical:
            canonical = _absolute_http(attrs.get("href", ""))
        elif name == "meta" and attrs.get("property", "").strip().lower() == "og:url" and not og_url:
            og_url = _absolute_http(attrs.get("content", ""))
    return canonical or og_url


def published_date(decoded_source: str) -> str | None:
    """The page's own date, ISO 8601 (``ingest.formats.dates``): its article:published_time, else
    its first ``<time datetime>``; None where it has neither.

    >>> published_date('<meta property="article:published_time" content="2024-05-02T08:00:00+02:00"><p>x')
    '2024-05-02T06:00:00Z'
    >>> published_date('<p>Posted <time datetime="2023-11-05">Nov 5</time>'), published_date('<p>undated')
    ('2023-11-05', None)
    """
    lowered = decoded_source.lower()
    if "article:published_time" not in lowered and "<time" not in lowered:
        return None  # most pages: no tokenizing
    published = first_time = None
    for token in Tokenizer(decoded_source):
        if token[0] != START or token[3] not in ("meta", "time"):
            continue
        _, _, end, name, _, attrs_at = token
        attrs = parse_attrs(decoded_source, attrs_at, end - 1)
        if name == "meta" and attrs.get("property", "").strip().lower() == "article:published_time":
            published = iso_date(html.unescape(attrs.get("content", "")))
            if published:
                return published
        elif name == "time" and first_time is None and "datetime" in attrs:
            first_time = iso_date(html.unescape(attrs["datetime"])) or None
            if "article:published_time" not in lowered:
                return first_time
    return first_time


def _absolute_http(raw: str) -> str:
    url = html.unescape(raw).strip()
    if url.startswith("//"):
        url = "https:" + url  # protocol-relative: browsers would use the page's scheme; https is the safe guess
    if any(c.isspace() or ord(c) < 0x20 for c in url):
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return ""
    return parts._replace(fragment="").geturl()
