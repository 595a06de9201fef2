"""store/lookup/regime_policy.py without a database: the document's shape, the rules an op gets,
the substitution, the check against a version (its vocabulary given by hand)."""

from __future__ import annotations

import pytest
from profstore.lookup.regime_policy import Equivalence, RegimePolicy, vocabulary_of

pytestmark = pytest.mark.no_database

SYM = "tensor_cast.dynamic_quantize_symmetric.default"
SCALE = {"scale_mode": {"per_tensor": "per_token"}}
REGIME = {"kernel": "DynamicQuant", "activation_dtype": "DT_FLOAT16", "output_count": 2,
          "scale_mode": "per_tensor", "block_size": None}


@pytest.mark.parametrize(("document", "message"), [
    ([], "regime_policy: must be an object"),
    ({"op": {}}, "unknown key 'op'"),
    ({}, "states no equivalence"),
    ({"ops": {SYM: {}}}, f"regime_policy.ops['{SYM}']: must map regime fields"),
    ({"ops": {SYM: {"scale_mode": "per_token"}}}, "['scale_mode']: must map target values"),
    ({"ops": {SYM: {"scale_mode": {"per_tensor": ["per_token"]}}}}, "a single value"),
    ({"ops": {SYM: {"scale_mode": {"per_token": "per_token"}}}}, "equivalent to itself"),
    ({"kernels": []}, "regime_policy.kernels: must be an object"),
])
def test_a_malformed_document_is_refused_naming_the_entry(document, message):
    with pytest.raises(ValueError) as raised:
        RegimePolicy.from_json(document)
    assert message in str(raised.value)


def test_the_stated_value_replaces_the_targets_and_is_reported():
    policy = RegimePolicy.from_json({"ops": {f"torch.ops.{SYM}": SCALE}})
    regime, used = policy.apply(SYM, "DynamicQuant", REGIME)
    assert regime == {**REGIME, "scale_mode": "per_token"}
    assert used == [Equivalence("scale_mode", "per_tensor", "per_token")]
    assert used[0].to_json() == {"field": "scale_mode", "target": "per_tensor",
                                 "used": "per_token"}


def test_nothing_is_substituted_unless_stated():
    policy = RegimePolicy.from_json({"ops": {SYM: SCALE}})
    assert policy.apply("tensor_cast.dynamic_quantize_asymmetric.default", "DynamicQuant",
                        REGIME) is None
    assert policy.apply(SYM, "DynamicQuant", {**REGIME, "scale_mode": "per_channel"}) is None


def test_non_text_values_are_matched_by_their_json_spelling():
    policy = RegimePolicy.from_json({"kernels": {"DynamicQuant": {"output_count": {"2": 3},
                                                                  "block_size": {"null": 32}}}})
    regime, used = policy.apply(SYM, "DynamicQuant", REGIME)
    assert (regime["output_count"], regime["block_size"]) == (3, 32)
    assert [(u.field, u.target, u.used) for u in used] == [("output_count", 2, 3),
                                                           ("block_size", None, 32)]


def test_an_ops_rule_wins_over_its_kernels():
    policy = RegimePolicy.from_json({
        "kernels": {"DynamicQuant": {"scale_mode": {"per_tensor": "per_channel"}}},
        "ops": {SYM: SCALE}})
    assert policy.rules(SYM, "DynamicQuant") == {"scale_mode": {"per_tensor": "per_token"}}
    assert policy.rules("other.op", "DynamicQuant") == {
        "scale_mode": {"per_tensor": "per_channel"}}


def test_equal_documents_are_one_cache_key():
    a = RegimePolicy.from_json({"ops": {SYM: SCALE}})
    b = RegimePolicy.from_json({"ops": {f"torch.ops.{SYM}": dict(SCALE)}})
    assert a == b and hash(a) == hash(b)
    assert a != RegimePolicy.from_json({"ops": {SYM: {"scale_mode": {"per_tensor":
                                                                     "per_channel"}}}})


KEYS = ['{"kernel":"DynamicQuant","scale_mode":"per_token","output_count":2}',
        '{"kernel":"DynamicQuant","scale_mode":"per_token;per_token","output_count":3}']


def _check(document: dict) -> None:
    vocabulary = vocabulary_of(KEYS)
    RegimePolicy.from_json(document).check({SYM: ("DynamicQuant", "AscendQuantV2")},
                                           lambda kernel: vocabulary if kernel ==
                                           "DynamicQuant" else {}, "v0.18")


def test_the_vocabulary_holds_each_fields_values_as_json():
    assert vocabulary_of(KEYS)["output_count"] == {"2", "3"}
    assert vocabulary_of(KEYS)["scale_mode"] == {'"per_token"', '"per_token;per_token"'}


@pytest.mark.parametrize(("document", "message"), [
    ({"ops": {"aten.nope.default": SCALE}}, "unknown op 'aten.nope.default' (not in the v0.18"),
    ({"kernels": {"Nope": SCALE}}, "unknown kernel 'Nope'"),
    ({"ops": {SYM: {"scale_mod": {"per_tensor": "per_token"}}}},
     "unknown regime field 'scale_mod'"),
    ({"ops": {SYM: {"scale_mode": {"per_tensor": "per_tokn"}}}},
     "unknown value 'per_tokn' (measured: per_token, per_token;per_token)"),
    ({"ops": {SYM: {"output_count": {"2": "3"}}}}, "unknown value '3'"),
])
def test_the_check_names_what_the_version_does_not_know(document, message):
    with pytest.raises(ValueError) as raised:
        _check(document)
    assert message in str(raised.value)


def test_a_known_policy_passes_the_check():
    document = {"ops": {SYM: SCALE}, "kernels": {"DynamicQuant": {"output_count": {"4": 3}}}}
    _check(document)  # no error; what it states is applied above
    assert RegimePolicy.from_json(document).apply(SYM, "DynamicQuant", REGIME)[0][
        "scale_mode"] == "per_token"
