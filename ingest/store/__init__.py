"""The index on disk, as a build writes it: rows and vectors in, a published generation out.

``write`` streams a generation's Parquet tables, vectors and manifest; ``faiss_index`` and
``lexical`` build its FAISS and BM25 indexes (the reader imports their search parameters and
the lexical analyser from here); ``spill`` carries large tables from workers through disk;
``previous`` and ``reuse`` read the live generation for what a build keeps and reuses;
``segments`` masks and merges segments; ``lock``
allows one build per index; ``publish`` makes files durable and a generation live;
``retention`` retires old generations and unreferenced files; ``bucket`` keeps an index in an
object store as a local copy, brought up to date before and published after; ``ranged`` gives a
reader (and a build's copy) the files of an index in a bucket, fetched as they are read (byte
ranges, a bounded cache).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "bucket": ["BucketState", "IndexBucket", "LocalCopy", "default_cache", "local_copy"],
    "ranged": ["BLOCK", "DEFAULT_CACHE_BYTES", "BucketFiles", "CacheFolder", "CopyFiles"],
    "ann_shards": ["build_vector_index", "expected_template", "write_shard", "write_shards"],
    "faiss_index": ["apply_search_params", "attach_quantizer", "build_ann", "check_factory", "plan_index", "shard_bytes"],
    "lexical": ["ANALYSED_CHUNK_COLUMNS", "B", "K1", "LEXICAL_CHUNK_COLUMNS", "METHOD", "TOKENIZER_VERSION", "bm25_idf", "bm25_weights",
                "chunk_analyses", "lexical_table", "lexical_texts", "lexical_tokens", "query_tokens", "token_forms",
                "write_lexical"],
    "lock": ["BuildLock"],
    "publish": ["fsync_dir", "publish", "write_failure", "write_once"],
    "retention": ["collect_garbage", "remove_unreferenced_segments", "retire_generations", "retired_files", "retirement"],
    "previous": ["PublishedGeneration"],
    "reuse": ["LiveGeneration", "KnownVectors"],
    "segments": ["carried_rows", "masked_document", "masked_refs", "merge_segments", "plan_merge", "write_merged"],
    "spill": ["SPILL_FOLDER", "read_spill", "spill_path", "write_spill"],
    "write": ["SegmentWriter", "ROW_GROUP_ROWS", "deleted_table", "file_sha256", "system_memory_pool", "write_generation"],
})
