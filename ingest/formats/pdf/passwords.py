"""Passwords for encrypted PDFs: ``--passwords FILE``, one ``GLOB<TAB>PASSWORD`` per line.

GLOB is matched against the whole doc_id, shell style (``*`` also crosses ``/``):
``finance/*.pdf``, ``*``. Every line that matches a document is tried, in file
order. Blank lines and lines starting with ``#`` are ignored.

A password is never logged, never stored in the index or its manifest, and
never part of an error message or an exception's text: messages name the line
of the file instead. ``repr`` shows patterns and line numbers only.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from schemas.errors import PasswordFileError


@dataclass(frozen=True, slots=True)
class PasswordLine:
    line: int  # 1-based line of the passwords file: how messages name it
    pattern: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Passwords:
    """The lines of a passwords file.

    >>> p = Passwords.parse("finance/*.pdf\\tsecret\\n# a comment\\n*\\tfallback\\n")
    >>> [entry.line for entry in p.for_doc("finance/q3.pdf")], p
    ([1, 3], Passwords(2 lines))
    """

    lines: tuple[PasswordLine, ...] = ()

    @classmethod
    def read(cls, path: str | Path) -> Passwords:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise PasswordFileError(f"{path}: cannot read the passwords file: {exc.strerror or exc}") from None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise PasswordFileError(f"{path}: the passwords file is not UTF-8 (byte {exc.start})") from None
        return cls.parse(text, where=str(path))

    @classmethod
    def parse(cls, text: str, where: str = "passwords") -> Passwords:
        lines = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pattern, tab, password = line.partition("\t")
            if not tab or not pattern.strip() or not password:
                # The line itself is never shown: it may be a password.
                raise PasswordFileError(f"{where}, line {number}: expected GLOB<TAB>PASSWORD")
            lines.append(PasswordLine(number, pattern.strip(), password))
        return cls(tuple(lines))

    def for_doc(self, doc_id: str) -> tuple[PasswordLine, ...]:
        """The lines whose pattern matches ``doc_id``, in file order."""
        return tuple(entry for entry in self.lines if fnmatch.fnmatchcase(doc_id, entry.pattern))

    def __repr__(self) -> str:
        return f"Passwords({len(self.lines)} lines)"

    __str__ = __repr__
