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
        index.open(args.index, embedder=args.embedder), answer, policy=Policy(args.policy), min_quote_chars=args.min_quote_chars
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

    citation = resolve(index.open(args.index, embedder=args.embedder), args.chunk_id, args.quote, min_quote_chars=args.min_quote_chars)
    print_json(to_json(citation))
    return EXIT_OK if citation.status.verified else EXIT_FAILURES





@command("check", "Sweep stored citation records after a reindex: ok, moved (repaired), changed, gone.",
         "spanindex check build/sample-index records.jsonl -o repaired.jsonl")
def _check(p: argparse.ArgumentParser) -> None:
    p.add_argument("index", help="index folder")
    p.add_argument("records", help="citation records as `spanindex verify` writes them (JSON Lines)")
    p.add_argument("-o", "--output", help="write the checked records, moved ones repaired, here")
    p.add_argument("--strict", action="store_true", help="exit 1 unless every citation is ok or moved")
    p.set_defaults(run=run_check)


def run_check(args) -> int:
    import index
    from index.drift import check_records, summarize_drift
    from index.records_io import read_records, record_line

    parsed = list(read_records(args.records))
    bad_lines = [error for _, record, error in parsed if record is None]
    checked = list(check_records(index.open(args.index, embedder=args.embedder), (r for _, r, _ in parsed if r is not None)))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            for record in checked:
                out.write(record_line(record) + "\n")
    summary = summarize_drift(checked)
    counts = ", ".join(f"{k} {v}" for k, v in summary.by_drift.items())
    print(f"{sum(summary.by_drift.values())} citations checked: {counts}")
    if summary.unchecked:
        print(f"{summary.unchecked} citations were never verified and were not checked")
    for error in bad_lines:
        print(f"skipped {error}", file=sys.stderr)
    for record in checked:
        for citation in record.citations:
            if citation.drift not in ("", "ok", "moved"):
                print(f"  {record.claim_id} {citation.chunk_id}: {citation.drift}: {citation.drift_detail}")
    failed = sum(v for k, v in summary.by_drift.items() if k not in ("ok", "moved")) + len(bad_lines)
    return EXIT_FAILURES if args.strict and failed else EXIT_OK


@command("fsck", "Check the live generation: checksums, counts, ids, every chunk and offset run.",
         "spanindex fsck build/sample-index")
def _fsck(p: argparse.ArgumentParser) -> None:
    p.add_argument("index", help="index folder")
    p.add_argument("--generation", help="check this generation instead of the live one")
    p.set_defaults(run=run_fsck)


def run_fsck(args) -> int:
    from index.fsck import fsck

    faults = fsck(args.index, args.generation)
    for fault in faults:
        print(f"FAULT {fault}")
    if faults:
        print(f"{len(faults)} fault(s)")
        return EXIT_FAILURES
    print("ok")
    return EXIT_OK
