"""Large per-document tables travel from a worker to the build through disk, a row group at a time.

A small document's rows are returned with its result (pickled through the
worker pool's pipe). A document whose table would span more than one row group
(a 50 MB page has over a million runs of its HTML map) is written by the worker
to an Arrow IPC file in the generation's spill folder instead, one row group per
record batch, and the build copies it into the Parquet table batch by batch.
Neither process then holds the whole table, and no pickled copy of it exists.
The spill folder lies inside the generation being written, which is removed if
the build fails.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa

SPILL_FOLDER = "spill"
_ERRNO = re.compile(r"\[errno (\d+)\]", re.IGNORECASE)
_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4" if pa.Codec.is_available("lz4") else None)


def spill_path(folder: Path, doc_id: str, table_name: str) -> Path:
    digest = hashlib.sha256(doc_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return folder / f"{digest}.{table_name}.arrow"


def write_spill(path: Path, pieces: Iterable[pa.Table]) -> int:
    """Write ``pieces`` (tables of one schema) as record batches; the number of rows written."""
    try:
        with contextlib.ExitStack() as stack:  # closing writes too (the footer, buffered bytes)
            rows, writer = 0, None
            for piece in pieces:
                if writer is None:
                    sink = stack.enter_context(pa.OSFile(str(path), "wb"))
                    writer = stack.enter_context(pa.ipc.new_file(sink, piece.schema, options=_OPTIONS))
                for batch in piece.to_batches():
                    writer.write_batch(batch)
                rows += piece.num_rows
    except OSError as exc:  # Arrow's errors name no file, and carry their errno in the message only
        found = _ERRNO.search(str(exc))
        code = exc.errno or (int(found.group(1)) if found else None)
        raise OSError(code, os.strerror(code) if code else str(exc), str(path)) from exc
    return rows


def read_spill(path: Path) -> Iterator[pa.Table]:
    """The pieces of a spilled table, in order, one in memory at a time; the file is removed after."""
    with pa.OSFile(str(path), "rb") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield pa.Table.from_batches([reader.get_batch(i)])
    path.unlink()
