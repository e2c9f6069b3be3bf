"""Embedding throughput on a GPU, through the build's own embedder (``make_embedder``).

A GPU machine lent for a few minutes has no package registry and takes at most 64 MiB of files,
so the benchmark comes in two steps:

- ``prepare DIR`` (here): the shared corpus's chunk texts, the packaged model with its weights
  rounded to float16 (45 MB instead of 91; loaded back as float32, so the network and its
  arithmetic are the model's), and this machine's CPU vectors of those texts from the same
  rounded weights, for the cosine;
- ``run DIR`` (there): ``make_embedder(model, device="cuda")`` as ``spanindex build --device cuda``
  makes it, its texts repeated to ``--chunks``, at several batch sizes (256 is the build's), and
  the same on the machine's CPU for comparison. Prints one JSON line.

`python -m benchmarks.gpu_embedding prepare build/gpu-bench`, then on the GPU machine
`python3 -m benchmarks.gpu_embedding run build/gpu-bench`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

_WEIGHTS = "model.safetensors"


def prepare(folder: Path) -> None:
    from safetensors.numpy import load_file, save_file

    from benchmarks.corpus import chunk_texts
    from ingest.embed.backends import make_embedder
    from ingest.embed.model import resolve_model

    folder.mkdir(parents=True, exist_ok=True)
    source = resolve_model().path
    model = folder / "model"
    shutil.copytree(source, model, dirs_exist_ok=True, ignore=shutil.ignore_patterns(_WEIGHTS, "README.md", ".*"))
    weights = load_file(str(source / _WEIGHTS))
    save_file({name: array.astype(np.float16) for name, array in weights.items()}, str(model / "weights-f16.safetensors"))
    _restore_float32(model)
    texts = chunk_texts()
    (folder / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    vectors = _embed_all(make_embedder(resolve_model(model), device="cpu"), texts)
    np.save(folder / "cpu-vectors.npy", vectors.astype(np.float32))
    (model / _WEIGHTS).unlink()  # remade from the float16 file where the benchmark runs
    print(f"{folder}: {len(texts)} texts, model {sum(f.stat().st_size for f in model.rglob('*') if f.is_file()) / 1e6:.1f} MB")


def _restore_float32(model: Path) -> None:
    """The model's weights file, float32 again, from the float16 one."""
    from safetensors.numpy import load_file, save_file

    halves = load_file(str(model / "weights-f16.safetensors"))
    save_file({name: array.astype(np.float32) for name, array in halves.items()}, str(model / _WEIGHTS))


def _embed_all(embedder, texts: list[str]) -> np.ndarray:
    return np.concatenate([embedder.embed(texts[first : first + 256]) for first in range(0, len(texts), 256)])


def _throughput(embedder, texts: list[str], batch: int, device: str) -> float:
    """Chunks per second, fed as a build feeds the embedder (``batch`` texts a call)."""
    import torch

    embedder.batch_size = batch
    embedder.embed(texts[:batch])  # warm: kernels chosen, memory taken
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for first in range(0, len(texts), batch):
        embedder.embed(texts[first : first + batch])
    if device == "cuda":
        torch.cuda.synchronize()
    return len(texts) / (time.perf_counter() - started)


def run(folder: Path, chunks: int, cpu_chunks: int) -> dict:
    import torch

    from ingest.embed.backends import make_embedder
    from ingest.embed.model import resolve_model

    model = folder / "model"
    if not (model / _WEIGHTS).is_file():
        _restore_float32(model)
    texts = json.loads((folder / "texts.json").read_text(encoding="utf-8"))
    many = (texts * (chunks // len(texts) + 1))[:chunks]
    info = resolve_model(model)
    result: dict = {"texts": len(texts), "chunks": chunks, "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                    "cpu_cores": os.cpu_count()}
    gpu = make_embedder(info, device="cuda")
    result["build_batch"] = gpu.batch_size
    reference = np.load(folder / "cpu-vectors.npy")
    vectors = _embed_all(gpu, texts)
    cosine = np.sum(vectors * reference, axis=1)  # both normalised
    result["cosine_to_cpu"] = {"mean": round(float(cosine.mean()), 6), "worst": round(float(cosine.min()), 6)}
    result["gpu_chunks_per_s"] = {str(batch): round(_throughput(gpu, many, batch, "cuda"), 1) for batch in (64, 256, 1024)}
    result["gpu_peak_memory_mb"] = round(torch.cuda.max_memory_allocated() / 1e6, 1)
    del gpu
    cpu = make_embedder(info, device="cpu")
    result["cpu_threads"] = torch.get_num_threads()
    result["cpu_chunks_per_s"] = round(_throughput(cpu, many[:cpu_chunks], cpu.batch_size, "cpu"), 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["prepare", "run"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--chunks", type=int, default=50_000, help="texts embedded on the GPU per batch size")
    parser.add_argument("--cpu-chunks", type=int, default=2_000, help="texts embedded on the CPU")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.step == "prepare":
        prepare(args.folder)
    else:
        print(json.dumps(run(args.folder, args.chunks, args.cpu_chunks)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
