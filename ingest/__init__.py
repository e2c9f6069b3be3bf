"""Turning a corpus into an index, one package per stage; ``ls ingest`` reads as the pipeline.

- ``corpus/``: the folder, or the bucket's prefix, as a build sees it (which files, under which doc_id,
  read safely).
- ``formats/``: a file's bytes -> ``ParsedDocument`` (document text, its map back to the file,
  glyph boxes, hidden runs): one package per source format (``pdf/``, ``html/``, ``text.py``).
- ``text/``: document text -> chunks (normalised views with their maps, hidden runs, the chunker).
- ``embed/``: chunk texts -> unit vectors (the model, the torch and ONNX backends).
- ``store/``: rows and vectors -> a published generation (Parquet writers, FAISS, BM25, spill
  files, the lock, publishing, retention, what a build reuses from the live generation).
- ``run/``: where the per-file work runs (a local process pool, or Ray tasks and actors).
- ``build.py``: composes them into ``build_index(corpus, index_dir, settings)``.

Imports point down that list: formats and text import no other stage, embed none but schemas,
store uses formats, text and embed, run uses store, and build uses them all
(``tests/test_layering.py``). Each stage package exports, in its ``__init__``, the names the
other stages and ``index/`` use; its modules are private to it.
"""
