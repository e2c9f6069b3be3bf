"""One build per index at a time.

The lock is an advisory ``flock`` on INDEX/LOCK. The kernel drops it when the
holder dies, however it dies, so a lock left by a killed build is simply free
again: no stale-lock guessing. The holder writes who it is into the file so a
refused build can name it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from schemas.errors import IndexLockedError


class BuildLock:
    """``with BuildLock(path): ...`` holds the index for one build.

    >>> import tempfile, pathlib
    >>> with BuildLock(pathlib.Path(tempfile.mkdtemp()) / "LOCK") as lock:
    ...     lock.held
    True
    """

    def __init__(self, path: Path, *, wait: bool = False) -> None:
        self.path = path
        self.wait = wait
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> "BuildLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if self.wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise IndexLockedError(
                f"another build is running on this index ({holder}); "
                "wait for it, or run with --wait"
            ) from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(holder).encode(), 0)
        except OSError as exc:  # a full disk: let go, or this process would hold the index until it exits
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _read_holder(fd: int) -> str:
    try:
        holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {holder['pid']} on {holder['host']} since {holder['since']}"
    except (ValueError, KeyError):
        return "holder unknown"
