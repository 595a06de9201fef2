"""model/shapes.py: the profiler's shape cells and the shape arithmetic both sides share."""

from __future__ import annotations

import pytest
from profstore.model.shapes import (
    ShapeParseError,
    leading_product,
    numel,
    parse_list_cell,
    parse_shape_cell,
    parse_shape_text,
    restore_fractal_nz,
    shape_text,
    shapes_text,
    strip_leading_batch,
)

pytestmark = pytest.mark.no_database


def test_shape_cell_keeps_empty_slots_at_their_positions():
    assert parse_shape_cell('"64,7168;;8;()"') == ((64, 7168), None, (8,), ())
    assert parse_shape_cell(";4") == (None, (4,))
    assert parse_shape_cell("4;") == ((4,), None)


def test_shape_cell_tolerates_spaces_and_literal_quotes():
    assert parse_shape_cell(' " 1 , 2 ; 3 " ') == ((1, 2), (3,))
    assert parse_shape_cell('""') == ()
    assert parse_shape_cell("") == ()


@pytest.mark.parametrize(("cell", "message"), [
    ("4,x", "unparsable shape '4,x' in '4,x'"),
    ("4,,8", "unparsable shape '4,,8' in '4,,8'"),
    ("1.5", "unparsable shape '1.5' in '1.5'"),
    ("--5", "unparsable shape '--5' in '--5'"),
    ("+5", "unparsable shape '+5' in '+5'"),
    ("5_0", "unparsable shape '5_0' in '5_0'"),
    ("1,\u00b2", "unparsable shape '1,\u00b2' in '1,\u00b2'"),
    ("\u0665", "unparsable shape '\u0665' in '\u0665'"),
    ("8;1,-2", "negative dimension in shape '1,-2' in '8;1,-2'"),
])
def test_bad_shape_cells_raise_shape_parse_error(cell, message):
    with pytest.raises(ShapeParseError) as caught:
        parse_shape_cell(cell)
    assert str(caught.value) == message


def test_a_dimension_too_long_for_int_is_a_parse_error_with_a_short_message():
    with pytest.raises(ShapeParseError, match="dimension too long") as caught:
        parse_shape_cell("9" * 5000)
    assert len(str(caught.value)) < 300


def test_list_cell_keeps_empty_slots():
    assert parse_list_cell("DT_BF16;;INT8") == ("DT_BF16", "", "INT8")
    assert parse_list_cell(" ND ; FRACTAL_NZ ") == ("ND", "FRACTAL_NZ")
    assert parse_list_cell("") == ()


def test_fractal_nz_restores_the_logical_shape():
    assert restore_fractal_nz((3, 5, 16, 32)) == (96, 80)
    assert restore_fractal_nz((7, 3, 5, 16, 32)) == (7, 96, 80)
    assert restore_fractal_nz((4, 8, 16)) == (4, 8, 16)


def test_strip_leading_batch_drops_one_leading_one_of_rank_two_or_more():
    assert strip_leading_batch((1, 4, 7168)) == (4, 7168)
    assert strip_leading_batch((1, 1, 5)) == (1, 5)
    assert strip_leading_batch((1, 7168)) == (7168,)
    assert strip_leading_batch((1,)) == (1,)
    assert strip_leading_batch(()) == ()
    assert strip_leading_batch((4, 1)) == (4, 1)


def test_shape_text_spells_shapes_as_the_csv_does():
    assert shape_text((64, 7168)) == "64,7168"
    assert shape_text([64, 7168]) == "64,7168"
    assert shape_text(()) == "()"
    assert shape_text(None) == ""
    assert shapes_text([(64, 7168), None, (8,), ()]) == "64,7168;;8;()"


def test_element_counts():
    assert numel((2, 3, 4)) == 24
    assert numel(()) == 1
    assert leading_product((2, 4, 72, 7168)) == 576
    assert leading_product((7168,)) == 1


# --- shape text ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("(2, 4, 7168)", (2, 4, 7168)),
        ("[2,4]", (2, 4)),
        ("()", ()),
        ("[]", ()),
        ("( )", ()),
        ("2,4", (2, 4)),
        ("7168", (7168,)),
        ("(16,)", (16,)),
        ("  (1, 8, 16160)  ", (1, 8, 16160)),
        ("(0, 3)", (0, 3)),
    ],
)
def test_parse_shape_text(text: str, shape: tuple[int, ...]) -> None:
    assert parse_shape_text(text) == shape


@pytest.mark.parametrize(
    "text",
    ["", "   ", "(2, -4)", "(2, 4]", "[2, 4)", "((2))", "(2,,4)", "(2.5)", "(a, b)", "(,)", "2 4"],
)
def test_parse_shape_text_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid shape text"):
        parse_shape_text(text)
