"""manifest.json: what a generation holds and how it was made."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from schemas.ann import AnnParams
from schemas.errors import IndexFormatError
from schemas.layout import MANIFEST
from schemas.records import ChunkerSettings, Manifest, SegmentRef
from schemas.tables import FORMAT_VERSION


def manifest_to_json(manifest: Manifest) -> str:
    return json.dumps(dataclasses.asdict(manifest), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def manifest_from_json(text: str, where: str = "manifest.json") -> Manifest:
    """Parse a manifest, refusing a format version this spanindex does not read."""
    try:
        raw = json.loads(text)
        found = raw.get("format_version")
        if found != FORMAT_VERSION:
            hint = "; run `spanindex build` on it again (a full rebuild)" if isinstance(found, int) and found < FORMAT_VERSION else ""
            raise IndexFormatError(f"{where}: format version {found!r}, this spanindex reads {FORMAT_VERSION}{hint}")
        known = {f.name for f in dataclasses.fields(Manifest)}
        fields = {k: v for k, v in raw.items() if k in known}
        fields["chunker"] = ChunkerSettings(**raw["chunker"])
        fields["warnings"] = tuple(raw.get("warnings", ()))
        fields["segments"] = tuple(SegmentRef(**segment) for segment in raw.get("segments", ()))
        if raw.get("ann") is not None:
            fields["ann"] = AnnParams(**raw["ann"])
        return Manifest(**fields)
    except (ValueError, KeyError, TypeError) as exc:
        raise IndexFormatError(f"{where}: unreadable manifest: {exc}") from exc


def ann_params(manifest: Manifest) -> AnnParams:
    """The manifest's index and search parameters; for an index older than them, what its
    factory string says, searched as it then was (16 lists of an inverted file)."""
    if manifest.ann is not None:
        return manifest.ann
    nprobe = 16 if manifest.faiss_factory.startswith("IVF") else 0
    return AnnParams(manifest.faiss_factory, nprobe=nprobe, requested=manifest.faiss_factory)


def segment_to_json(segment: SegmentRef, table_sha256: dict[str, str], n_rows: dict[str, int]) -> str:
    """segment.json: what a segment holds, for fsck and for a merge (written once, with the segment)."""
    return json.dumps({"format_version": FORMAT_VERSION, **dataclasses.asdict(segment), "table_sha256": table_sha256,
                       "n_rows": n_rows}, indent=2, sort_keys=True) + "\n"


def read_manifest(generation_dir: Path) -> Manifest:
    """The manifest of the generation in ``generation_dir``, refused when absent or of an unknown format."""
    path = generation_dir / MANIFEST
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise IndexFormatError(f"{generation_dir}: generation has no manifest") from None
    return manifest_from_json(text, str(path))
