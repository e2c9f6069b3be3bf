"""The tables a build writes dictionary-encode only the strings that repeat from row to row
(``ingest.store.write.DICTIONARY_COLUMNS``); an offset or box column written with a dictionary costs
the build about four times its row group in memory, for a file no smaller."""

from __future__ import annotations

import pyarrow.parquet as pq

from ingest.store.write import DICTIONARY_COLUMNS, ROW_GROUP_ROWS
from schemas.layout import TABLE_FILES, IndexPaths, read_current
from schemas.manifest import read_manifest


def test_only_repeating_string_columns_are_dictionary_encoded(sample_index_test_model):
    paths = IndexPaths(sample_index_test_model)
    [segment] = read_manifest(paths.generation(read_current(paths))).segments
    generation = paths.segment(segment.name)
    checked = 0
    for table_name in ROW_GROUP_ROWS:
        meta = pq.ParquetFile(generation / TABLE_FILES[table_name]).metadata
        for group in range(meta.num_row_groups):
            for column in range(meta.num_columns):
                chunk = meta.row_group(group).column(column)
                name = chunk.path_in_schema.split(".")[0]
                dictionary = any("DICTIONARY" in encoding for encoding in chunk.encodings)
                assert dictionary == (name in DICTIONARY_COLUMNS), (table_name, chunk.path_in_schema, chunk.encodings)
                checked += 1
    assert checked > 0
