"""Subcommands that show citations to a reader: render (one HTML file), serve (the viewer)."""

from __future__ import annotations

import argparse
import ipaddress

from index.cli.arguments import cache_bytes, index_argument, open_index, records_argument, zoom_option
from index.cli.registry import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, command, read_usable_records


@command("render", "Render citation records as one self-contained HTML page: click a marker, see the highlight.",
         "spanindex render build/sample-index records.jsonl -o report.html")
def _render(p: argparse.ArgumentParser) -> None:
    index_argument(p)
    records_argument(p)
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    zoom_option(p)
    p.add_argument("--source-base", help="URL where the original files are published (links become URL/doc_id); "
                                         "default: file: links to the index's stored copies")
    p.add_argument("--title", default="", help="page title (default: the answer ids)")
    p.set_defaults(run=run_render)


def run_render(args) -> int:
    from index.viewer.report import write_report

    records, bad_lines = read_usable_records(args.records)
    if records is None:
        return EXIT_USAGE
    output = write_report(open_index(args), records, args.output, zoom=args.zoom,
                          source_base=args.source_base, title=args.title)
    citations = sum(len(r.citations) for r in records)
    size = output.stat().st_size
    print(f"{len(records)} claims, {citations} citations -> {output} ({size / 1024:.0f} KiB)")
    return EXIT_FAILURES if bad_lines else EXIT_OK


@command("serve", "Serve the viewer: search, verify answers, inspect chunks, and a JSON API.",
         "spanindex serve build/sample-index --port 8000")
def _serve(p: argparse.ArgumentParser) -> None:
    index_argument(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    zoom_option(p)
    p.set_defaults(run=run_serve)


def run_serve(args) -> int:
    import uvicorn

    from index.viewer.server.app import LOOPBACK_HOSTS, create_app

    # Bound to loopback, only loopback Host headers are answered (no DNS rebinding);
    # bound elsewhere on purpose, the operator decides who may reach it.
    allowed = LOOPBACK_HOSTS if _is_loopback(args.host) else ["*"]
    app = create_app(args.index, zoom=args.zoom, allowed_hosts=allowed, embedder=args.embedder,
                     cache_bytes=cache_bytes(args))
    print(f"spanindex viewer on http://{args.host}:{args.port}/ (index {args.index}); Ctrl-C stops it")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return EXIT_OK


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
