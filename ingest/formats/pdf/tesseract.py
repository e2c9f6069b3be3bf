"""OCR of PDF pages: Tesseract reads the rendered page and gives every character a box.

The page is rendered as displayed (rotation applied, cropbox, annotations
drawn) in grey at ``dpi`` by PyMuPDF, and the ``tesseract`` program reads it
and answers in hOCR with a box per character (``hocr_char_boxes``) and a
confidence per word (``x_wconf``, 0-100). Boxes come back in points, top-left
origin of the displayed page: the coordinates of every born-digital glyph box,
so OCR text enters the same character map.

Why the ``tesseract`` program and not PyMuPDF's ``page.get_textpage_ocr``
(which drives MuPDF's built-in Tesseract): that text page carries no
confidence, and it spreads each word's width evenly over the word's
characters ("GlyphLessFont"), where Tesseract's own symbol boxes follow the
ink; one run of the program gives both, with the Tesseract the user installed
(Debian's ``tesseract-ocr`` and its language packs). No Python binding is
needed: tesserocr builds against the system's libtesseract headers, and
pytesseract is a wrapper around the same program.

The program runs with ``OMP_THREAD_LIMIT=1``: the build's parallelism is its
worker processes, one page each. On Linux a page's ``tesseract`` dies with the
worker that started it (a worker killed for ``--doc-timeout`` leaves no OCR
process running).
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unicodedata
from dataclasses import dataclass

from typing import TYPE_CHECKING

import numpy as np
from lxml import etree

from schemas.errors import OcrError
from schemas.records import OcrMode, OcrSettings

if TYPE_CHECKING:
    import pymupdf

DEFAULT_LANGUAGES = OcrSettings.languages
DEFAULT_DPI = OcrSettings.dpi
MIN_DPI, MAX_DPI = 70, 600
MAX_PIXELS = 60_000_000  # per page image; an A4 page at 600 dpi is 35 million

PARAGRAPH = "ocr_par"
LINE_CLASSES = frozenset({"ocr_line", "ocr_textfloat", "ocr_header", "ocr_caption"})
WORD = "ocrx_word"
CHAR = "ocrx_cinfo"

_LANGUAGE = re.compile(r"^[A-Za-z0-9_]+(?:\+[A-Za-z0-9_]+)*$")
_BBOX = re.compile(r"bbox\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)")
_CHAR_BBOX = re.compile(r"x_bboxes\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)")
_TEXT_ANGLE = re.compile(r"textangle\s+(-?\d+(?:\.\d+)?)")
_WORD_CONFIDENCE = re.compile(r"x_wconf\s+(-?\d+(?:\.\d+)?)")
_VERSION = re.compile(r"tesseract\s+v?(\d+(?:\.\d+)*)", re.IGNORECASE)
_TESSDATA = re.compile(r'"([^"]+)"')
_MAX_STDERR_CHARS = 300
_MIN_MAJOR_VERSION = 4  # hocr_char_boxes and the LSTM engine


@dataclass(frozen=True, slots=True)
class Tesseract:
    """An installed ``tesseract`` program that can read ``languages``."""

    executable: str
    version: str
    tessdata: str  # the folder its language packs were found in
    installed_languages: tuple[str, ...]
    languages: str  # what it is asked to read, Tesseract's syntax: "eng+deu"


def find_tesseract(languages: str = DEFAULT_LANGUAGES) -> Tesseract:
    """The ``tesseract`` program on PATH with every language of ``languages``, or OcrError saying why not.

    >>> find_tesseract("eng").languages                      # doctest: +SKIP
    'eng'
    """
    if not _LANGUAGE.match(languages):
        raise OcrError(f"--ocr-lang {languages!r} is not a Tesseract language string such as 'eng+deu'")
    return _find_tesseract(languages, os.environ.get("PATH", ""), os.environ.get("TESSDATA_PREFIX", ""))


@functools.cache
def _find_tesseract(languages: str, search_path: str, tessdata_prefix: str) -> Tesseract:
    executable = shutil.which("tesseract", path=search_path)
    if executable is None:
        raise OcrError("the tesseract program is not on PATH (Debian: apt-get install tesseract-ocr)")
    try:
        version_run = _run([executable, "--version"], timeout=30, die_with_parent=False)
        languages_run = _run([executable, "--list-langs"], timeout=30, die_with_parent=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise OcrError(f"{executable} does not run: {exc}") from exc
    match = _VERSION.search(version_run.stdout.decode("utf-8", "replace"))
    version = match.group(1) if match else "unknown"
    if match and int(version.split(".")[0]) < _MIN_MAJOR_VERSION:
        raise OcrError(f"tesseract {version} is too old: version {_MIN_MAJOR_VERSION} or later is needed")
    listing = (languages_run.stdout + languages_run.stderr).decode("utf-8", "replace").splitlines()
    if languages_run.returncode != 0 or not listing:
        detail = _stderr_tail(languages_run.stderr)
        raise OcrError(f"tesseract found no language data (tessdata); {detail}".rstrip("; "))
    folder = _TESSDATA.search(listing[0])
    tessdata = folder.group(1) if folder else tessdata_prefix
    installed = tuple(sorted(line.strip() for line in listing[1:] if line.strip()))
    missing = [lang for lang in languages.split("+") if lang not in installed]
    if missing:
        packs = " ".join(f"tesseract-ocr-{lang.lower().replace('_', '-')}" for lang in missing)
        raise OcrError(
            f"tesseract has no language data for {'+'.join(missing)} in {tessdata or 'its tessdata'} "
            f"(installed: {', '.join(installed) or 'none'}; Debian: apt-get install {packs})"
        )
    return Tesseract(executable, version, tessdata, installed, languages)


def resolve_ocr(requested: OcrSettings | None) -> tuple[OcrSettings, str]:
    """The OCR a build does, and why it does none when it was asked to: said once per build.

    ``None`` asks for the default: ``auto`` where Tesseract is installed, else none.

    >>> from schemas.records import OcrMode
    >>> resolve_ocr(OcrSettings(OcrMode.OFF))
    (OcrSettings(mode=<OcrMode.OFF: 'off'>, languages='eng', dpi=200), '')
    """
    wanted = requested or OcrSettings(OcrMode.AUTO)
    if wanted.mode is OcrMode.OFF:
        return wanted, ""
    check_settings(wanted)
    try:
        find_tesseract(wanted.languages)
    except OcrError as exc:
        return OcrSettings(OcrMode.OFF, wanted.languages, wanted.dpi), f"OCR skipped: {exc.message}"
    return wanted, ""


def check_settings(settings: OcrSettings) -> None:
    """Refuse settings no Tesseract can follow (a mistake to report, not a reason to skip OCR)."""
    if not _LANGUAGE.match(settings.languages):
        raise OcrError(f"--ocr-lang {settings.languages!r} is not a Tesseract language string such as 'eng+deu'")
    if not MIN_DPI <= settings.dpi <= MAX_DPI:
        raise OcrError(f"--ocr-dpi {settings.dpi} is outside {MIN_DPI}-{MAX_DPI}")


def describe(settings: OcrSettings) -> str:
    """The OCR settings as the manifest records them: a change means other text for the same PDF.

    >>> from schemas.records import OcrMode
    >>> describe(OcrSettings(OcrMode.AUTO, "eng+deu", 300))
    'auto eng+deu 300 dpi'
    """
    if settings.mode is OcrMode.OFF:
        return "off"
    return f"{settings.mode.value} {settings.languages} {settings.dpi} dpi"


@dataclass(frozen=True, slots=True, eq=False)
class OcrLine:
    """One line Tesseract read: its characters, a synthetic space between words, and their boxes.

    ``boxes`` has shape (len(text), 4): x0, y0, x1, y1 in points, top-left origin
    of the displayed page; the row of a synthetic space is zero and means nothing.
    ``confidence`` is the confidence (0-100) of the word each character belongs to.
    """

    paragraph: int  # lines of one paragraph are separated by "\n", paragraphs by "\n\n"
    text: str
    boxes: np.ndarray  # float32 (n, 4)
    synthetic: np.ndarray  # bool (n,): a space Tesseract put between two words
    confidence: np.ndarray  # uint8 (n,); 0 for synthetic spaces


@dataclass(frozen=True, slots=True, eq=False)
class OcrPage:
    """What Tesseract read on one page, in its reading order."""

    lines: tuple[OcrLine, ...]
    dpi: int  # the resolution it was read at (lower than asked for on a very large page)
    languages: str
    seconds: float

    @property
    def text(self) -> str:
        """The page's text with the separators the PDF parser uses (no page separator)."""
        pieces: list[str] = []
        for previous, line in zip((None, *self.lines), self.lines):
            if previous is not None:
                pieces.append("\n\n" if line.paragraph != previous.paragraph else "\n")
            pieces.append(line.text)
        return "".join(pieces)


def ocr_page(page: pymupdf.Page, tesseract: Tesseract, dpi: int = DEFAULT_DPI,
             timeout_s: float | None = None) -> OcrPage:
    """Read one page with Tesseract: its lines, each character with its box and its word's confidence.

    >>> import pymupdf
    >>> doc = pymupdf.open()
    >>> _ = doc.new_page().insert_text((72, 72), "Hello world", fontsize=14)
    >>> page = ocr_page(doc[0], find_tesseract("eng"))      # doctest: +SKIP
    >>> page.text, page.lines[0].boxes[0].round()          # doctest: +SKIP
    ('Hello world', array([72., 62., 82., 72.], dtype=float32))
    """
    if not MIN_DPI <= dpi <= MAX_DPI:
        raise OcrError(f"--ocr-dpi {dpi} is outside {MIN_DPI}-{MAX_DPI}")
    import pymupdf  # here: the build process resolves OCR settings without loading PyMuPDF

    started = time.perf_counter()
    # A poster-sized page is read at a lower resolution: Tesseract's time and memory grow with pixels.
    pixels = page.rect.width * page.rect.height * (dpi / 72) ** 2
    if pixels > MAX_PIXELS:
        dpi = max(MIN_DPI, int(dpi * (MAX_PIXELS / pixels) ** 0.5))
    pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    image = pixmap.tobytes("pnm")
    scale_x = page.rect.width / pixmap.width if pixmap.width else 1.0
    scale_y = page.rect.height / pixmap.height if pixmap.height else 1.0
    del pixmap
    hocr = run_tesseract(image, tesseract, dpi, timeout_s)
    lines = parse_hocr(hocr, scale_x, scale_y, page.rect.width, page.rect.height)
    return OcrPage(tuple(lines), dpi, tesseract.languages, time.perf_counter() - started)


def run_tesseract(image: bytes, tesseract: Tesseract, dpi: int, timeout_s: float | None = None) -> bytes:
    """Tesseract's hOCR (with character boxes) of one image (PNM or PNG bytes)."""
    command = [
        tesseract.executable, "stdin", "stdout",
        "-l", tesseract.languages,
        "--dpi", str(dpi),
        # 1: page segmentation with orientation detection, so a page scanned sideways or upside
        # down is read (boxes stay in the image's coordinates); 3, the default, where Tesseract
        # has no orientation data (osd). On an upright page both read the same.
        "--psm", "1" if "osd" in tesseract.installed_languages else "3",
        "-c", "hocr_char_boxes=1",
        "hocr",
    ]
    try:
        done = _run(command, timeout=timeout_s, stdin=image)
    except subprocess.TimeoutExpired as exc:
        raise OcrError(f"tesseract did not finish within {timeout_s:g} s") from exc
    except OSError as exc:
        raise OcrError(f"tesseract does not run: {exc}") from exc
    if done.returncode != 0 or not done.stdout.strip():
        raise OcrError(f"tesseract failed (exit {done.returncode}): {_stderr_tail(done.stderr)}")
    return done.stdout


def parse_hocr(hocr: bytes, scale_x: float, scale_y: float, width: float, height: float) -> list[OcrLine]:
    """The lines of a Tesseract hOCR page; pixel boxes scaled to points and clipped to the page."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True, recover=True)
    root = etree.fromstring(hocr, parser)
    if root is None:
        raise OcrError("tesseract's hOCR output could not be read")
    lines: list[OcrLine] = []
    paragraph = -1
    for element in root.iter():
        kind = _class_of(element)
        if kind == PARAGRAPH:
            paragraph += 1
        elif kind in LINE_CLASSES:
            line = _line(element, max(paragraph, 0), scale_x, scale_y, width, height)
            if line is not None:
                lines.append(line)
    return lines


def _line(element, paragraph: int, scale_x: float, scale_y: float, width: float, height: float) -> OcrLine | None:
    chars: list[str] = []
    boxes: list[tuple[float, float, float, float]] = []
    synthetic: list[bool] = []
    confidence: list[int] = []
    match = _TEXT_ANGLE.search(element.get("title", ""))
    angle = int(round(float(match.group(1)))) % 360 if match else 0
    for word in element.iter():
        if _class_of(word) != WORD:
            continue
        word_chars, word_boxes = _word_glyphs(word, angle)
        if not word_chars:
            continue
        if chars and _needs_space(chars[-1], word_chars[0]):
            chars.append(" ")
            boxes.append((0.0, 0.0, 0.0, 0.0))
            synthetic.append(True)
            confidence.append(0)
        match = _WORD_CONFIDENCE.search(word.get("title", ""))
        word_confidence = int(round(float(match.group(1)))) if match else 0
        chars.extend(word_chars)
        boxes.extend(word_boxes)
        synthetic.extend([False] * len(word_chars))
        confidence.extend([min(max(word_confidence, 0), 100)] * len(word_chars))
    if not chars:
        return None
    array = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    array[:, 0::2] *= scale_x
    array[:, 1::2] *= scale_y
    np.clip(array[:, 0::2], 0.0, width, out=array[:, 0::2])
    np.clip(array[:, 1::2], 0.0, height, out=array[:, 1::2])
    is_synthetic = np.asarray(synthetic, dtype=bool)
    array[is_synthetic] = 0.0
    return OcrLine(
        paragraph=paragraph,
        text="".join(chars),
        boxes=array.astype(np.float32),
        synthetic=is_synthetic,
        confidence=np.asarray(confidence, dtype=np.uint8),
    )


def _word_glyphs(word, angle: int) -> tuple[list[str], list[tuple[float, float, float, float]]]:
    """A word's code points and a box for each, in image pixels.

    Tesseract's symbol boxes where they are sound; where they are not (a line
    read at an angle gets degenerate symbol boxes, a Tesseract without
    ``hocr_char_boxes`` gives none) the word's box is split evenly along the
    direction it is read: left to right, bottom to top (90), right to left
    (180) or top to bottom (270).
    """
    word_box = _box(_BBOX.search(word.get("title", "")))
    symbols = [(s.text or "", _box(_CHAR_BBOX.search(s.get("title", "")))) for s in word if _class_of(s) == CHAR]
    symbols = [(_kept(text), box) for text, box in symbols]
    symbols = [(text, box) for text, box in symbols if text]
    sound = angle == 0 and symbols and all(box is not None and _inside(box, word_box) for _, box in symbols)
    if not sound:
        text = "".join(t for t, _ in symbols) or _kept("".join(word.itertext()))
        return (list(text), _split(word_box, len(text), angle)) if text and word_box else ([], [])
    chars: list[str] = []
    boxes: list[tuple[float, float, float, float]] = []
    for text, box in symbols:
        chars.extend(text)
        boxes.extend(_split(box, len(text), 0))  # a symbol of several code points (a ligature)
    return chars, boxes


def _box(match) -> tuple[float, float, float, float] | None:
    return tuple(float(v) for v in match.groups()) if match else None


def _inside(box: tuple[float, ...], outer: tuple[float, ...] | None, slack: float = 2.0) -> bool:
    """A symbol box with area, within its word's box (a degenerate one says nothing)."""
    return (
        outer is not None and box[2] > box[0] and box[3] > box[1]
        and box[0] >= outer[0] - slack and box[1] >= outer[1] - slack
        and box[2] <= outer[2] + slack and box[3] <= outer[3] + slack
    )


def _split(box: tuple[float, ...], n: int, angle: int) -> list[tuple[float, float, float, float]]:
    x0, y0, x1, y1 = box
    if angle in (90, 270):
        step = (y1 - y0) / n
        parts = [(x0, y0 + i * step, x1, y0 + (i + 1) * step) for i in range(n)]
        return parts[::-1] if angle == 90 else parts
    step = (x1 - x0) / n
    parts = [(x0 + i * step, y0, x0 + (i + 1) * step, y1) for i in range(n)]
    return parts[::-1] if angle == 180 else parts


def _kept(text: str) -> str:
    return "".join(c for c in text if not _is_dropped(c))


def _is_dropped(char: str) -> bool:
    # Whitespace and controls are not glyphs; U+000C is the page separator.
    return char.isspace() or unicodedata.category(char) in ("Cc", "Cs")


_NO_SPACE_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "IDEOGRAPHIC", "FULLWIDTH", "HALFWIDTH KATAKANA")


def _needs_space(before: str, after: str) -> bool:
    """Tesseract splits Chinese and Japanese into words that the text writes without spaces."""
    return not (_is_unspaced(before) and _is_unspaced(after))


@functools.lru_cache(maxsize=4096)
def _is_unspaced(char: str) -> bool:
    name = unicodedata.name(char, "")
    return name.startswith(_NO_SPACE_SCRIPTS) or "\u3000" <= char <= "\u303f"


def _class_of(element) -> str:
    return element.get("class", "") if isinstance(element.tag, str) else ""


def _stderr_tail(stderr: bytes) -> str:
    text = " ".join(stderr.decode("utf-8", "replace").split())
    return text[-_MAX_STDERR_CHARS:] if text else "no message"


def _run(command: list[str], timeout: float | None, stdin: bytes | None = None,
         die_with_parent: bool = True) -> subprocess.CompletedProcess:
    """Run tesseract; with ``die_with_parent`` (a page read in a worker that --doc-timeout may
    kill), the kernel kills it when its parent dies (Linux: PR_SET_PDEATHSIG).

    util-linux's ``setpriv`` sets that signal and execs the program where it exists. A
    ``preexec_fn`` does it otherwise, but makes Python fork instead of vfork, and a fork runs the
    process's at-fork handlers: in a Ray Client driver gRPC's made ``tesseract --list-langs`` fail
    (its message in tesseract's stderr), so the build went on without OCR.
    """
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    preexec = None
    if die_with_parent and sys.platform.startswith("linux"):
        if _setpriv():
            command = [_setpriv(), "--pdeathsig", "KILL", "--", *command]
        else:
            preexec = _die_with_parent
    return subprocess.run(
        command, input=stdin, capture_output=True, timeout=timeout, env=env, check=False, preexec_fn=preexec,
    )


@functools.cache
def _setpriv() -> str | None:
    return shutil.which("setpriv")


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: ask the kernel to kill it when its parent dies.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
