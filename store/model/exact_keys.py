"""Base exact-lookup keys: the input signature of a kernel call, row side and target side.

A key spells the first ``n`` present input tensors as ``shape:dtype`` (FRACTAL_NZ
already restored). A row answers a raw key (``x``) for every prefix ``n``, so an op
mapping's ``tc_input_count`` picks its prefix at lookup time, and a batch-stripped key
(``b``, leading 1 removed from each shape) so ``[1, 4, 7168]`` and ``[4, 7168]`` meet.

The lookup is two-phase: rows whose raw signature equals the target's, else rows whose
stripped signature equals the target's stripped one (the stripped *class*).
``StrippedKeyPlanner`` saves storage without changing that answer: a row whose shapes
have nothing to strip stores its ``b`` key only when its class also holds a row that
did strip; otherwise its class is exactly the rows with that raw signature, which
``target_keys`` reaches through a third key (the raw spelling of the stripped target).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from profstore.model.csv_row import CsvRow
from profstore.model.dtypes import to_profiler_dtype
from profstore.model.normalizers import normalize_target_inputs
from profstore.model.shapes import Shape, logical_shape, shape_text, strip_leading_batch

if TYPE_CHECKING:
    from profstore.model.leaf import LeafOp
    from profstore.model.mapping import MappingEntry

RAW = "x"
STRIPPED = "b"


def signature_key(kind: str, shapes: Sequence[Shape], dtypes: Sequence[str]) -> str:
    part = 1 if kind == STRIPPED else 0
    body = ";".join(_slot_parts(tuple(s), d)[part] if s is not None else f":{d}"
                    for s, d in zip(shapes, dtypes))
    return f"{kind}{len(shapes)}|{body}"


class PrefixKeys(NamedTuple):
    """The keys of one input prefix of a row; ``strippable`` when stripping changed a shape."""

    raw: str
    stripped: str
    strippable: bool


def prefix_keys(row: CsvRow) -> list[PrefixKeys]:
    """Raw and stripped keys of every input prefix, built in one pass over the slots."""
    found: list[PrefixKeys] = []
    raw_body = stripped_body = ""
    strippable = False
    for n, slot in enumerate(row.present_inputs(), start=1):
        raw, stripped = _slot_parts(slot.shape, slot.dtype)
        strippable = strippable or raw != stripped
        raw_body = f"{raw_body};{raw}" if n > 1 else raw
        stripped_body = f"{stripped_body};{stripped}" if n > 1 else stripped
        found.append(PrefixKeys(f"{RAW}{n}|{raw_body}", f"{STRIPPED}{n}|{stripped_body}",
                                strippable))
    return found


@lru_cache(maxsize=65536)
def _slot_parts(shape: Shape, dtype: str) -> tuple[str, str]:
    """``shape:dtype`` of one tensor, raw and batch-stripped (tensors recur across rows)."""
    return f"{shape_text(shape)}:{dtype}", f"{shape_text(strip_leading_batch(shape))}:{dtype}"


def row_keys(row: CsvRow) -> list[str]:
    """Every key a row answers: each input prefix, raw and batch-stripped."""
    return [key for p in prefix_keys(row) for key in (p.raw, p.stripped)]


_Held = TypeVar("_Held", bound=Hashable)


class StrippedKeyPlanner(Generic[_Held]):
    """Chooses the keys one version's rows store (see the module docstring).

    ``admit`` returns the keys to store for a row, and the stripped keys of earlier
    rows that must now be stored too because this row made their class hold a
    stripped row (each with the ``held`` token the earlier row was admitted with).
    Rows are compared per kernel.
    """

    def __init__(self) -> None:
        self._mixed: set[tuple[str, str]] = set()
        self._held: dict[tuple[str, str], list[_Held]] = {}

    def admit(self, kernel: str, keys: Sequence[PrefixKeys], held: _Held
              ) -> tuple[list[str], list[tuple[str, _Held]]]:
        store: list[str] = []
        released: list[tuple[str, _Held]] = []
        for p in keys:
            store.append(p.raw)
            klass = (kernel, p.stripped)
            if p.strippable:
                store.append(p.stripped)
                if klass not in self._mixed:
                    self._mixed.add(klass)
                    released += [(p.stripped, h) for h in self._held.pop(klass, ())]
            elif klass in self._mixed:
                store.append(p.stripped)
            else:
                self._held.setdefault(klass, []).append(held)
        return store, released


def target_keys(shapes: Sequence[Shape], dtypes: Sequence[str]) -> list[str]:
    """Keys to try for a target, in order: the literal shapes, the stripped class, and —
    when the stripped shapes have nothing left to strip — their raw spelling (the
    class of rows stored without a ``b`` key)."""
    parts = [_slot_parts(tuple(s), d) if s is not None else (f":{d}", f":{d}")
             for s, d in zip(shapes, dtypes)]
    n = len(shapes)
    stripped_body = ";".join([p[1] for p in parts])
    keys = [f"{RAW}{n}|" + ";".join([p[0] for p in parts]), f"{STRIPPED}{n}|{stripped_body}"]
    stripped = [strip_leading_batch(s) for s in shapes]
    if stripped != list(shapes) and all(strip_leading_batch(s) == s for s in stripped):
        keys.append(f"{RAW}{n}|{stripped_body}")  # the stripped shapes' raw spelling
    return keys


def output_key(shape: Shape, dtype: str) -> str:
    """Key of a row's first output (base elementwise lookup by output shape)."""
    return f"o|{shape_text(strip_leading_batch(shape))}:{dtype}"


def row_output_keys(row: CsvRow) -> list[str]:
    outputs = row.present_outputs()
    return [output_key(outputs[0].known_shape, outputs[0].dtype)] if outputs else []


def target_signature(leaf: LeafOp, entry: MappingEntry, kernel: str
                     ) -> tuple[tuple[Shape, ...], tuple[str, ...]]:
    """The target's input shapes and profiler dtypes as the base lookup sees them:
    kernel normaliser applied, first ``tc_input_count`` tensors, FRACTAL_NZ restored,
    float16 read as DT_BF16 (the Phase 1 rule). Generic compute reads its target the same
    way, so the two cannot disagree."""
    count = entry.tc_input_count
    tensors = normalize_target_inputs(kernel, leaf.tensor_inputs())
    if count:
        tensors = tensors[:count]
    return (tuple([logical_shape(t.shape, t.format) for t in tensors]),
            tuple([to_profiler_dtype(t.dtype) for t in tensors]))
