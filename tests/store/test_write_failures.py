"""A build that cannot write its index: the disk fills at any point, the folder turns read-only before
or during the build. Each fails with one clear error, leaves the previous generation serving and
`fsck` clean, gives back the space it took, and the next build with space succeeds.

The disks are real: a small tmpfs mounted for the test (skipped, with the reason, where mounting is
not permitted), and a read-only bind mount laid over the index in the middle of a build.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

import index
import ingest.run.worker
from index.fsck import fsck
from ingest.build import BuildSettings, build_index
from schemas.errors import IndexWriteError

from conftest import spanindex
from doubles import HashingEmbedder

WORDS = "invoice overage plan growth scale starter seats storage egress audit logs retention webhook".split()


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


def _unmount(target: Path) -> None:
    subprocess.run(["umount", "-l", str(target)], capture_output=True)


def _mount_or_skip(*args: str) -> None:
    try:
        _mount(*args)
    except (subprocess.CalledProcessError, OSError) as exc:
        pytest.skip(f"mounting is not permitted here: {getattr(exc, 'stderr', '') or exc}")


@pytest.fixture
def small_disk(tmp_path) -> Path:
    """A 4 MiB tmpfs: an index on it runs out of space."""
    disk = tmp_path / "disk"
    disk.mkdir()
    _mount_or_skip("-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk))
    yield disk
    _unmount(disk)


def _corpus(root: Path) -> Path:
    root.mkdir()
    for i in range(3):
        (root / f"small-{i}.md").write_text(f"# Note {i}\n\nA short note number {i} about invoices and receipts.\n")
    return root


def _big_text(path: Path, seed: int, n_paragraphs: int = 1600) -> None:
    rng = random.Random(seed)
    path.write_text("\n\n".join(" ".join(rng.choice(WORDS) for _ in range(60)).capitalize() + "." for _ in range(n_paragraphs)))


def _build(corpus, idx_dir, **settings):
    return build_index(corpus, idx_dir, BuildSettings(workers=1, **settings), embedder=HashingEmbedder())


def _free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _leave_free(disk: Path, free: int) -> None:
    """Fill the disk with a ballast file until ``free`` bytes are left."""
    ballast = disk / "ballast"
    ballast.unlink(missing_ok=True)
    size = max(0, _free_bytes(disk) - free)
    with open(ballast, "wb") as f:
        f.truncate(0)
        while size > 0:
            step = min(size, 1 << 20)
            try:
                f.write(b"\0" * step)
                f.flush()
            except OSError:
                break
            size -= step


def _assert_previous_serves_and_nothing_is_left(idx_dir: Path, live: str) -> None:
    assert (idx_dir / "CURRENT").read_text().strip() == live
    assert fsck(idx_dir) == []
    assert not [p for p in idx_dir.rglob("*") if ".tmp-" in p.name], "debris of the failed build"
    assert all(g.name <= live for g in (idx_dir / "generations").iterdir()), "an unpublished generation was left"
    idx = index.open(idx_dir, embedder=HashingEmbedder())
    referenced = {d.doc_version.split(":")[1] for d in idx.documents() if d.doc_version}
    for name in sorted(p.name for p in (idx_dir / "generations").iterdir()):
        referenced |= {d.doc_version.split(":")[1] for d in index.open(idx_dir, name).documents() if d.doc_version}
    stored = {p.stem for p in (idx_dir / "texts").glob("*.txt")}
    assert stored <= referenced, "the failed build's texts still take space"
    assert idx.search("invoices and receipts", k=1)


@pytest.mark.hostile("a disk that fills up at any point of a build (tmpfs, free space swept from 0 to 2.5 MiB)",
                     "CLI error: IndexWriteError 'cannot write the index ...: No space left on device; generation N is still live'; "
                     "fsck clean, the failed build's files removed, the next build with space succeeds")
@pytest.mark.parametrize("spill", [False, True], ids=["in-memory", "spilled"])
def test_a_disk_that_fills_at_any_point_leaves_the_previous_generation_serving(small_disk, tmp_path, monkeypatch, spill):
    if spill:  # every table over 50 rows goes through a spill file in the generation (ingest.store.spill)
        monkeypatch.setattr(ingest.run.worker, "SPILL_ROWS", {name: 50 for name in ingest.run.worker.SPILL_ROWS})
    corpus = _corpus(tmp_path / "corpus")
    idx_dir = small_disk / "idx"
    _build(corpus, idx_dir)
    failures, published = [], 0
    for run, free in enumerate([0, 8 << 10, 48 << 10, 160 << 10, 400 << 10, 700 << 10, 1000 << 10, 1500 << 10, 2500 << 10]):
        _big_text(corpus / "big.txt", seed=run, n_paragraphs=800)  # ~400 KB of new text on every run
        live = (idx_dir / "CURRENT").read_text().strip()
        _leave_free(small_disk, free)
        try:
            _build(corpus, idx_dir)
        except IndexWriteError as exc:
            message = str(exc)
            assert "\n" not in message and "No space left on device" in message
            assert message.endswith(f"generation {live} is still live")
            failures.append(message)
            _assert_previous_serves_and_nothing_is_left(idx_dir, live)
        else:
            published += 1
            assert fsck(idx_dir) == []
    (small_disk / "ballast").unlink()
    report = _build(corpus, idx_dir)
    assert report.by_status == {"ok": 4} and fsck(idx_dir) == []
    print(f"\n{len(failures)} builds ran out of space, {published} published; then one with space published:")
    for message in failures:
        print("  ", message.split(": ", 1)[1])
    assert failures and published, "the sweep should cover both sides"


def _read_only_bind(folder: Path) -> None:
    """Lay a read-only view over ``folder``: files open for writing stay writable, new writes fail."""
    _mount("--bind", str(folder), str(folder))
    _mount("-o", "remount,bind,ro", str(folder))


@pytest.mark.hostile("an index folder that turns read-only in the middle of a build",
                     "CLI error: IndexWriteError naming the read-only file system (or the lost permission); "
                     "the previous generation serves, fsck clean; the next build once it is writable succeeds")
def test_an_index_that_turns_read_only_mid_build_fails_cleanly(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    for i in range(6):
        (corpus / f"more-{i}.md").write_text(f"# More {i}\n\nAnother note, number {i}, about storage and egress.\n")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    for i in range(6):
        (corpus / f"more-{i}.md").write_text(f"# More {i}\n\nEdited: note {i} now speaks of audit logs.\n")
    as_root = os.geteuid() == 0
    turned = []

    def turn_read_only(event):
        if event.done == 3 and not turned:
            if as_root:  # root ignores permissions: a read-only mount it is
                try:
                    _read_only_bind(idx_dir)
                except (subprocess.CalledProcessError, OSError) as exc:
                    pytest.skip(f"a read-only bind mount is not permitted here: {getattr(exc, 'stderr', '') or exc}")
            else:
                for folder in (idx_dir, idx_dir / "texts", idx_dir / "sources", idx_dir / "generations"):
                    folder.chmod(0o555)
            turned.append(True)

    try:
        with pytest.raises(IndexWriteError) as failed:
            build_index(corpus, idx_dir, BuildSettings(workers=1), embedder=HashingEmbedder(), progress=turn_read_only)
    finally:
        if as_root:
            _unmount(idx_dir)
        else:
            for folder in (idx_dir, idx_dir / "texts", idx_dir / "sources", idx_dir / "generations"):
                folder.chmod(0o755)
    message = str(failed.value)
    assert "\n" not in message and message.endswith("generation 000001 is still live")
    assert ("Read-only file system" if as_root else "Permission denied") in message
    assert (idx_dir / "CURRENT").read_text().strip() == "000001" and fsck(idx_dir) == []
    report = _build(corpus, idx_dir)  # writable again: it cleans the debris and publishes
    assert report.generation == "000002" and report.changed == 6 and fsck(idx_dir) == []
    assert not [p for p in idx_dir.rglob("*") if ".tmp-" in p.name]
    print(f"\nread-only mid-build: {message}")


@pytest.mark.spawns
@pytest.mark.hostile("`spanindex build` onto a full disk (in a worker process and in the build process), "
                     "then onto a read-only index folder",
                     "CLI error: one line, exit 5, no traceback; `spanindex search` still answers from the live generation")
def test_build_cli_on_a_full_disk_or_a_read_only_index_says_so_in_one_line(small_disk, tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    idx_dir = small_disk / "idx"
    first = spanindex("build", corpus, "--index", idx_dir, "--quiet", "--workers", "1", test_embedder=True)
    assert first.returncode == 0, first.stderr
    _big_text(corpus / "big.txt", seed=1, n_paragraphs=6000)  # ~3 MB: more than the disk holds
    for workers in ("1", "2"):
        run = spanindex("build", corpus, "--index", idx_dir, "--quiet", "--workers", workers, test_embedder=True)
        assert run.returncode == 5, run.stderr
        assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
        assert run.stderr.startswith(f"spanindex: cannot write the index {idx_dir}: No space left on device")
        assert run.stderr.strip().endswith("generation 000001 is still live")
    assert fsck(idx_dir) == []

    (corpus / "big.txt").unlink()
    (corpus / "small-0.md").write_text("# Note 0\n\nRewritten while the index is read-only.\n")
    _mount("-o", "remount,ro", str(small_disk))
    try:
        read_only = spanindex("build", corpus, "--index", idx_dir, "--quiet", test_embedder=True)
        search = spanindex("search", idx_dir, "invoices and receipts", "-k", "1", test_embedder=True)
    finally:
        _mount("-o", "remount,rw,size=64m", str(small_disk))
    assert read_only.returncode == 5 and "Traceback" not in read_only.stderr
    assert read_only.stderr == f"spanindex: cannot write the index {idx_dir}: Read-only file system (writing LOCK); generation 000001 is still live\n"
    assert search.returncode == 0 and "small-" in search.stdout

    _big_text(corpus / "big.txt", seed=1, n_paragraphs=6000)
    again = spanindex("build", corpus, "--index", idx_dir, "--quiet", "--workers", "2", test_embedder=True)
    assert again.returncode == 0, again.stderr
    assert "generation 000002: 4 documents (ok 4)" in again.stdout and fsck(idx_dir) == []
