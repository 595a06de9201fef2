"""Upstream's ranking of a throughput search, read through upstream's own objects.

While a search runs, ``OptimizerSummary.report_final_result`` (the call that prints the
result table) is wrapped to keep the summary's ranked rows: one best row per parallel
configuration within the latency limits, best throughput first
(docs/adr/0008-decision-draws.md). ``matches`` ties a row's parallel label to the models
profstore recorded (``ledger.config_of``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from profstore.tensorcast.upstream import UpstreamError


@dataclass(frozen=True)
class Ranked:
    """One row of upstream's ranked result table."""

    parallel: str
    throughput: float
    batch_size: int


@contextlib.contextmanager
def ranked_tables(strict: bool = True) -> Iterator[list[list[Ranked]]]:
    """The ranked rows of every result table upstream reports while the block runs.
    ``strict``: a search whose result is not the aggregated ranked table fails
    (``UpstreamError``); otherwise such a table is not kept."""
    from serving_cast.service.optimizer_summary import OptimizerSummary

    original = OptimizerSummary.__dict__["report_final_result"]
    found: list[list[Ranked]] = []

    def report_final_result(self: Any, args: Any, silent: bool = False) -> Any:
        try:
            found.append(ranked_rows(self, args))
        except UpstreamError:
            if strict:
                raise
        return original(self, args, silent)

    OptimizerSummary.report_final_result = report_final_result
    try:
        yield found
    finally:
        OptimizerSummary.report_final_result = original


def ranked_rows(summary: Any, args: Any) -> list[Ranked]:
    """Upstream's ranking of one summary: the best row per parallel configuration within
    the latency limits, best throughput first (empty when nothing passed)."""
    if summary.get_summary_df() is None or summary.get_summary_df().empty:
        return []
    if summary._is_pd_ratio_mode() or isinstance(args.input_length, str):
        raise UpstreamError("--draws needs the aggregated search's ranked table")
    table = summary._prepare_agg_disagg_results()
    return [Ranked(str(row["parallel"]), float(row["token/s"]), int(row["batch_size"]))
            for _, row in table.iterrows()]


def matches(label: str, config: dict[str, int]) -> bool:
    """Whether upstream's parallel label (``TP=4 | PP=1 | DP=2 …``) names this model's
    configuration: every size the label states agrees (no MTP stated: none)."""
    stated = dict(part.strip().split("=", 1) for part in label.split("|") if "=" in part)
    if not stated:
        return False
    if "MTP" not in stated and config.get("MTP", 0):
        return False
    return all(str(config[key]) == value for key, value in stated.items() if key in config)
