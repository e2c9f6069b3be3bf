"""Subcommands about citations: verify, resolve."""

from __future__ import annotations

import argparse
import json
import sys

from index.cli_registry import EXIT_FAILURES, EXIT_OK, command, print_json


@command("verify", "Check every quote of a model's answer against the chunk it cites, and locate it.",
         "spanindex verify build/sample-index answer.json --policy mark -o records.jsonl")
def _verify(p: argparse.ArgumentParser) -> None:
    p.add_argument("index", help="index folder")
    p.add_argument("answer", help="answer JSON: {answer_id, claims: [{claim_id, text, support: [{chunk_id, quote}]}]}")
    p.add_argument("--policy", choices=["mark", "drop", "refuse"], default="mark",
                   help="mark failed claims (default), drop them, or refuse the whole answer (exit 1)")
    p.add_argument("-o", "--output", help="write the records here instead of standard output")
    p.add_argument("--format", choices=["jsonl", "w3c"], default="jsonl",
                   help="jsonl: one record per claim (default); w3c: one Web Annotation per verified citation")
    p.add_argument("--min-quote-chars", type=int, default=12, help="shorter quotes prove nothing (default 12)")
    p.set_defaults(run=run_verify)


def run_verify(args) -> int:
    import index
    from index.answers import load_answer
    from index.records_io import record_line, w3c_annotation
    from index.verify import verify_answer
    from schemas.citations import Policy

    answer = load_answer(args.answer)
    records, summary = verify_answer(
        index.open(args.index), answer, policy=Policy(args.policy), min_quote_chars=args.min_quote_chars
    )
    if args.format == "w3c":
        lines = [
            json.dumps(w3c_annotation(r, i, c), ensure_ascii=False)
            for r in records
            if not r.dropped
            for i, c in enumerate(r.citations)
            if c.status.verified
        ]
    else:
        lines = [record_line(r) for r in records]
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for line in lines:
            out.write(line + "\n")
    finally:
        if args.output:
            out.close()
    report = sys.stdout if args.output else sys.stderr
    rates = f"unknown_chunk {summary.unknown_chunk_rate:.1%}, quote_not_found {summary.quote_not_found_rate:.1%}"
    statuses = ", ".join(f"{k} {v}" for k, v in summary.by_status.items())
    print(
        f"{summary.claims} claims: {summary.verified} verified, {summary.unverified} unverified, "
        f"{summary.unsupported} unsupported (no support given), {summary.invalid} invalid",
        file=report,
    )
    print(f"{summary.citations} citations: {statuses or 'none'}; {rates}", file=report)
    dropped = [r.claim_id for r in records if r.dropped]
    if dropped:
        print(f"dropped by policy: {', '.join(dropped)}", file=report)
    if summary.refused:
        print("answer refused: at least one claim failed verification", file=report)
        return EXIT_FAILURES
    return EXIT_OK


@command("resolve", "Check one quote against one chunk and print its citation record.",
         'spanindex resolve build/sample-index "web/faq.html#tok:0" "a sentence quoted from it"')
def _resolve(p: argparse.ArgumentParser) -> None:
    p.add_argument("index", help="index folder")
    p.add_argument("chunk_id")
    p.add_argument("quote")
    p.add_argument("--min-quote-chars", type=int, default=12)
    p.set_defaults(run=run_resolve)


def run_resolve(args) -> int:
    import index
    from index.records_io import to_json
    from index.verify import resolve

    citation = resolve(index.open(args.index), args.chunk_id, args.quote, min_quote_chars=args.min_quote_chars)
    print_json(to_json(citation))
    return EXIT_OK if citation.status.verified else EXIT_FAILURES



