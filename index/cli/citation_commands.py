"""Subcommands about citations: verify a model's answer, resolve one quote, check stored records."""

from __future__ import annotations

import argparse
import json
import sys

from index.cli.arguments import (
    answer_limit_options,
    answer_limits,
    index_argument,
    min_quote_chars_option,
    open_index,
    records_argument,
)
from index.cli.registry import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, command, print_json, read_usable_records


@command("verify", "Check every quote of a model's answer against the chunk it cites, and locate it.",
         "spanindex verify build/sample-index answer.json --policy mark -o records.jsonl")
def _verify(p: argparse.ArgumentParser) -> None:
    index_argument(p)
    p.add_argument("answer", help="answer JSON: {answer_id, claims: [{claim_id, text, support: [{chunk_id, quote}]}]}; "
                                  "with --from anthropic, a Messages API response")
    p.add_argument("--from", dest="answer_format", choices=["spanindex", "anthropic"], default="spanindex",
                   help="spanindex: the answer format above (default); anthropic: a Claude Messages API response "
                        "whose text blocks cite search results (search_result_location citations)")
    p.add_argument("--policy", choices=["mark", "drop", "refuse"], default="mark",
                   help="mark failed claims (default), drop them, or refuse the whole answer (exit 1)")
    p.add_argument("-o", "--output", help="write the records here instead of standard output")
    p.add_argument("--format", choices=["jsonl", "w3c"], default="jsonl",
                   help="jsonl: one record per claim (default); w3c: one Web Annotation per verified citation")
    min_quote_chars_option(p)
    answer_limit_options(p)
    p.set_defaults(run=run_verify)


def run_verify(args) -> int:
    from index.citations.verify import verify_answer
    from schemas.answer_json import load_answer
    from schemas.citations import Policy
    from schemas.record_json import record_line, w3c_annotation

    limits = answer_limits(args)
    if args.answer_format == "anthropic":
        from index.citations.anthropic_format import load_message, verify_message

        message = load_message(args.answer, limits)
        records, summary = verify_message(
            open_index(args), message, policy=Policy(args.policy), min_quote_chars=args.min_quote_chars,
            where=args.answer, limits=limits,
        )
    else:
        answer = load_answer(args.answer, limits)
        records, summary = verify_answer(
            open_index(args), answer, policy=Policy(args.policy), min_quote_chars=args.min_quote_chars
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
    index_argument(p)
    p.add_argument("chunk_id")
    p.add_argument("quote")
    min_quote_chars_option(p)
    p.set_defaults(run=run_resolve)


def run_resolve(args) -> int:
    from index.citations.verify import resolve
    from schemas.json_input import lone_surrogate
    from schemas.record_json import to_json

    for name in ("chunk_id", "quote"):
        if lone_surrogate(getattr(args, name)):  # bytes that are not UTF-8 on the command line
            print(f"spanindex: the {name} is not UTF-8 text", file=sys.stderr)
            return EXIT_USAGE
    citation = resolve(open_index(args), args.chunk_id, args.quote, min_quote_chars=args.min_quote_chars)
    print_json(to_json(citation))
    return EXIT_OK if citation.status.verified else EXIT_FAILURES


@command("check", "Sweep stored citation records after a reindex: ok, moved (repaired), changed, gone.",
         "spanindex check build/sample-index records.jsonl -o repaired.jsonl")
def _check(p: argparse.ArgumentParser) -> None:
    index_argument(p)
    records_argument(p)
    p.add_argument("-o", "--output", help="write the checked records, moved ones repaired, here")
    p.add_argument("--strict", action="store_true", help="exit 1 unless every citation is ok or moved")
    p.set_defaults(run=run_check)


def run_check(args) -> int:
    from index.citations.drift import check_records, summarize_drift
    from schemas.record_json import record_line

    records, bad_lines = read_usable_records(args.records)
    if records is None:
        return EXIT_USAGE
    checked = list(check_records(open_index(args), records))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            for record in checked:
                out.write(record_line(record) + "\n")
    summary = summarize_drift(checked)
    counts = ", ".join(f"{k} {v}" for k, v in summary.by_drift.items())
    print(f"{sum(summary.by_drift.values())} citations checked: {counts}")
    if summary.unchecked:
        print(f"{summary.unchecked} citations were never verified and were not checked")
    for record in checked:
        for citation in record.citations:
            if citation.drift is not None and not citation.drift.holds:
                print(f"  {record.claim_id} {citation.chunk_id}: {citation.drift}: {citation.drift_detail}")
    return EXIT_FAILURES if args.strict and (summary.failed or bad_lines) else EXIT_OK
