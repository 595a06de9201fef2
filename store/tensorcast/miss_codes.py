"""TensorCast's own miss codes for profstore's misses (issue #28 item 5).

``ProfstoreDataSource(miss_codes="upstream")`` reports ``last_miss_reason`` in the code
TensorCast's own data sources would record for the same miss, so its metrics report labels
profstore's misses with its own labels. profstore's code stays in ``last_result.reason``.

Where the codes come from (all under ``tensor_cast/performance_model/profiling_database/``
of the export, ``../shared/third_party/msmodeling-84fec85``):

- ``profiling_data_source.py``, ``ProfilingDataSource.lookup`` and its CSV queries: the exact
  source's codes. ``unmapped`` (no mapping entry), ``csv_not_found`` (no CSV for the kernel),
  ``shape_mismatch`` (the CSV has no row for the input signature: profstore's
  ``no_exact_match``, and ``interpolation_disabled``, which is that same miss on a source
  without interpolation), ``ep_size_not_configured``.
- ``interpolating_data_source.py``, ``InterpolatingDataSource._interpolate``: the dispatcher.
  ``wrapper_unmapped`` (no mapping entry), ``runtime_attention_leaf_required`` (a
  LightningIndexer leaf without the runtime semantics: profstore's
  ``upstream_leaf_semantics_missing`` on that selector), ``compute_subcategory_unknown``.
- ``interpolating_data_source.py``, ``_interpolate_composite``: ``composite_sub_kernel_failed``
  when a sub-kernel has no latency (profstore's ``partial_composite``).
- ``interpolation_index.py``, ``CandidateGroup.interpolate``: the status of an axis group that
  fails inside a regime, which each path's ``_candidate_failure_reason`` reports:
  ``insufficient_filtered_candidates`` (fewer than two points), ``outside_axis_boundary`` (the
  target beyond the measured range), ``outside_convex_hull`` (``interpolation_math.py``,
  ``griddata_linear_interp``), ``interpolation_dim_disabled`` (the group has more axes than
  ``max_interpolation_dim``), ``grid_structure_rejected`` (``_grid_quality``: too few
  distinct values or degenerate axes). Which group's failure is named follows profstore's
  order (``ACROSS_AXIS_GROUPS``), not upstream's first-failure rule.
- Per path (``PATH_CODES``): what each ``_interpolate_*`` method records when the CSV is
  missing, no candidate group shares the target regime, or no target can be built. A path
  that collects attempts and reports ``_candidate_failure_reason(<default>, diagnostics of
  the last attempt)`` reports its default when that attempt has no diagnostics (a regime,
  target or CSV miss): ``moe_fused_interpolation_failed`` (``_interpolate_moe_fused``),
  ``scatter_nd_update_interpolation_failed`` (``_interpolate_scatter_nd_update``),
  ``compute_scale_interpolation_failed`` (``_interpolate_compute_scale``),
  ``lightning_indexer_interpolation_failed`` / ``sparse_attention_interpolation_failed``
  (``_interpolate_runtime_attention_by_params_one``).
- Paths that wrap every kernel's miss: ``_interpolate_compute_multidim`` (a matmul kernel, or
  ``compute_subcategory: quantized_matmul``) records ``compute_multidim_interpolation_failed``;
  ``_interpolate_elementwise`` records ``elementwise_interpolation_failed`` when more than
  one kernel type was tried.

The path is read from the miss details: ``details["selector"]`` (profstore's dispatch
selector, the mapping's ``query_mode`` / ``compute_subcategory`` / ``composite``) and, for
a plain mapping, the primary kernel tried (``details["attempted_kernels"]``), since upstream
sends ``_INTERPOLATION_MATMUL_KERNELS`` to the multidim path. A profstore reason with no
upstream counterpart (``invalid_descriptor``, ``format_ambiguous``, ``ambiguous_duplicates``,
``required_field_missing``, ``latency_invalid``, ...) keeps its own code.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

from profstore.model.result import Reason

MissCodes = Literal["profstore", "upstream"]
MISS_CODE_STYLES: Final[tuple[str, ...]] = ("profstore", "upstream")

EXACT_CODES: Final[Mapping[Reason, str]] = MappingProxyType({
    Reason.UNMAPPED: "unmapped",
    Reason.CSV_NOT_FOUND: "csv_not_found",
    Reason.NO_EXACT_MATCH: "shape_mismatch",
    Reason.INTERPOLATION_DISABLED: "shape_mismatch",
    Reason.EP_SIZE_NOT_CONFIGURED: "ep_size_not_configured",
})
"""An exact-only source (upstream's ``ProfilingDataSource``, ``interpolation=False``)."""

WRAPPER_CODES: Final[Mapping[Reason, str]] = MappingProxyType({
    Reason.UNMAPPED: "wrapper_unmapped",
    Reason.PARTIAL_COMPOSITE: "composite_sub_kernel_failed",
    Reason.COMPUTE_SUBCATEGORY_UNKNOWN: "compute_subcategory_unknown",
    Reason.EP_SIZE_NOT_CONFIGURED: "ep_size_not_configured",
})
"""The interpolating source, whatever the path."""

CANDIDATE_STATUS: Final[Mapping[Reason, str]] = MappingProxyType({
    Reason.INSUFFICIENT_CANDIDATES: "insufficient_filtered_candidates",
    Reason.OUTSIDE_RANGE: "outside_axis_boundary",
    Reason.OUTSIDE_CONVEX_HULL: "outside_convex_hull",
    Reason.DIMENSION_BLOCKED: "interpolation_dim_disabled",
    Reason.DEGENERATE_CANDIDATES: "grid_structure_rejected",
})
"""A failure inside one regime's candidates (``CandidateGroup.interpolate``)."""


def _path(csv: str, regime: str, target: str | None) -> Mapping[Reason, str]:
    codes = {Reason.CSV_NOT_FOUND: csv, Reason.REGIME_MISMATCH: regime}
    if target is not None:
        codes[Reason.TARGET_UNAVAILABLE] = target
    return MappingProxyType(codes)


PATH_CODES: Final[Mapping[str, Mapping[Reason, str]]] = MappingProxyType({
    # _interpolate_compute / _interpolate_generic_compute_target
    "generic": _path("compute_csv_not_found", "regime_key_unmatched",
                     "compute_target_unavailable"),
    # _interpolate_elementwise_kernel: no matching group is recorded as a shortage; its
    # three target codes (no output, scalar output, bad shapes) are not told apart here
    "elementwise": _path("elementwise_csv_not_found", "insufficient_filtered_candidates",
                         None),
    # _interpolate_moe_fused
    "moe_fused": _path("csv_not_found", "moe_fused_interpolation_failed",
                       "moe_fused_target_unextractable"),
    # _interpolate_scatter_nd_update: every such attempt lacks diagnostics -> the default
    "scatter_nd_update_mla": _path(*["scatter_nd_update_interpolation_failed"] * 3),
    # _interpolate_compute_scale: likewise
    "compute_scale": _path(*["compute_scale_interpolation_failed"] * 3),
    # _interpolate_attention_multidim / _interpolate_attention_target
    "attention_special": _path("attention_index_unavailable", "regime_key_unmatched",
                               "attention_target_unavailable"),
    # _interpolate_runtime_attention_by_params_one (the runtime leaf's path)
    "attention_lightning_indexer": _path("csv_not_found",
                                         "lightning_indexer_interpolation_failed",
                                         "lightning_indexer_target_unextractable"),
    "attention_sparse_sharedkv": _path("csv_not_found", "sparse_attention_interpolation_failed",
                                       "sparse_attention_target_unextractable"),
})
"""Per path: the CSV, regime and target misses."""

LEAF_REQUIRED: Final[Mapping[str, str]] = MappingProxyType({
    "attention_lightning_indexer": "runtime_attention_leaf_required",
})
"""``upstream_leaf_semantics_missing`` per selector (``InterpolatingDataSource._interpolate``)."""

INTERPOLATION_MATMUL_KERNELS: Final[frozenset[str]] = frozenset({
    "MatMulV2", "MatMulV3", "MatMulCommon", "MatMul", "QuantBatchMatmulV3", "BatchMatMulV2",
    "TransposeBatchMatMul", "GroupedMatmul", "GroupedMatmulSwigluQuant", "BatchMatMulNd"})
"""The kernels upstream interpolates on its multidim path (``_INTERPOLATION_MATMUL_KERNELS``
in interpolating_data_source.py, built on profiling_data_source.py's ``_MATMUL_KERNELS``)."""

ATTEMPT_STATUS: Final[Mapping[str, Mapping[Reason, str]]] = MappingProxyType({
    # _interpolate_moe_fused: a target regime no candidate group shares
    "moe_fused": MappingProxyType({Reason.REGIME_MISMATCH: "regime_key_unmatched"}),
    # _interpolate_scatter_nd_update: one record per kernel type tried
    "scatter_nd_update_mla": MappingProxyType({
        Reason.CSV_NOT_FOUND: "csv_not_found",
        Reason.TARGET_UNAVAILABLE: "scatter_target_unextractable",
        Reason.REGIME_MISMATCH: "regime_key_unmatched"}),
})
"""The ``status`` of one entry of upstream's ``details["attempts"]`` on the paths that keep
such records before any candidate is interpolated (a candidate failure's record holds
upstream's own diagnostics, which profstore does not have: no entry)."""

PATH_REASONS: Final[frozenset[Reason]] = frozenset(
    {Reason.CSV_NOT_FOUND, Reason.REGIME_MISMATCH, Reason.TARGET_UNAVAILABLE,
     *CANDIDATE_STATUS})
"""Reasons a path reaches once dispatched: the ones its wrappers re-label."""


def check_style(value: object) -> MissCodes:
    """``value`` if it is a miss-code style, else a ``ValueError`` naming the option."""
    if value == "profstore" or value == "upstream":
        return value
    raise ValueError(f"miss_codes must be one of {', '.join(map(repr, MISS_CODE_STYLES))}; "
                     f"got {value!r}")


def attempted_kernels(details: Mapping[str, Any]) -> list[str]:
    """The kernels a lookup tried, in order (``details["attempted_kernels"]``)."""
    tried = details.get("attempted_kernels") or ()
    return [str(a["kernel"]) for a in tried if isinstance(a, Mapping) and a.get("kernel")]


def upstream_path(details: Mapping[str, Any]) -> str | None:
    """Which upstream interpolation path answers this selector (``"matmul"`` for the
    multidim one); None when the details name no selector."""
    selector = details.get("selector")
    if not isinstance(selector, str):
        return None
    if selector == "quantized_matmul":
        return "matmul"
    if selector == "generic":
        kernels = attempted_kernels(details)
        return "matmul" if kernels and kernels[0] in INTERPOLATION_MATMUL_KERNELS else "generic"
    return selector


def _interpolating_code(reason: Reason, details: Mapping[str, Any]) -> str:
    if reason in WRAPPER_CODES:
        return WRAPPER_CODES[reason]
    path = upstream_path(details)
    if path is None:
        return reason.value
    if reason is Reason.UPSTREAM_LEAF_SEMANTICS_MISSING and path in LEAF_REQUIRED:
        return LEAF_REQUIRED[path]
    if reason not in PATH_REASONS:
        return reason.value
    if path == "matmul":
        return "compute_multidim_interpolation_failed"
    if path == "elementwise" and len(attempted_kernels(details)) > 1:
        return "elementwise_interpolation_failed"
    if reason in CANDIDATE_STATUS:
        return CANDIDATE_STATUS[reason]
    return PATH_CODES.get(path, {}).get(reason, reason.value)


def upstream_miss_code(reason: Reason, details: Mapping[str, Any], interpolation: bool) -> str:
    """TensorCast's code for a profstore miss, or profstore's own where it has none.
    ``interpolation`` says which upstream source this one stands for (exact only, or the
    interpolating wrapper)."""
    if not interpolation:
        return EXACT_CODES.get(reason, reason.value)
    return _interpolating_code(reason, details)
