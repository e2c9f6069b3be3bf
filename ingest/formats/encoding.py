"""Decoding the bytes of text formats (HTML, Markdown, plain text) to ``str``.

The order is the browser's: a byte order mark, then (HTML) the charset the page
declares, then detection, then UTF-8, then windows-1252. Labels map to codecs
the way the WHATWG Encoding standard maps them (``iso-8859-1`` is windows-1252,
``gb2312`` is GB18030, ``shift_jis`` is Windows-31J). Pages lie about their
charset; a lie we can see through is decoded correctly and recorded as a
warning, never raised.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from bs4.dammit import EncodingDetector
from charset_normalizer import from_bytes

from schemas.errors import CorruptDocumentError


@dataclass(frozen=True, slots=True)
class DecodedSource:
    """The decoded text, the Python codec that produced it, and what was recovered.

    ``original.decode(encoding, errors="replace") == text``: the recorded codec consumes
    any byte order mark, and invalid bytes are U+FFFD as browsers show them. (One
    exception, after WHATWG: the five bytes windows-1252 leaves undefined decode as the
    C1 controls of the same number, where Python's cp1252 would give U+FFFD.)
    """

    text: str
    encoding: str  # Python codec name, e.g. "utf-8", "cp1252", "cp932", "iso8859-2"
    warnings: tuple[str, ...] = ()


# (byte order mark, codec of the bytes after it, the codec recorded). The recorded one
# consumes the mark itself, so that decoding the original bytes with the recorded
# encoding gives exactly the string the source map indexes (no U+FEFF in front).
_BOMS = (  # UTF-32 first: its little-endian BOM begins with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32-le", "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "utf-32"),
    (codecs.BOM_UTF8, "utf-8", "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16"),
)


def _labels(codec: str, *labels: str) -> dict[str, str]:
    return {label: codec for label in labels}


# WHATWG Encoding labels whose codec is not the one Python's alias of the same
# name gives. Keys are normalised by _label_key (lower case, letters and digits).
_WHATWG = {
    **_labels("utf-8", "utf8", "unicode11utf8", "unicode20utf8", "xunicode20utf8"),
    **_labels(
        "cp1252", "ansix341968", "ascii", "usascii", "cp1252", "cp819", "csisolatin1",
        "ibm819", "iso88591", "isoir100", "iso885911987", "l1", "latin1", "windows1252",
        "xcp1252", "xuserdefined",
    ),
    **_labels(
        "cp1254", "iso88599", "latin5", "l5", "windows1254", "iso885991989", "isoir148",
        "csisolatin5", "xcp1254", "cp1254",
    ),
    **_labels("cp874", "windows874", "tis620", "iso885911", "dos874"),
    **_labels(
        "gb18030", "gb2312", "gbk", "gb231280", "chinese", "csgb2312", "csiso58gb231280",
        "isoir58", "xgbk", "cp936", "hzgb2312",
    ),
    **_labels(
        "cp932", "shiftjis", "sjis", "xsjis", "mskanji", "windows31j", "csshiftjis", "ms932",
        "cp932",
    ),
    **_labels("euc_jp", "eucjp", "xeucjp", "cseucpkdfmtjapanese"),
    **_labels("iso2022_jp", "iso2022jp", "csiso2022jp"),
    **_labels(
        "cp949", "euckr", "ksc56011987", "korean", "windows949", "csksc56011987", "isoir149",
        "ksc5601", "ksc56011989", "cseuckr", "cp949",
    ),
    **_labels("big5hkscs", "big5", "big5hkscs", "cnbig5", "csbig5", "xxbig5"),
    **_labels("koi8_u", "koi8u", "koi8ru"),
    **_labels("mac_cyrillic", "xmaccyrillic", "xmacukrainian"),
    **_labels("mac_roman", "macintosh", "mac", "xmacroman", "csmacintosh"),
    **_labels("iso8859_8", "iso88598i", "csiso88598i", "logical"),
    # A <meta> cannot declare UTF-16 truthfully: the tag itself was read as ASCII.
    **_labels("utf-8", "utf16", "utf16le", "utf16be", "utf32", "utf32le", "utf32be"),
}
_REFUSED_LABELS = frozenset({"utf7", "undefined", "replacement"})

# Bytes that do not occur in text: C0 controls but tab, newlines, form feed and
# ESC (ISO-2022), plus DEL.
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_BINARY_CHECK_BYTES = 8192
_DECLARATION_SCAN_BYTES = 4096
_HEAD_SCAN_BYTES = 65536

_LONE_SURROGATE = re.compile("[\udc80-\udcff]")
# Windows-1252 as WHATWG decodes it: its five holes are the C1 controls.
_CP1252 = tuple(
    bytes([b]).decode("cp1252") if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D) else chr(b)
    for b in range(256)
)
_C1 = re.compile("[\x80-\x9f]")


def decode_source(source: bytes, doc_id: str, *, html: bool) -> DecodedSource:
    """Decode the bytes of a text document as a browser would, recording what it recovered.

    >>> d = decode_source(b'<meta charset="windows-1252">\\x93caf\\xe9\\x94', "a.html", html=True)
    >>> d.text[-6:], d.encoding
    ('“café”', 'cp1252')
    """
    if not source:
        return DecodedSource("", "utf-8")
    for bom, codec, recorded in _BOMS:
        if source.startswith(bom):
            return _decode_after_bom(source[len(bom) :], codec, recorded)
    head = source[:_BINARY_CHECK_BYTES]
    n_controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    if n_controls > max(len(head) // 100, 3):  # a stray control byte or three is not binary
        utf16 = _utf16_without_bom(source)
        if utf16 is not None:
            return utf16
        raise CorruptDocumentError("not text: looks like binary data", doc_id=doc_id)

    ascii_only = source.isascii()
    is_utf8 = ascii_only or _is_utf8(source)
    declared = _declared_charset(source) if html else None
    said = "no charset declared"
    if declared is not None:
        codec = _codec_for_label(declared)
        if codec is None:
            said = f"unknown declared charset {declared} ignored"
        elif codec == "utf-8":
            if is_utf8:
                return DecodedSource(source.decode("utf-8"), "utf-8")
            said = f"declared charset {declared}"
        elif is_utf8 and not ascii_only:
            # Valid UTF-8 with non-ASCII bytes is almost never anything else.
            lie = f"declared charset {declared} does not match; decoded as utf-8"
            return DecodedSource(source.decode("utf-8"), "utf-8", (lie,))
        else:
            return _decode_legacy(source, codec, f"declared charset {declared}")

    if is_utf8:
        notes = () if declared is None else (f"{said}; decoded as utf-8",)
        return DecodedSource(source.decode("utf-8"), "utf-8", notes)
    mixed = _decode_mostly_utf8(source, said)
    if mixed is not None:
        return mixed
    if said.startswith("declared"):
        said += " does not match"
    codec = _detect(source)
    if codec is None or codec == "utf-8":
        if n_controls:
            raise CorruptDocumentError("not text: looks like binary data", doc_id=doc_id)
        codec, note = "cp1252", f"{said}, none detected; decoded as cp1252"
    else:
        note = f"{said}; detected as {codecs.lookup(codec).name}"
    decoded = _decode_legacy(source, codec, "detected charset")
    return DecodedSource(decoded.text, decoded.encoding, (note, *decoded.warnings))


def _detect(source: bytes) -> str | None:
    """charset-normalizer's guess, but windows-1252 wherever it fits as well.

    On short Western text it often names a sibling (cp1250, cp1257) that decodes
    the same bytes no better; the web's usual legacy encoding is windows-1252.
    """
    matches = from_bytes(source)
    best = matches.best()
    if best is None:
        return None
    codec = _codec_for_label(best.encoding)
    if codec in (None, "utf-8", "cp1252"):
        return codec
    for match in matches:
        if match.chaos <= best.chaos and _codec_for_label(match.encoding) == "cp1252":
            return "cp1252"
    try:
        if source.decode(codec) == _decode_legacy(source, "cp1252", "").text:
            return "cp1252"
    except UnicodeDecodeError:
        pass
    return codec


def _label_key(label: str) -> str:
    return re.sub(r"[^a-z0-9]", "", label.lower())


def _codec_for_label(label: str) -> str | None:
    """The Python codec a browser would use for an encoding label; None if unknown."""
    key = _label_key(label)
    if key in _REFUSED_LABELS:
        return None
    if key in _WHATWG:
        return _WHATWG[key]
    try:
        info = codecs.lookup(label.strip())
    except LookupError:
        return None
    if not info._is_text_encoding or _label_key(info.name) in _REFUSED_LABELS:
        return None
    return _WHATWG.get(_label_key(info.name), info.name)


def _declared_charset(source: bytes) -> str | None:
    found = EncodingDetector.find_declared_encoding(
        source[:_DECLARATION_SCAN_BYTES], is_html=True, search_entire_document=True
    )
    if found is None and len(source) > _DECLARATION_SCAN_BYTES:
        # Browsers keep looking through <head>; so do we, up to a limit.
        head = source[:_HEAD_SCAN_BYTES].lower()
        cut = min((p for p in (head.find(b"</head"), head.find(b"<body")) if p >= 0), default=-1)
        if cut > _DECLARATION_SCAN_BYTES:
            found = EncodingDetector.find_declared_encoding(
                source[:cut], is_html=True, search_entire_document=True
            )
    return found.strip() if found else None


def _is_utf8(source: bytes) -> bool:
    try:
        source.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode_mostly_utf8(source: bytes, said: str) -> DecodedSource | None:
    """UTF-8 with a few invalid bytes, each shown as U+FFFD, as a browser shows them.

    Decoding the bytes with the recorded encoding and ``errors="replace"`` gives the
    same string (WHATWG and Python both replace each maximal invalid sequence by one
    U+FFFD), so the source map indexes what a consumer decodes, and a text fragment
    matches what the live page shows. None when the invalid bytes outnumber the valid
    multi-byte sequences: then the text is not UTF-8 at all.
    """
    text = source.decode("utf-8", "surrogateescape")  # invalid byte b -> U+DC00 + b
    n_invalid = len(_LONE_SURROGATE.findall(text))
    extra_bytes = len(source) - len(text)  # sum over valid multi-byte characters of bytes - 1
    if n_invalid > extra_bytes:
        return None
    return DecodedSource(
        source.decode("utf-8", "replace"),
        "utf-8",
        (f"{said}, but {n_invalid} bytes are not valid utf-8; shown as U+FFFD, as a browser shows them",),
    )


def _decode_legacy(source: bytes, codec: str, what: str) -> DecodedSource:
    try:
        text = source.decode(codec)
    except UnicodeDecodeError:
        pass
    else:
        return DecodedSource(text, codecs.lookup(codec).name)
    if codecs.lookup(codec).name == "cp1252":
        # WHATWG's windows-1252 has no holes: 0x81, 0x8D, 0x8F, 0x90, 0x9D are C1 controls.
        text = _C1.sub(lambda m: _CP1252[ord(m.group())], source.decode("latin-1"))
        return DecodedSource(text, "cp1252")
    text = source.decode(codec, "replace")
    return DecodedSource(
        text,
        codecs.lookup(codec).name,
        (f"{what}: {text.count(chr(0xFFFD))} invalid byte sequences replaced by U+FFFD",),
    )



def _decode_after_bom(body: bytes, codec: str, recorded: str) -> DecodedSource:
    try:
        return DecodedSource(body.decode(codec), recorded)
    except UnicodeDecodeError:
        pass
    text = body.decode(codec, "replace")
    count = text.count("\ufffd")
    return DecodedSource(
        text, recorded, (f"byte order mark says {codec}, but {count} byte sequences are invalid: shown as U+FFFD",)
    )


def _utf16_without_bom(source: bytes) -> DecodedSource | None:
    """UTF-16 text without a byte order mark: NUL in every other byte of ASCII."""
    head = source[: _BINARY_CHECK_BYTES - _BINARY_CHECK_BYTES % 2]
    even_nuls, odd_nuls = head[0::2].count(0), head[1::2].count(0)
    pairs = len(head) // 2
    if pairs == 0 or len(source) % 2:
        return None
    if odd_nuls > pairs * 0.3 and even_nuls == 0:
        codec = "utf-16-le"
    elif even_nuls > pairs * 0.3 and odd_nuls == 0:
        codec = "utf-16-be"
    else:
        return None
    try:
        text = source.decode(codec)
    except UnicodeDecodeError:
        return None
    if sum(text.count(chr(c)) for c in _CONTROL_BYTES) * 100 > len(text):
        return None
    return DecodedSource(text, codec, (f"no byte order mark; detected {codec}",))


def byte_offset(decoded: str, encoding: str, offset: int) -> int:
    """The byte offset in the original file of ``decoded[offset]`` (byte order mark included).

    Exact wherever the bytes before it were valid in the encoding (a U+FFFD stands for
    an invalid sequence of unknown length).

    >>> source = "\ufeff<p>\u00e9t\u00e9</p>".encode("utf-16-le")
    >>> d = decode_source(source, "a.html", html=True)
    >>> d.encoding, byte_offset(d.text, d.encoding, 3), source[8:10].decode("utf-16-le")
    ('utf-16', 8, 'é')
    """
    return len(decoded[:offset].encode(encoding, "replace"))
