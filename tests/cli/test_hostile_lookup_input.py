"""Issue #16 item 9: descriptor input that used to crash the lookup stream or the library
(a 5,000-digit integer, a lone surrogate, deep nesting, an int64-overflowing dimension)
answers ``invalid_descriptor`` naming the field, and the stream goes on."""

from __future__ import annotations

import json

import pytest
from profstore.model.leaf import LeafOp
from profstore.model.tensor_spec import TensorSpec

from tests.support.cli_lookup import brief, lookup_lines, rms

HUGE = "9" * 5000
HOSTILE_LINES = {
    "digits": ('{"id": "digits", "op": "aten.mm.default", "args": [{"shape": [' + HUGE
               + ', 4], "dtype": "bfloat16"}]}', "args[0].shape: dimension of 5000 digits"),
    "surrogate": ('{"id": "surrogate", "op": "aten.mm\\ud800.default"}',
                  "op: '\\ud800' at position 7 is a lone surrogate"),
    "nesting": ('{"id": "nesting", "op": "aten.mm.default", "args": ' + "[" * 500 + "]" * 500
                + "}", "lists nested deeper than 32 levels"),
    "dimension": ('{"id": "dimension", "op": "aten.mm.default", "args": [{"shape": [1'
                  + "0" * 309 + ', 4], "dtype": "bfloat16"}]}',
                  "args[0].shape: dimension of 310 digits is beyond the int64 range"),
    "parse_depth": ("[" * 100_000, "descriptor: nested too deeply to parse"),
}


def test_hostile_lines_answer_invalid_descriptor_and_the_stream_goes_on(capsys, fixture_db):
    lines = [json.dumps(rms(16, id="before"))]
    lines += [text for text, _ in HOSTILE_LINES.values()]
    lines += [json.dumps(rms(16, id="after"))]
    code, answers, err = lookup_lines(capsys, fixture_db, "\n".join(lines) + "\n")
    assert (code, err) == (0, "")
    assert brief(answers[0]) == ("before", 14.0, "MEASURED", None)
    assert brief(answers[-1]) == ("after", 14.0, "MEASURED", None)
    for answer, (name, (_, message)) in zip(answers[1:-1], HOSTILE_LINES.items()):
        assert answer["reason"] == "invalid_descriptor", name
        assert message in answer["details"]["error"], name


@pytest.mark.no_database
@pytest.mark.parametrize("name", list(HOSTILE_LINES))
def test_the_library_raises_value_error_naming_the_field(name):
    text, message = HOSTILE_LINES[name]
    with pytest.raises(ValueError, match=None) as caught:
        LeafOp.from_json(text)
    assert message in str(caught.value)


@pytest.mark.no_database
@pytest.mark.parametrize(("build", "message"), [
    (lambda: TensorSpec((10**309, 4), "bfloat16"), "shape: dimension of 1027 bits"),
    (lambda: TensorSpec((2**40,) * 4, "bfloat16"), "has more than 2^63-1 elements"),
    (lambda: LeafOp("aten.mm.default", args=(2**64,)), "args[0]: value of 65 bits"),
    (lambda: LeafOp("aten.mm.default", kwargs={"k\udc00": 1}), "kwargs: '\\udc00' at position 1"),
    (lambda: LeafOp("aten.mm.default", context={"ep_size": 10**30}), "ep_size: value of 100 bits"),
])
def test_python_values_beyond_the_bounds_are_value_errors(build, message):
    with pytest.raises(ValueError) as caught:
        build()
    assert message in str(caught.value)
