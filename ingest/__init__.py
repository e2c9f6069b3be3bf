"""Turning a corpus into an index: one module per stage (parse, chunk, embed, build)."""
