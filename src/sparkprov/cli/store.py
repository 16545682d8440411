"""The store's own commands, without Spark: ``captures`` (with ``--sizes``: bytes by
part), ``check`` (is the store whole: exit status 1 when not), ``gc`` (orphans and, by
policy, old versions), ``rm NAME[@VERSION]`` and ``push NAME[@VERSION] --to STORE``.

>>> import argparse
>>> sub = argparse.ArgumentParser().add_subparsers(dest="command")
>>> add_parser(sub)
>>> sub.choices["gc"].parse_args(["--keep-versions", "2", "--dry-run"]).keep_versions
2
"""

from __future__ import annotations

import argparse
import json
import sys

_STORE = {"default": None, "help": "store directory (default $SPARKPROV_STORE or ./.sparkprov)"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``captures``, ``check``, ``gc``, ``rm`` and ``push`` commands."""
    caps = sub.add_parser("captures", help="list the captures in a store")
    caps.add_argument("--store", **_STORE)
    caps.add_argument("--all-versions", action="store_true", help="every version, not only the newest")
    caps.add_argument(
        "--sizes", action="store_true", help="bytes by part (output, lineage, witnesses...) and the store's total"
    )
    caps.add_argument("--json", action="store_true", help="print JSON")

    check = sub.add_parser("check", help="check that a store is whole (exit status 1 when not); list its orphans")
    check.add_argument("--store", **_STORE)
    check.add_argument("--deep", action="store_true", help="read every row group of every Parquet file too")
    check.add_argument("--json", action="store_true", help="print JSON")

    gc = sub.add_parser("gc", help="remove what killed captures left and, by policy, old versions")
    gc.add_argument("--store", **_STORE)
    gc.add_argument("--keep-versions", type=int, help="keep the newest N versions of each name (N >= 1)")
    gc.add_argument("--older-than", help="remove versions made longer ago than this (30d, 12h); never a name's newest")
    gc.add_argument(
        "--grace",
        default="1h",
        help="leave unclaimed directories and temporary files younger than this (default 1h; never less "
        "than a minute); what a live process is writing is always left",
    )
    gc.add_argument("--force", action="store_true", help="remove versions other captures or workflows read too")
    gc.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    gc.add_argument("--json", action="store_true", help="print JSON")

    rm = sub.add_parser("rm", help="remove a capture (every version) or one version (NAME@VERSION)")
    rm.add_argument("capture", help="NAME or NAME@VERSION")
    rm.add_argument("--store", **_STORE)
    rm.add_argument("--force", action="store_true", help="remove it even if other captures or workflows read it")
    rm.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    rm.add_argument("--json", action="store_true", help="print JSON")

    push = sub.add_parser(
        "push", help="copy a capture to another store (s3://bucket/prefix too) and commit it there as a new version"
    )
    push.add_argument("capture", help="NAME (its newest version) or NAME@VERSION")
    push.add_argument("--to", required=True, help="the store to push to: a directory or s3://bucket/prefix")
    push.add_argument("--as", dest="as_name", help="the name it takes there (default: its own)")
    push.add_argument("--store", **_STORE)
    push.add_argument("--json", action="store_true", help="print JSON")


def main(args: argparse.Namespace, store) -> int:
    """Run one of the store's commands on ``store`` (a ``Store``)."""
    if args.command == "captures":
        return _captures(args, store)
    if args.command == "check":
        return _check(args, store)
    if args.command == "push":
        return _push(args, store)
    from ..store.collect import collect_garbage, parse_age, remove

    if args.command == "rm":
        garbage = remove(store, args.capture, force=args.force, dry_run=args.dry_run)
    else:
        garbage = collect_garbage(
            store,
            keep_versions=args.keep_versions,
            older_than=None if args.older_than is None else parse_age(args.older_than),
            dry_run=args.dry_run,
            force=args.force,
            grace=parse_age(args.grace),
        )
    print(json.dumps(garbage.to_json(), indent=1) if args.json else garbage.to_text())
    return 0


def _push(args: argparse.Namespace, store) -> int:
    from ..store.object_store import open_store
    from ..store.publish import push

    target = open_store(args.to)
    pushed = push(store, args.capture, target, args.as_name)
    if args.json:
        print(json.dumps({"name": pushed.name, "version": pushed.version, "store": target.location}))
    else:
        print(f"pushed {args.capture} to {target.location} as {pushed.name}@{pushed.version}")
    return 0


def _captures(args: argparse.Namespace, store) -> int:
    from ..store.listing import describe, human_bytes, table, totals

    rows = []
    for name in store.names():
        versions = store.versions(name)
        for version in versions if args.all_versions else versions[-1:]:
            rows.append(describe(store, name, version, sizes=args.sizes))
    summary = totals(store) if args.sizes and not store.remote else None  # orphans need a local listing
    if args.json:
        print(json.dumps({"captures": rows, "store": summary} if args.sizes else rows, indent=1))
        return 0
    print(table(rows, sizes=args.sizes) if rows else f"no captures in {store.location}")
    if summary:
        print(
            f"\nstore {store.root}: {human_bytes(summary['bytes'])} in all, {human_bytes(summary['captures'])} "
            f"in captures' data, {human_bytes(summary['orphans'])} in {summary['orphan_count']} orphan(s)"
            + (" (`sparkprov gc` removes them)" if summary["orphan_count"] else "")
        )
    return 0


def _check(args: argparse.Namespace, store) -> int:
    from ..store.check import check_store

    def progress(done: int, total: int, label: str) -> None:
        print(f"\rchecked {done}/{total} captures ({label})\x1b[K", end="", file=sys.stderr, flush=True)

    report = check_store(store, deep=args.deep, progress=progress if sys.stderr.isatty() else None)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(json.dumps(report.to_json(), indent=1) if args.json else report.to_text())
    return 0 if report.ok else 1
