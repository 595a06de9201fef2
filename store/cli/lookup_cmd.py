"""Lookup verbs: ``lookup`` streams JSON lines through ``Store.lookup``; ``explain`` shows a
person the decision path of one descriptor."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from profstore.api import Store
from profstore.cli.common import (
    CliError,
    check_database,
    db_url,
    read_mode,
)
from profstore.cli.output import print_json
from profstore.cli.regime_option import checked_regime_policy
from profstore.lookup.format_resolution import FormatPolicy
from profstore.lookup.regime_policy import RegimePolicy
from profstore.model.leaf import LeafOp
from profstore.model.mapping import MappingError, VersionMapping, load_mapping
from profstore.model.result import Reason
from profstore.model.size_limits import load_json
from profstore.presentation.explain import explain_lines
from profstore.presentation.text_table import to_json


def format_policy(args: argparse.Namespace, store: Store) -> FormatPolicy | None:
    """``--format-policy`` parsed and checked against the version's mapping."""
    text = getattr(args, "format_policy", None)
    if not text:
        return None
    if Path(text).is_file():
        text = Path(text).read_text(encoding="utf-8")
    try:
        policy = FormatPolicy.from_json(json.loads(text))
        profile = store.profile(args.version)
        policy.check_ops(profile.mapping.entries if profile else (), args.version)
    except json.JSONDecodeError as exc:
        raise CliError(f"--format-policy: invalid JSON: {exc}") from None
    except ValueError as exc:
        raise CliError(f"--format-policy: {exc}") from None
    return policy


@contextmanager
def open_store(args: argparse.Namespace) -> Iterator[Store]:
    """A read-only Store for ``args.version``, with the mapping overlay if one is given."""
    url = db_url(args)
    check_database(url, read_mode(args))
    overlay = _overlay(args.mapping_overlay) if args.mapping_overlay else None
    store = Store.open(url, read_only=read_mode(args), mapping_overlay=overlay)
    try:
        if store.profile(args.version) is None:
            known = ", ".join(store.versions()) or "none; run `profstore ingest` first"
            raise CliError(f"unknown version {args.version!r} (ingested: {known})")
        yield store
    finally:
        store.close()


def _overlay(path: str) -> VersionMapping:
    try:
        overlay = load_mapping(path)
    except MappingError as exc:
        raise CliError(f"--mapping-overlay: {exc}") from None
    for problem in overlay.problems:
        print(f"profstore: warning: --mapping-overlay: {problem}", file=sys.stderr)
    return overlay


def lookup(args: argparse.Namespace) -> int:
    interpolation = not args.disable_profiling_interpolation
    with open_store(args) as store, _input(args.input) as lines:
        policy = format_policy(args, store)
        regimes = checked_regime_policy(args, store)
        for line in lines:
            if not line.strip():
                continue
            answer = answer_line(store, line.strip(), args.version, interpolation, policy,
                                 regimes)
            sys.stdout.write(to_json(answer) + "\n")
            sys.stdout.flush()
    return 0


def answer_line(store: Store, line: str, version: str, interpolation: bool,
                policy: FormatPolicy | None = None,
                regimes: RegimePolicy | None = None) -> dict[str, Any]:
    """One output object: the query's id and the result, or an invalid_descriptor line."""
    query_id, parsed = split_id(line)
    try:
        leaf = LeafOp.from_json(parsed)
    except ValueError as exc:
        return {"id": query_id, "latency_us": None, "source": None,
                "reason": Reason.INVALID_DESCRIPTOR.value, "confidence": 0.0,
                "details": {"error": str(exc)}}
    result = store.lookup(leaf, version, interpolation, format_policy=policy,
                          regime_policy=regimes)
    return {"id": query_id, **result.as_dict()}


def split_id(line: str) -> tuple[Any, Any]:
    """``(id, descriptor)``: the object without its ``id``; the raw text when it is not
    JSON (so the descriptor parser reports it), id null then."""
    try:
        data = load_json(line)
    except ValueError:
        return None, line
    if isinstance(data, dict) and "id" in data:
        data = dict(data)
        return data.pop("id"), data
    return None, data


@contextmanager
def _input(name: str) -> Iterator[Iterable[str]]:
    if name == "-":
        yield sys.stdin
        return
    path = Path(name)
    if not path.is_file():
        raise CliError(f"cannot read {name}: no such file")
    with path.open(encoding="utf-8") as handle:
        yield handle


def explain(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.descriptor == "-" else args.descriptor
    _, parsed = split_id(text.strip())
    try:
        leaf = LeafOp.from_json(parsed)
    except ValueError as exc:
        raise CliError(str(exc), code=2) from None
    with open_store(args) as store:
        result = store.lookup(leaf, args.version, not args.disable_profiling_interpolation,
                              format_policy=format_policy(args, store),
                              regime_policy=checked_regime_policy(args, store))
        profile = store.profile(args.version)
        entry = profile.mapping.entry(leaf.op) if profile else None
    if args.json:
        print_json(result.as_dict())
    else:
        print("\n".join(explain_lines(leaf, args.version, entry, result)))
    return 0
