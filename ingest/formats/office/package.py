"""The zip (OPC package) of an office file, read with limits: its parts and their relationships.

An office file is untrusted: its members are checked against size and compression-ratio limits
before a byte is decompressed (a zip bomb never gets to allocate), an OLE compound file (legacy
.doc/.xls/.ppt, or an encrypted OOXML file wrapped in one) is recognised by its signature, and
macros (vbaProject.bin) are never read at all.
"""

from __future__ import annotations

import functools

import io
import posixpath
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath

from ingest.formats.dates import iso_date
from ingest.formats.office.xml_positions import Element, parse_xml
from schemas.errors import CorruptDocumentError, DocumentTooLargeError, EncryptedDocumentError
from schemas.limits import MIB

MAX_PART_BYTES = 256 * MIB  # one decompressed part
MAX_TOTAL_BYTES = 1024 * MIB  # all parts read from one file together
MAX_RATIO = 200  # decompressed / compressed, for parts over RATIO_FLOOR (XML compresses ~10-30x)
RATIO_FLOOR = 16 * MIB

OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_LEGACY = {".doc": "Word 97-2003 (.doc)", ".xls": "Excel 97-2003 (.xls)", ".ppt": "PowerPoint 97-2003 (.ppt)",
           ".docx": "Word 97-2003 (.doc)", ".docm": "Word 97-2003 (.doc)", ".xlsx": "Excel 97-2003 (.xls)",
           ".xlsm": "Excel 97-2003 (.xls)", ".pptx": "PowerPoint 97-2003 (.ppt)"}


@dataclass(frozen=True, slots=True)
class Relationship:
    rel_id: str
    rel_type: str  # the last segment of the type URI: "officeDocument", "slide", "header"...
    target: str  # the part's name in the zip (resolved against the source part); "" for external


class OfficePackage:
    """The parts of one office file, decompressed on demand within the limits.

    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w") as z:
    ...     z.writestr("_rels/.rels", '<Relationships xmlns="x"><Relationship Id="rId1" '
    ...                'Type="http://x/relationships/officeDocument" Target="word/document.xml"/></Relationships>')
    ...     z.writestr("word/document.xml", "<document/>")
    >>> OfficePackage(buf.getvalue(), "a.docx").main_part()
    'word/document.xml'
    """

    def __init__(self, source: bytes, doc_id: str) -> None:
        self.doc_id = doc_id
        if source.startswith(OLE_SIGNATURE):
            raise _ole_error(source, doc_id)
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(source))
            self._members = {info.filename: info for info in self._zip.infolist()}
        except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError) as exc:  # NotImplemented: a zip version
            raise CorruptDocumentError(f"not an office file (not a zip: {exc})", doc_id=doc_id) from exc
        # Part names are case-insensitive in OPC; producers disagree on case now and then.
        self._by_lower = {name.lower(): name for name in self._members}
        self._read_bytes = 0

    def has(self, part: str) -> bool:
        return part.lower() in self._by_lower

    def member(self, part: str) -> str:
        """The part's name as the zip spells it (a reference may differ in case); "" if missing."""
        return self._by_lower.get(part.lower(), "")

    def read(self, part: str) -> bytes:
        """The decompressed bytes of ``part``; CorruptDocumentError if missing or damaged."""
        name = self._by_lower.get(part.lower())
        if name is None:
            raise CorruptDocumentError(f"missing part {part}", doc_id=self.doc_id)
        info = self._members[name]
        self._check_limits(info)
        try:
            data = self._zip.read(info)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError, ValueError,
                zlib.error) as exc:
            raise CorruptDocumentError(f"cannot read part {part}: {exc}", doc_id=self.doc_id) from exc
        if len(data) > info.file_size:  # the header lied; never trust it further than this
            raise CorruptDocumentError(f"part {part} is larger than its header says", doc_id=self.doc_id)
        return data

    def xml(self, part: str) -> tuple[Element, str]:
        """The element tree of an XML part and its text decoded as UTF-8 (the text runs index)."""
        data = self.read(part)
        try:
            return parse_xml(data, part, self.doc_id)
        except LookupError as exc:  # expat: an encoding the XML declaration names and Python has no codec for
            raise CorruptDocumentError(f"part {part} declares an unknown encoding: {exc}", doc_id=self.doc_id) from exc

    def relationships(self, part: str) -> list[Relationship]:
        """The relationships of ``part`` ("" for the package's own), in document order."""
        folder, name = posixpath.split(part)
        rels_part = posixpath.join(folder, "_rels", name + ".rels")
        if not self.has(rels_part):
            return []
        root, _ = self.xml(rels_part)
        found = []
        for rel in root.children_named("Relationship"):
            target = rel.attrs.get("Target", "")
            if rel.attrs.get("TargetMode") == "External":
                target = ""
            elif target.startswith("/"):
                target = target.lstrip("/")
            else:
                target = posixpath.normpath(posixpath.join(folder, target)) if target else ""
            found.append(Relationship(rel.attrs.get("Id", ""), rel.attrs.get("Type", "").rsplit("/", 1)[-1], target))
        return found

    def main_part(self) -> str:
        """The officeDocument part the package relationships name (word/document.xml, ...)."""
        for rel in self.relationships(""):
            if rel.rel_type == "officeDocument" and rel.target:
                if not self.has(rel.target):
                    break
                return rel.target
        raise CorruptDocumentError("the package names no main document part", doc_id=self.doc_id)

    def title(self) -> str:
        """The title in the document properties (docProps/core.xml), "" where none."""
        return self._core_property("title")

    def created(self) -> str | None:
        """When the document was created, as its properties say (dcterms:created), ISO 8601; None where not."""
        return iso_date(self._core_property("created"))

    def _core_property(self, name: str) -> str:
        for rel in self.relationships(""):
            if rel.rel_type == "core-properties" and rel.target and self.has(rel.target):
                element = next(self.xml(rel.target)[0].iter(name), None)
                return " ".join(element.text().split()) if element is not None else ""
        return ""

    def _check_limits(self, info: zipfile.ZipInfo) -> None:
        if info.file_size > MAX_PART_BYTES:
            raise DocumentTooLargeError(f"part {info.filename} decompresses to {info.file_size:,} bytes, "
                                        f"over the limit of {MAX_PART_BYTES:,}", doc_id=self.doc_id)
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise CorruptDocumentError(f"part {info.filename} has a compression ratio over {MAX_RATIO} "
                                       "(a zip bomb?)", doc_id=self.doc_id)
        self._read_bytes += info.file_size
        if self._read_bytes > MAX_TOTAL_BYTES:
            raise DocumentTooLargeError(f"the parts read decompress to over {MAX_TOTAL_BYTES:,} bytes",
                                        doc_id=self.doc_id)


def _ole_error(source: bytes, doc_id: str) -> Exception:
    # An encrypted OOXML file is an OLE compound file holding the streams EncryptionInfo and
    # EncryptedPackage; their names are stored in UTF-16LE in the directory sectors.
    if "EncryptionInfo".encode("utf-16-le") in source or "EncryptedPackage".encode("utf-16-le") in source:
        return EncryptedDocumentError("the office file is encrypted (it needs a password)", doc_id=doc_id)
    legacy = _LEGACY.get(PurePosixPath(doc_id).suffix.lower(), "legacy binary Office (.doc, .xls or .ppt)")
    return CorruptDocumentError(f"a {legacy} file: the legacy binary Office formats are not supported; "
                                "save it as .docx, .xlsx or .pptx", doc_id=doc_id)


def within_depth(parse):
    """The walk recurses with the elements: nesting deeper than Python allows is a corrupt file."""
    @functools.wraps(parse)
    def bounded(source: bytes, doc_id: str):
        try:
            return parse(source, doc_id)
        except RecursionError as exc:
            raise CorruptDocumentError("elements nested too deep to read", doc_id=doc_id) from exc
    return bounded
