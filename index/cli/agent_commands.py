"""Subcommands that serve the index to other programs: mcp (tools for agents, over stdio)."""

from __future__ import annotations

import argparse

from index.cli.arguments import cache_bytes, index_argument
from index.cli.registry import command


@command("mcp", "Serve the index to an agent as MCP tools (search, verify, resolve) over stdio.",
         "spanindex mcp build/sample-index")
def _mcp(p: argparse.ArgumentParser) -> None:
    index_argument(p)
    p.set_defaults(run=run_mcp)


def run_mcp(args) -> int:
    from index.integrations.mcp_server import make_server

    # stdout is the protocol's channel from here on: nothing else may be printed to it.
    make_server(args.index, embedder=args.embedder, cache_bytes=cache_bytes(args)).run("stdio")
    return 0
