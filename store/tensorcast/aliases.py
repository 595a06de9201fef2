"""Upstream's spellings of detail keys, added beside profstore's own (issue #15).

TensorCast's ``InterpolatingDataSource`` names some of the evidence differently; tooling
keyed on its names (reports, its own regression suites) finds the same facts under them:

- ``exact_fields``: the exact-match (regime) fields of the target: ``target_regime``, plus
  ``input_layout`` (``BNSD`` -> ``BNSD_NBSD``, upstream's name of the FIA layout) and
  ``input_formats`` (the ``formats`` text as a list) where the regime has them, and a
  matmul's ``batch_dims`` as upstream lists them, once per matrix input (``"2,3"`` ->
  ``[[2, 3], [2, 3]]``; the two inputs of a batched matmul share them). ``exact_fields``
  is upstream's name, so its values take upstream's spelling; ``target_regime`` keeps
  profstore's;
- ``query_mode``: the path selector, when it is a mapping ``query_mode``;
- ``axis_boundary``: for a 1-D interpolation, ``{axis: {"lower": .., "upper": ..}}`` from
  ``boundary`` and the interpolated axis;
- ``dtype_scaled``: whether the latency was scaled by a dtype byte ratio (profstore does
  that only in the Phase 1 base elementwise lookup, ``base_elementwise_byte_ratio``);
- ``candidate_count``: for an elementwise miss where no kernel tried has a point in the
  target regime (every attempt ``regime_mismatch``), 0: upstream's
  ``_interpolate_elementwise_kernel`` counts the points of the candidate groups matching the
  target regime. Other paths count other things under that name (moe_fused: every valid
  row of the kernel), so it is added for this one only;
- ``attempts``: on the moe_fused and scatter_nd_update_mla paths, when every kernel tried
  missed before interpolating (its CSV, its target or its regime), one record per kernel
  as upstream keeps them: ``kernel_type``, ``status`` (upstream's attempt status, table
  ``ATTEMPT_STATUS`` in miss_codes.py) and ``target_regime`` (``exact_fields``);
- in ``exact_fields``, a DispatchFFNCombine regime's ``gmm1_shape`` / ``gmm2_shape`` text
  also as upstream's ``gmm1_weight_shape`` / ``gmm2_weight_shape`` tuples.

An alias never replaces a key profstore already sets. Keys whose upstream meaning differs
from profstore's under the same name (``axes``: upstream a list of names, profstore
``{name: value}``; ``interpolation_path``: upstream a string, profstore the list of groups
tried) are not aliased: one name cannot hold both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profstore.model.result import Reason
from profstore.tensorcast.miss_codes import ATTEMPT_STATUS

BYTE_RATIO_METHOD = "base_elementwise_byte_ratio"
QUERY_MODES = frozenset({"attention_special", "moe_fused", "elementwise", "scatter_nd_update_mla",
                         "attention_lightning_indexer", "attention_sparse_sharedkv"})
UPSTREAM_LAYOUT = {"BNSD": "BNSD_NBSD", "TND": "TND"}


def _exact_fields(regime: Mapping[str, Any]) -> dict[str, Any]:
    fields = dict(regime)
    if regime.get("layout") in UPSTREAM_LAYOUT:
        fields.setdefault("input_layout", UPSTREAM_LAYOUT[regime["layout"]])
    if isinstance(regime.get("formats"), str):
        fields.setdefault("input_formats", regime["formats"].split(";"))
    batch = regime.get("batch_dims")
    if isinstance(batch, str) and batch not in ("", "none"):
        dims = [int(d) for d in batch.split(",")]
        fields["batch_dims"] = [dims, list(dims)]
    for ours, theirs in (("gmm1_shape", "gmm1_weight_shape"), ("gmm2_shape", "gmm2_weight_shape")):
        if isinstance(regime.get(ours), str) and regime[ours]:
            fields.setdefault(theirs, tuple(int(d) for d in regime[ours].split(",")))
    return fields


def _axis_boundary(details: Mapping[str, Any]) -> dict[str, dict[str, float]] | None:
    boundary = details.get("boundary")
    if details.get("method") != "linear_1d" or not isinstance(boundary, Mapping):
        return None
    tried = details.get("interpolation_path") or ()
    used = [step for step in tried if isinstance(step, Mapping)
            and step.get("outcome") == "interpolated"]
    if not used or len(used[-1].get("axes", ())) != 1 or "lower" not in boundary:
        return None
    return {used[-1]["axes"][0]: {"lower": boundary["lower"], "upper": boundary["upper"]}}


def with_upstream_aliases(details: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``details`` with upstream's spellings added where profstore has the fact."""
    out = dict(details)
    if isinstance(details.get("target_regime"), Mapping):
        out.setdefault("exact_fields", _exact_fields(details["target_regime"]))
    if details.get("selector") in QUERY_MODES:
        out.setdefault("query_mode", details["selector"])
    axis_boundary = _axis_boundary(details)
    if axis_boundary is not None:
        out.setdefault("axis_boundary", axis_boundary)
    if "method" in details:
        out.setdefault("dtype_scaled", details["method"] == BYTE_RATIO_METHOD)
    if details.get("selector") == "elementwise" and _regime_unmatched(details):
        out.setdefault("candidate_count", 0)
    attempts = _attempts(details, out.get("exact_fields"))
    if attempts is not None:
        out.setdefault("attempts", attempts)
    return out


def _reason(attempt: Any) -> Reason | None:
    code = attempt.get("reason") if isinstance(attempt, Mapping) else None
    try:
        return Reason(code)
    except ValueError:
        return None


def _attempts(details: Mapping[str, Any], regime: Any) -> list[dict[str, Any]] | None:
    """Upstream's per-kernel attempt records, when every kernel missed before interpolating."""
    statuses = ATTEMPT_STATUS.get(str(details.get("selector")))
    tried = details.get("attempted_kernels") or ()
    if statuses is None or not tried:
        return None
    records = []
    for attempt in tried:
        reason = _reason(attempt)
        status = None if reason is None else statuses.get(reason)
        if status is None:
            return None
        record = {"kernel_type": attempt.get("kernel"), "status": status}
        if reason is Reason.REGIME_MISMATCH and isinstance(regime, Mapping):
            record["target_regime"] = dict(regime)
        records.append(record)
    return records


def _regime_unmatched(details: Mapping[str, Any]) -> bool:
    """Every kernel the path tried found no point in the target regime."""
    tried = details.get("attempted_kernels") or ()
    return bool(tried) and all(isinstance(a, Mapping) and a.get("reason") == "regime_mismatch"
                               for a in tried)
