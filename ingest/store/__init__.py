"""The index on disk, as a build writes it: rows and vectors in, a published generation out.

``write`` streams a generation's Parquet tables, vectors and manifest; ``faiss_index`` and
``lexical`` build its FAISS and BM25 indexes (the reader imports their search parameters and
the lexical analyser from here); ``spill`` carries large tables from workers through disk;
``previous`` and ``reuse`` read the live generation for what a build carries over; ``lock``
allows one build per index; ``publish`` makes files durable and a generation live;
``retention`` retires old generations and unreferenced files.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "faiss_index": ["apply_search_params", "build_ann", "check_factory", "id_changes", "plan_index",
                    "update_ann", "update_reason"],
    "lexical": ["B", "K1", "METHOD", "TOKENIZER_VERSION", "lexical_table", "lexical_texts", "lexical_tokens"],
    "lock": ["BuildLock"],
    "publish": ["fsync_dir", "publish", "write_failure", "write_once"],
    "retention": ["collect_garbage", "retire_generations"],
    "reuse": ["LiveGeneration", "carry_over"],
    "spill": ["SPILL_FOLDER", "read_spill", "spill_path", "write_spill"],
    "write": ["GenerationWriter", "ROW_GROUP_ROWS", "system_memory_pool"],
})
