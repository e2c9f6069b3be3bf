"""How the build puts files on disk: durably, atomically, and live only when complete.

A reader never sees a half-written file: content-addressed files are written
once through a temporary name, and a generation goes live by one atomic
replacement of CURRENT (``schemas.layout`` names the files).
"""

from __future__ import annotations

import os
from pathlib import Path

from schemas.errors import IndexWriteError
from schemas.layout import IndexPaths


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


_TEXT_PIECE = 1 << 20  # characters encoded at a time when the data is a str


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write ``data`` (a str as UTF-8) so that ``path`` holds either the old or the new bytes, never a mixture."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            if isinstance(data, str):
                for at in range(0, len(data), _TEXT_PIECE):  # never a whole UTF-8 copy of a large text
                    f.write(data[at : at + _TEXT_PIECE].encode("utf-8"))
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)  # a full disk: give back what the partial copy took
        raise
    fsync_dir(path.parent)


def write_once(path: Path, data: bytes | str) -> None:
    """Content-addressed files: written once, atomically; an existing file is kept."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)


def _remove_quietly(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def write_failure(paths: IndexPaths, reason: str, live: str | None) -> IndexWriteError:
    """One line for an index that cannot be written: what the system said, where, and what still serves."""
    after = f"generation {live} is still live" if live else "nothing was published"
    return IndexWriteError(f"cannot write the index {paths.root}: {reason}; {after}")


def publish(paths: IndexPaths, generation: str) -> None:
    """Make ``generation`` the live one: one atomic rename of CURRENT."""
    atomic_write(paths.current, (generation + "\n").encode("utf-8"))
