"""LibreOffice as the renderer of office documents: DOCX, DOCM, PPTX, ODT and ODP to PDF (pages
a viewer shows, glyphs ``align`` boxes the document text with), and the legacy binary formats
(.doc, .ppt, .xls) to their Open XML successors, which the parsers of this package read.

Each call runs ``soffice.bin --headless --convert-to`` once, in a private folder, with the
import filter named (a damaged file is refused, never read as plain text), stdin closed (no
password prompt can wait: an encrypted file fails at once) and a deadline, after which its
whole process group is killed. The program is ``soffice.bin`` itself, not the ``soffice``
launcher (oosplash), so the kernel kills it when the calling process dies (``setpriv
--pdeathsig KILL``, as for Tesseract) and not merely its launcher. A LibreOffice exit of 81
(a fresh profile asks to be restarted once) is answered as oosplash would: by starting again.

Every process has its own LibreOffice profile (``-env:UserInstallation``), made on first use in
a temporary folder and removed at exit, so parallel workers never share one; calls in one
process are serialised (a second LibreOffice on a profile in use hands its work to the first).
The profile sends every HTTP, HTTPS and FTP request to a proxy at 127.0.0.1:1, where nothing
answers (LibreOffice fetches the linked images of a DOCX or PPTX while loading it: measured,
three requests each; none with this profile), tells Writer and Calc never to update links when
loading, and disables macros. (A linked image on a local path is still read: it shows in the
PDF, as in the viewer of any office suite.)

What is rendered follows the parsers' text: a DOCX or ODT shows its tracked changes accepted,
insertions shown and deletions gone, where LibreOffice would draw the deleted text struck
through (a copy's ``word/settings.xml`` gets ``<w:revisionView w:markup="0" w:insDel="0"/>``; an
ODT's ``settings.xml`` ``ShowRedlineChanges`` false), and a PPTX or ODP exports its hidden
slides too (``ExportHiddenSlides``), one page a slide, without notes.
Files that still render differently (comments, hidden text, headers on every page) are the
aligner's business (``ingest.formats.office.align``).
"""

from __future__ import annotations

import atexit
import functools
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

from ingest.formats.office.package import OLE_SIGNATURE, OfficePackage
from schemas.errors import DocumentError

# suffix -> LibreOffice's import filter, and its PDF export filter (with options)
_IMPRESS_PDF = 'pdf:impress_pdf_Export:{"ExportHiddenSlides":{"type":"boolean","value":"true"}}'
RENDERED = {
    ".docx": ("MS Word 2007 XML", "pdf:writer_pdf_Export"),
    ".docm": ("MS Word 2007 XML VBA", "pdf:writer_pdf_Export"),
    ".pptx": ("Impress MS PowerPoint 2007 XML", _IMPRESS_PDF),
    ".odt": ("writer8", "pdf:writer_pdf_Export"),
    ".odp": ("impress8", _IMPRESS_PDF),
}
# legacy suffix -> its import filter, the new suffix, the export filter
LEGACY = {
    ".doc": ("MS Word 97", ".docx", "docx:MS Word 2007 XML"),
    ".ppt": ("MS PowerPoint 97", ".pptx", "pptx:Impress MS PowerPoint 2007 XML"),
    ".xls": ("MS Excel 97", ".xlsx", "xlsx:Calc MS Excel 2007 XML"),
}
_RTF = (b"{\\rtf", "Rich Text Format")  # a .doc that is RTF inside (Word saves such files)
_RESTART = 81  # soffice.bin's "restart me" (first start on a fresh profile)
_MAX_MESSAGE_CHARS = 300
_DEAD_PROXY = ("127.0.0.1", "1")

_W_NAMESPACE = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_W_STRICT = "http://purl.oclc.org/ooxml/wordprocessingml/main"
_SETTINGS_TYPE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/settings"
_SETTINGS_CONTENT = "application/vnd.openxmlformats-officedocument.wordprocessingml.settings+xml"
_SETTINGS_ROOT = re.compile(rb"<(?:([A-Za-z_][\w.-]*):)?settings\b([^>]*?)(/?)>")
# LibreOffice resolves the prefix of the name "ooo:view-settings" by the declarations in scope
_OOO = b'xmlns:ooo="http://openoffice.org/2004/office"'
_SHOW_REDLINES = re.compile(
    rb'<(?:[A-Za-z_][\w.-]*:)?config-item\s[^>]*name="ShowRedlineChanges"[^>]*?(?:/>|>[^<]*</[^>]*>)')
_VIEW_SETTINGS = re.compile(rb'<(?:([A-Za-z_][\w.-]*:))?config-item-set\s[^>]*name="ooo:view-settings"[^>]*>')
_OFFICE_SETTINGS = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?settings\b[^>]*>")
_REVISION_VIEW = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?revisionView\b[^>]*?(?:/>|>.*?</(?:[A-Za-z_][\w.-]*:)?revisionView\s*>)", re.S)


class RenderError(DocumentError):
    """LibreOffice failed on a document, did not finish in time, or produced nothing for it."""


def office_renderer_unavailable() -> str | None:
    """Why LibreOffice cannot render here, or None when it can.

    >>> office_renderer_unavailable() in (None, "no LibreOffice (soffice) on PATH")
    True
    """
    if _soffice() is None:
        return "no LibreOffice (soffice) on PATH"
    return None


@functools.cache
def office_renderer_engine() -> str:
    """What renders office documents here, as the manifest records it (a build with another
    engine lays office documents out again). Asked once a process.

    >>> office_renderer_engine()                                   # doctest: +SKIP
    'LibreOffice 7.4.7.2'
    """
    program = _soffice()
    if program is None:
        raise RenderError(f"office rendering is not available: {office_renderer_unavailable()}")
    try:
        out = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, env=_environment(None)).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise RenderError(f"LibreOffice does not answer: {exc}") from exc
    found = re.search(r"(LibreOffice\S*|OpenOffice\S*)\s+(\d+(?:\.\d+){1,3})", out)
    return f"{found.group(1)} {found.group(2)}" if found else f"LibreOffice (unknown version: {out.strip()[:60]!r})"


def render_pdf(source: bytes, suffix: str, *, timeout_s: float = 180, doc_id: str | None = None) -> bytes:
    """The PDF LibreOffice makes of an office file (``suffix``: one of ``RENDERED``; XLSX is not
    rendered): DOCX and ODT tracked changes accepted, PPTX and ODP hidden slides included.

    Raises ``RenderError`` when LibreOffice is missing, fails, runs past ``timeout_s`` or makes
    no PDF; ``ValueError`` for a suffix it is not asked to render.

    >>> pdf = render_pdf(Path("report.docx").read_bytes(), ".docx")   # doctest: +SKIP
    >>> pdf[:5]                                                       # doctest: +SKIP
    b'%PDF-'
    """
    suffix = suffix.lower()
    if suffix not in RENDERED:
        raise ValueError(f"LibreOffice renders {', '.join(RENDERED)}, not {suffix!r}")
    import_filter, export_filter = RENDERED[suffix]
    patch = {".docx": _docx_changes_accepted, ".docm": _docx_changes_accepted, ".odt": _odt_changes_accepted}
    if suffix in patch:
        try:
            source = patch[suffix](source, doc_id or f"document{suffix}")
        except DocumentError as exc:
            raise RenderError(f"not rendered: {exc.message}", doc_id=doc_id) from exc
    return _convert(source, suffix, import_filter, export_filter, ".pdf", timeout_s, doc_id)


def convert_legacy(source: bytes, suffix: str, *, timeout_s: float = 180,
                   doc_id: str | None = None) -> tuple[bytes, str]:
    """A legacy binary office file (.doc, .ppt, .xls) as the Open XML file LibreOffice saves it
    as, and that file's suffix (.docx, .pptx, .xlsx). A .doc that is RTF inside is read as RTF.

    Raises ``RenderError`` when LibreOffice cannot read it (damaged, encrypted, not what its
    suffix says) or runs past ``timeout_s``; ``ValueError`` for a suffix not in ``LEGACY``.

    >>> data, new_suffix = convert_legacy(Path("old.doc").read_bytes(), ".doc")   # doctest: +SKIP
    >>> new_suffix                                                                 # doctest: +SKIP
    '.docx'
    """
    suffix = suffix.lower()
    if suffix not in LEGACY:
        raise ValueError(f"LibreOffice converts {', '.join(LEGACY)}, not {suffix!r}")
    import_filter, new_suffix, export_filter = LEGACY[suffix]
    if suffix == ".doc" and source.lstrip()[:5] == _RTF[0]:
        import_filter = _RTF[1]
    elif not source.startswith(OLE_SIGNATURE):
        raise RenderError(f"not a legacy {suffix} file (no OLE compound file signature)", doc_id=doc_id)
    return _convert(source, suffix, import_filter, export_filter, new_suffix, timeout_s, doc_id), new_suffix


def _docx_changes_accepted(source: bytes, doc_id: str) -> bytes:
    """A copy of DOCX bytes whose settings tell a viewer to show the document with its tracked
    changes accepted (``w:revisionView`` with markup and insertions/deletions off), replacing any
    revision view the file had; a file without a settings part gets one.

    >>> import io, zipfile
    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w") as z:
    ...     z.writestr("_rels/.rels", '<Relationships><Relationship Id="r1" Type="x/officeDocument" '
    ...                'Target="word/document.xml"/></Relationships>')
    ...     z.writestr("word/document.xml", "<w:document/>")
    ...     z.writestr("word/_rels/document.xml.rels", '<Relationships><Relationship Id="r2" '
    ...                'Type="x/settings" Target="settings.xml"/></Relationships>')
    ...     z.writestr("word/settings.xml", '<w:settings xmlns:w="W"><w:revisionView w:insDel="1"/></w:settings>')
    >>> zipfile.ZipFile(io.BytesIO(_docx_changes_accepted(buf.getvalue(), "a.docx"))).read("word/settings.xml")
    b'<w:settings xmlns:w="W"><w:revisionView w:markup="0" w:insDel="0"/></w:settings>'
    """
    package = OfficePackage(source, doc_id)  # the limits hold for the copy too
    main = package.main_part()
    settings = next((r.target for r in package.relationships(main) if r.rel_type == "settings" and r.target
                     and package.has(r.target)), None)
    by_lower = {info.filename.lower(): info.filename for info in zipfile.ZipFile(io.BytesIO(source)).infolist()}
    replaced: dict[str, bytes] = {}
    if settings is not None:
        name = by_lower[settings.lower()]
        replaced[name] = _with_revision_view(package.read(name))
    else:  # a settings part of our own, named by the main part's relationships and the content types
        folder = main.rsplit("/", 1)[0] + "/" if "/" in main else ""
        strict = _W_STRICT.encode() in package.read(main)[:4096]
        settings = f"{folder}settings.xml"
        namespace = _W_STRICT if strict else _W_NAMESPACE
        replaced[settings] = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:settings '
                              f'xmlns:w="{namespace}"><w:revisionView w:markup="0" w:insDel="0"/>'
                              "</w:settings>").encode()
        rels = f"{folder}_rels/{main.rsplit('/', 1)[-1]}.rels"
        relationship = f'<Relationship Id="rIdSpanindexSettings" Type="{_SETTINGS_TYPE}" Target="settings.xml"/>'
        if rels.lower() in by_lower:
            rels = by_lower[rels.lower()]
            replaced[rels] = _insert_before_close(package.read(rels), b"Relationships", relationship.encode())
        else:
            replaced[rels] = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns='
                              f'"http://schemas.openxmlformats.org/package/2006/relationships">{relationship}'
                              "</Relationships>").encode()
        if "[content_types].xml" in by_lower:
            types = by_lower["[content_types].xml"]
            override = f'<Override PartName="/{settings}" ContentType="{_SETTINGS_CONTENT}"/>'.encode()
            replaced[types] = _insert_before_close(package.read(types), b"Types", override)
    return _copy_with(source, package, replaced)


def _odt_changes_accepted(source: bytes, doc_id: str) -> bytes:
    """A copy of ODT bytes that has tracked changes whose settings tell LibreOffice not to show
    them (``ShowRedlineChanges`` false: insertions shown, deletions gone); a file with none is
    returned as it is, a file without settings gets them.

    >>> import io, zipfile
    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w") as z:
    ...     z.writestr("content.xml", "<text:tracked-changes/>")
    ...     z.writestr("settings.xml", '<office:settings><config:config-item-set config:name="ooo:view-settings">'
    ...                '<config:config-item config:name="ShowRedlineChanges" config:type="boolean">true'
    ...                '</config:config-item></config:config-item-set></office:settings>')
    >>> settings = zipfile.ZipFile(io.BytesIO(_odt_changes_accepted(buf.getvalue(), "a.odt"))).read("settings.xml")
    >>> settings.count(b"ShowRedlineChanges"), b'"boolean">false</config:config-item>' in settings
    (1, True)
    """
    package = OfficePackage(source, doc_id)
    if not package.has("content.xml") or b"tracked-changes" not in package.read("content.xml"):
        return source
    item = b'<%sconfig-item %sname="ShowRedlineChanges" %stype="boolean">false</%sconfig-item>'
    replaced: dict[str, bytes] = {}
    if package.has("settings.xml"):
        settings = _SHOW_REDLINES.sub(b"", package.read("settings.xml"))
        view = _VIEW_SETTINGS.search(settings)
        office = _OFFICE_SETTINGS.search(settings)
        if view is not None:
            prefix = view.group(1) or b""
            settings = settings[:view.end()] + item % ((prefix,) * 4) + settings[view.end():]
        elif office is not None:
            config = b'cfg:config-item-set xmlns:cfg="urn:oasis:names:tc:opendocument:xmlns:config:1.0" ' + _OOO
            settings = (settings[:office.end()] + b'<%s cfg:name="ooo:view-settings">' % config
                        + item % ((b"cfg:",) * 4) + b"</cfg:config-item-set>" + settings[office.end():])
        replaced["settings.xml"] = settings
    else:
        replaced["settings.xml"] = (
            b'<?xml version="1.0" encoding="UTF-8"?>\n<office:document-settings xmlns:office="urn:oasis:names:tc:'
            b'opendocument:xmlns:office:1.0" xmlns:config="urn:oasis:names:tc:opendocument:xmlns:config:1.0" '
            + _OOO + b' office:version="1.2"><office:settings><config:config-item-set config:name="ooo:view-settings">'
            + item % ((b"config:",) * 4) + b"</config:config-item-set></office:settings></office:document-settings>")
        if package.has("META-INF/manifest.xml"):
            entry = b'<manifest:file-entry manifest:full-path="settings.xml" manifest:media-type="text/xml"/>'
            replaced["META-INF/manifest.xml"] = _insert_before_close(package.read("META-INF/manifest.xml"),
                                                                     b"manifest", entry)
    return _copy_with(source, package, replaced)


def _copy_with(source: bytes, package: OfficePackage, replaced: dict[str, bytes]) -> bytes:
    """The zip with the parts of ``replaced`` in place of its own (or added at its end), every
    other part as it was (decompressed within the package's limits, stored as before)."""
    replaced = dict(replaced)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in zipfile.ZipFile(io.BytesIO(source)).infolist():
            data = replaced.pop(info.filename, None)
            copy.writestr(info, data if data is not None else package.read(info.filename))
        for name, data in replaced.items():
            copy.writestr(name, data)
    return out.getvalue()


def _with_revision_view(settings: bytes) -> bytes:
    root = _SETTINGS_ROOT.search(settings)
    if root is None:
        return settings
    prefix, attributes, empty = root.groups()
    declaration = rb'xmlns:' + prefix + rb'="' if prefix else rb'xmlns="'
    at = attributes.find(declaration)
    namespace = attributes[at + len(declaration):attributes.find(b'"', at + len(declaration))] if at >= 0 \
        else _W_NAMESPACE.encode()
    if prefix:
        view = b"<%s:revisionView %s:markup=\"0\" %s:insDel=\"0\"/>" % (prefix, prefix, prefix)
    else:  # attributes need a prefix to be in the namespace: one declared on the element itself
        view = b'<sx:revisionView xmlns:sx="%s" sx:markup="0" sx:insDel="0"/>' % namespace
    body = _REVISION_VIEW.sub(b"", settings[root.end():])
    head = settings[:root.end()]
    if empty:  # <w:settings .../>
        head = head[:-2] + b">"
        body = view + b"</" + (prefix + b":" if prefix else b"") + b"settings>" + body
        return head + body
    return head + view + body


def _insert_before_close(xml: bytes, root_name: bytes, element: bytes) -> bytes:
    closing = re.search(rb"</(?:[A-Za-z_][\w.-]*:)?" + root_name + rb"\s*>\s*$", xml)
    if closing is None:
        return xml
    return xml[:closing.start()] + element + xml[closing.start():]


# -- running LibreOffice ---------------------------------------------------------------------

_lock = threading.Lock()
_profile: tuple[int, Path] | None = None  # (the process that made it, its folder)


@functools.cache
def _soffice() -> str | None:
    """soffice.bin beside the ``soffice`` on PATH (the launcher forks it: killing the launcher
    would leave it running), else the launcher itself."""
    launcher = shutil.which("soffice")
    if launcher is None:
        return None
    program = Path(os.path.realpath(launcher)).with_name("soffice.bin")
    return str(program) if program.is_file() and os.access(program, os.X_OK) else launcher


@functools.cache
def _setpriv() -> str | None:
    return shutil.which("setpriv")


def _profile_dir() -> Path:
    """This process's LibreOffice profile, made on first use, removed at exit (a forked child
    makes its own)."""
    global _profile
    if _profile is None or _profile[0] != os.getpid():
        folder = Path(tempfile.mkdtemp(prefix="spanindex-lo-profile-"))
        (folder / "user").mkdir()
        (folder / "user" / "registrymodifications.xcu").write_text(_PROFILE_SETTINGS, encoding="utf-8")
        _profile = (os.getpid(), folder)
        atexit.register(_remove_profile, os.getpid(), folder)
    return _profile[1]


def _remove_profile(pid: int, folder: Path) -> None:
    if os.getpid() == pid:
        shutil.rmtree(folder, ignore_errors=True)


def _item(path: str, name: str, value: str) -> str:
    return f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'


_INET = "/org.openoffice.Inet/Settings"
_PROFILE_SETTINGS = "\n".join([
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">',
    _item(_INET, "ooInetProxyType", "2"),  # 2: proxies set by hand, to where nothing answers
    *(_item(_INET, f"ooInet{kind}Proxy{field}", value) for kind in ("HTTP", "HTTPS", "FTP")
      for field, value in zip(("Name", "Port"), _DEAD_PROXY)),
    _item(_INET, "ooInetNoProxy", ""),
    _item("/org.openoffice.Office.Writer/Content/Update", "Link", "0"),  # sw LinkUpdateMode NEVER
    _item("/org.openoffice.Office.Calc/Content/Update", "Link", "1"),  # sc ScLkUpdMode LM_NEVER
    _item("/org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution", "true"),
    _item("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "3"),
    _item("/org.openoffice.Office.Common/Misc", "FirstRun", "false"),
    "</oor:items>",
    "",
])


def _environment(work: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "https_proxy",
                                                                       "ftp_proxy", "all_proxy")}
    proxy = f"http://{_DEAD_PROXY[0]}:{_DEAD_PROXY[1]}"
    env.update({name: proxy for name in ("http_proxy", "https_proxy", "ftp_proxy", "all_proxy",
                                         "HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "ALL_PROXY")})
    if work is not None:
        env["TMPDIR"] = str(work)  # LibreOffice's temporary files go with the call's folder
    return env


def _convert(source: bytes, suffix: str, import_filter: str, export_filter: str, out_suffix: str,
             timeout_s: float, doc_id: str | None) -> bytes:
    program = _soffice()
    if program is None:
        raise RenderError(f"office rendering is not available: {office_renderer_unavailable()}", doc_id=doc_id)
    with _lock:
        work: Path | None = None
        try:
            profile = _profile_dir()
            work = Path(tempfile.mkdtemp(prefix="spanindex-lo-"))
            document = work / f"document{suffix}"
            document.write_bytes(source)
        except OSError as exc:
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)
            raise RenderError(f"LibreOffice's files cannot be written: {exc}", doc_id=doc_id) from exc
        try:
            out_dir = work / "out"
            command = [program, f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore",
                       "--nolockcheck", "--nodefault", "--nologo", f"--infilter={import_filter}",
                       "--convert-to", export_filter, "--outdir", str(out_dir), str(document)]
            deadline = time.monotonic() + timeout_s
            for _ in range(3):
                code, output = _run(command, deadline, timeout_s, work, doc_id)
                if code != _RESTART:
                    break
            produced = out_dir / f"document{out_suffix}"
            if code != 0 or not produced.is_file() or produced.stat().st_size == 0:
                detail = " ".join(output.split())[-_MAX_MESSAGE_CHARS:] or "no message"
                raise RenderError(f"LibreOffice made no {out_suffix} of it (exit {code}): {detail}", doc_id=doc_id)
            return produced.read_bytes()
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _run(command: list[str], deadline: float, timeout_s: float, work: Path, doc_id: str | None) -> tuple[int, str]:
    """Run LibreOffice once in its own process group (killed whole at the deadline), dying with
    the caller (Linux: PR_SET_PDEATHSIG through setpriv, where it exists)."""
    if sys.platform.startswith("linux") and _setpriv():
        command = [_setpriv(), "--pdeathsig", "KILL", "--", *command]
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise RenderError(f"LibreOffice did not finish within {timeout_s:g} s", doc_id=doc_id)
    try:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, cwd=work, env=_environment(work),
                                   start_new_session=True)
    except OSError as exc:
        raise RenderError(f"LibreOffice does not run: {exc}", doc_id=doc_id) from exc
    try:
        output, _ = process.communicate(timeout=remaining)
    except subprocess.TimeoutExpired as exc:
        _kill_group(process)
        raise RenderError(f"LibreOffice did not finish within {timeout_s:g} s", doc_id=doc_id) from exc
    except BaseException:  # interrupted: leave nothing running
        _kill_group(process)
        raise
    return process.returncode, output.decode("utf-8", "replace")


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate()
