"""``profstore tensorcast --compare``: upstream's own data source asked beside profstore.

For every op the simulation looks up, ``ComparingDataSource`` asks profstore (whose answer
the simulation uses) and upstream's ``InterpolatingDataSource`` over the version's CSV
directory, and appends both answers to ``<run_dir>/compare-<pid>.jsonl``. ``write_table``
folds them, per distinct op, shapes and pair of answers, into a CSV with the rule of
``differences`` that explains each difference (or ``unexplained``).
"""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from profstore.tensorcast.differences import explain
from profstore.tensorcast.metered import MeteredDataSource

COLUMNS = ("op", "shapes", "calls", "profstore_us", "profstore_source", "profstore_reason",
           "upstream_us", "upstream_source", "upstream_reason", "rule")


@dataclass(frozen=True)
class SideAnswer:
    """One data source's answer, in the terms the difference rules read."""

    func: str
    latency_us: float | None
    source: str | None
    reason: str | None
    method: str | None
    zero_cost: bool = False

    @property
    def kind(self) -> str:
        """How this answer prices the op in time by source (``ledger.Kind`` values,
        ``extrapolated``, or ``fallback`` for a miss)."""
        if self.source is None:
            return "fallback"
        return "zero_cost" if self.zero_cost else self.source.lower()


def _answer(func: str, result: Any, source: Any) -> SideAnswer:
    if result is None:
        return SideAnswer(func, None, None, getattr(source, "last_miss_reason", None), None)
    details = getattr(result, "details", {}) or {}
    return SideAnswer(func, float(result.latency_us), result.source.name, None,
                      details.get("method"), bool(details.get("zero_cost", False)))


class ComparingDataSource:
    """Profstore's answer for the simulation; upstream's beside it, recorded."""

    def __init__(self, ours: MeteredDataSource, version_dir: str, user_input: Any,
                 device_profile: Any, run_dir: str | None) -> None:
        from tensor_cast.performance_model.profiling_database import (
            InterpolatingDataSource,
            ProfilingDataSource,
        )

        theirs: Any = ProfilingDataSource(version_dir, device_profile,
                                          parallel_config=user_input.get_parallel_config())
        if not getattr(user_input, "disable_profiling_interpolation", False):
            theirs = InterpolatingDataSource(theirs)
        self.ours, self.theirs = ours, theirs
        self._path = None if run_dir is None else Path(run_dir) / f"compare-{os.getpid()}.jsonl"
        self._handle: TextIO | None = None
        self.last_upstream: SideAnswer | None = None
        """Upstream's answer to the last lookup (time by source of ``--compare``)."""

    def lookup(self, op_invoke_info: Any) -> Any:
        answer = self.ours.lookup(op_invoke_info)
        theirs = self.theirs.lookup(op_invoke_info)
        func = str(op_invoke_info.func).removeprefix("torch.ops.")
        shapes = [list(a.shape) for a in op_invoke_info.args if hasattr(a, "shape")]
        ours_side = _answer(func, answer, self.ours)
        if answer is None and self.ours.last_miss is not None:  # profstore's own code
            ours_side = SideAnswer(func, None, None, self.ours.last_miss.reason, None)
        self.last_upstream = _answer(func, theirs, self.theirs)
        self._write({"op": func, "shapes": shapes, "profstore": asdict(ours_side),
                     "upstream": asdict(self.last_upstream)})
        return answer

    def _write(self, record: dict[str, Any]) -> None:
        if self._path is None:
            return
        if self._handle is None:
            self._handle = open(self._path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._handle.write(json.dumps(record) + "\n")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ours, name)


@dataclass(frozen=True)
class CompareCounts:
    """Distinct ops compared, how many agree, and the differences by rule."""

    distinct: int
    calls: int
    agree: int
    by_rule: dict[str, int]

    def line(self, table: str) -> str:
        rules = ", ".join(f"{k} {v}" for k, v in sorted(self.by_rule.items())) or "none"
        return (f"compare: {self.distinct} distinct op answers ({self.calls} lookups), "
                f"{self.agree} agree, {self.distinct - self.agree} differ ({rules}); "
                f"table: {table}")


def write_table(run_dir: Path, path: str) -> CompareCounts:
    """Fold every process's records into the per-op CSV at ``path``."""
    rows: Counter[str] = Counter()
    for part in sorted(run_dir.glob("compare-*.jsonl")):
        for line in part.read_text(encoding="utf-8").splitlines():
            rows[line] += 1
    table, by_rule = [], Counter[str]()
    for text, calls in rows.items():
        record = json.loads(text)
        ours, theirs = SideAnswer(**record["profstore"]), SideAnswer(**record["upstream"])
        rule = explain(ours, theirs)
        if rule is not None:
            by_rule[rule] += 1
        table.append([record["op"], json.dumps(record["shapes"]), calls, ours.latency_us,
                      ours.source, ours.reason, theirs.latency_us, theirs.source,
                      theirs.reason, rule or "same"])
    table.sort(key=lambda r: (r[-1] == "same", r[0], r[1]))
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(table)
    return CompareCounts(len(table), sum(rows.values()), len(table) - sum(by_rule.values()),
                         dict(by_rule))
