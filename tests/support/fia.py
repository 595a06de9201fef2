"""FusedInferAttentionScore fixtures: rows, leaves and a store over them."""

from __future__ import annotations

from typing import Any

from profstore.api import Store
from profstore.model.leaf import LeafOp

from tests.support.perfdb import Row, build_database, mapping_doc, write_version

OP = "tensor_cast.attention.default"



KERNEL = "FusedInferAttentionScore"



SLOTS = 15



MASK, TABLE = 4, 14



DECODE = {(256, 1): 10.0, (1024, 1): 20.0, (4096, 1): 40.0, (256, 3): 30.0, (1024, 3): 40.0}



def runtime(seq: float, batch: int, heads: int = 4, kv: int = 1, sparse: int = 3,
            layout: str = "TND", completeness: str = "runtime_values") -> dict:
    return {"Runtime avg_seq_len": f"{seq:.6f}", "Runtime batch_size": batch,
            "Runtime num_heads": heads, "Runtime num_key_value_heads": kv,
            "Runtime sparse_mode": sparse, "Runtime input_layout": layout,
            "Runtime metadata_completeness": completeness}



def fia_row(q: list[int], key: list[int], latency: float | str, extra: dict,
            table: list[int] | None = None, mask: bool = True) -> Row:
    inputs: list[list[int] | None] = [None] * SLOTS
    inputs[0], inputs[1], inputs[2] = q, key, key
    if mask:
        inputs[MASK] = [2048, 2048]
    if table:
        inputs[TABLE] = table
    dtypes = ["DT_UNDEFINED"] * SLOTS
    dtypes[0] = dtypes[1] = dtypes[2] = "DT_BF16"
    dtypes[MASK], dtypes[TABLE] = "INT8", "INT32"
    formats = ["ND" if s is not None else "NULL" for s in inputs]
    return Row(inputs, dtypes, [q, None], ["DT_BF16", "FLOAT"], latency, formats=formats,
               extra=extra)



def decode_row(seq: int, batch: int, latency: float, heads: int = 4, kv: int = 1) -> Row:
    return fia_row([batch, heads, 128], [512, 128, kv * 128], latency,
                   runtime(seq, batch, heads, kv), table=[batch, 64])



def prefill_row(seq: int, latency: float) -> Row:
    return fia_row([seq, 4, 128], [seq, 1, 128], latency, runtime(seq, 1))



def attention(tokens: int, lens: list[int] | None, heads: int = 4, kv: int = 1,
              dtype: str = "bfloat16", op: str = OP, seq_lens: bool = True) -> LeafOp:
    cache = {"shape": [64, 128, kv, 128], "dtype": dtype}
    lens_arg = None
    if seq_lens:
        lens_arg = {"shape": [len(lens or [1])], "dtype": "int32"}
        if lens is not None:
            lens_arg["values"] = lens
    return LeafOp.from_json({
        "op": op,
        "args": [{"shape": [tokens, heads * 128], "dtype": dtype}, cache, cache, None,
                 {"shape": [len(lens or [1]), 8], "dtype": "int32"}, None, lens_arg, None],
        "outputs": [{"shape": [tokens, heads * 128], "dtype": dtype}],
    })



def decode(seq: int, batch: int = 1, **kw) -> LeafOp:
    return attention(batch, [seq] * batch, **kw)



def fia_rows() -> list[Row]:
    rows = [decode_row(s, b, v) for (s, b), v in DECODE.items()]
    rows += [prefill_row(256, 100.0), prefill_row(1024, 300.0)]
    rows += [decode_row(256, 1, 11.0, heads=8), decode_row(1024, 1, 21.0, heads=8)]
    return rows



def make_db(tmp_path, rows=None, *, sqrt=True, max_dim=None, unique=False,
            entry_extra=None) -> str:
    overrides: dict = {}
    if sqrt:
        overrides["axis_transform"] = "sqrt_seq"
    if max_dim is not None:
        overrides["max_interpolation_dim"] = max_dim
    policies: dict = {"interpolation_policy": {"kernel_overrides": {KERNEL: overrides}}}
    if unique:
        policies["query_selection_policy"] = {
            "kernel_overrides": {KERNEL: {"require_semantic_unique": True}}}
    entry = {"kernel_type": KERNEL, "query_mode": "attention_special", **(entry_extra or {})}
    entries = {OP: entry, "tensor_cast.attention_quant.default": dict(entry)}
    write_version(tmp_path / "data", {KERNEL: fia_rows() if rows is None else rows},
                  mapping_doc(entries, **policies))
    return build_database(tmp_path)


def make_store(tmp_path, rows=None, **options):
    return Store.open(make_db(tmp_path, rows, **options))



def unstated(leaf: LeafOp) -> LeafOp:
    """``leaf`` with every tensor's format unstated (None), as TensorCast hands them."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {**value, "format": None}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    data = leaf.to_json()
    return LeafOp.from_json({**data, "args": strip(data["args"]),
                             "outputs": strip(data["outputs"])})
