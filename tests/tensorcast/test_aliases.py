"""Upstream's detail-key spellings beside profstore's (store/tensorcast/aliases.py)."""

from __future__ import annotations

from profstore.tensorcast.aliases import with_upstream_aliases

FIA_REGIME = {"kernel": "FusedInferAttentionScore", "layout": "BNSD", "kv_heads": 4}
INTERPOLATED_1D = {
    "method": "linear_1d", "selector": "attention_special", "target_regime": FIA_REGIME,
    "boundary": {"lower": 1000.0, "upper": 2000.0, "min": 1000.0, "max": 2000.0},
    "interpolation_path": [{"axes": ["seq"], "outcome": "interpolated"}],
}


def test_a_1d_interpolation_gets_every_alias():
    out = with_upstream_aliases(INTERPOLATED_1D)
    assert out["exact_fields"] == {**FIA_REGIME, "input_layout": "BNSD_NBSD"}
    assert out["axis_boundary"] == {"seq": {"lower": 1000.0, "upper": 2000.0}}
    assert out["query_mode"] == "attention_special"
    assert out["dtype_scaled"] is False
    assert {k: out[k] for k in INTERPOLATED_1D} == INTERPOLATED_1D


def test_formats_become_a_list_and_byte_ratio_is_dtype_scaled():
    out = with_upstream_aliases({"method": "base_elementwise_byte_ratio", "selector": "generic",
                                 "target_regime": {"formats": "ND;FRACTAL_NZ"}})
    assert out["exact_fields"]["input_formats"] == ["ND", "FRACTAL_NZ"]
    assert out["dtype_scaled"] is True
    assert "query_mode" not in out and "axis_boundary" not in out


def test_an_alias_never_replaces_a_key_profstore_sets():
    details = {**INTERPOLATED_1D, "query_mode": "elementwise", "exact_fields": {"x": 1}}
    out = with_upstream_aliases(details)
    assert (out["query_mode"], out["exact_fields"]) == ("elementwise", {"x": 1})


def test_a_2d_interpolation_has_no_axis_boundary_and_the_input_is_not_changed():
    details = {**INTERPOLATED_1D, "method": "simplex_2d"}
    out = with_upstream_aliases(details)
    assert "axis_boundary" not in out
    assert "exact_fields" not in details


def test_batch_dims_take_upstreams_per_input_spelling_in_exact_fields_only():
    regime = {"kernel": "BatchMatMulV2", "batch_dims": "2,3"}
    out = with_upstream_aliases({"method": "linear_1d", "target_regime": regime})
    assert out["exact_fields"]["batch_dims"] == [[2, 3], [2, 3]]
    assert out["target_regime"]["batch_dims"] == "2,3"
    plain = with_upstream_aliases({"target_regime": {"batch_dims": "none"}})
    assert plain["exact_fields"]["batch_dims"] == "none"
