"""Where a build's per-file work runs: files in, a parsed and chunked ``DocResult`` each out.

``worker`` is the work for one file (read, hash, parse, chunk, store its text), the same code
everywhere; ``pool`` runs it in local processes (``executors.LocalExecutor``), ``ray_driver``
and ``ray_nodes`` as Ray tasks, with embedding in Ray actors (``RayExecutor``). An executor
decides only where that code runs, never what it gives.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "executors": ["Executor", "LocalExecutor"],
    "ray_driver": ["RayExecutor", "RaySettings"],
    "segment_sink": ["SegmentSink", "SegmentTarget"],
    "worker": ["DocResult", "EMBED_TEXT", "FileJob", "WorkerSettings", "mtimes_trusted_before", "stat_unchanged"],
})
