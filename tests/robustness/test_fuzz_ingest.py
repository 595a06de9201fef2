"""Fuzzed version directories through the whole ingest, into the session's backend.

Seeds are real rows of kernels that feed specialised paths (EP Size, runtime sequence
columns, FRACTAL_NZ weights, quantised dtypes), read from the corpus, plus the real
op_mapping.yaml and an HCCL file. Each example replaces the previous one's version in
one database. Whatever the rows hold, the ingest must not raise, and the database must
account for every data line: per file, rows read = the file's non-blank data lines =
samples (or communication samples) + rejected rows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profstore.api import Store
from profstore.ingest.loader import ingest_path
from profstore.model.leaf import LeafOp
from profstore.model.result import Reason
from profstore.storage import schema as t
from profstore.storage.engines import make_engine, upgrade
from sqlalchemy import Engine, func, select

from tests.robustness import FUZZ, csv_files, expected_data_lines, mutated
from tests.support.fuzz import SEEDS as SEED_LEAVES
from tests.support.markers import requires_perfdb
from tests.support.paths import PERFDB
from tests.support.perfdb import DEVICE, V18_DIR, new_database

pytestmark = requires_perfdb

V18 = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend" / V18_DIR
HCCL = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "hccl" / "v8.5" / "hcom_allReduce_.csv"
KERNELS = ("DispatchFFNCombine", "FusedInferAttentionScore", "LightningIndexer",
           "QuantBatchMatmulV3", "MatMulV2", "DynamicQuant", "Add", "KvRmsNormRopeCache",
           "SparseFlashAttention", "RmsNorm")
SEED_ROWS = 3
EXAMPLES = 30
"""Each example is a whole ingest (tens of milliseconds on SQLite, more on PostgreSQL)."""


def real_lines(path: Path, rows: int = SEED_ROWS) -> tuple[str, list[str]]:
    """A real file's header and its first data rows (empty when the corpus is absent)."""
    if not path.is_file():
        return "", []
    header, *lines = path.read_text(encoding="utf-8").splitlines()[: rows + 1]
    return header, lines


SEEDS = {kernel: real_lines(V18 / f"{kernel}.csv") for kernel in KERNELS}
MAPPING = (V18 / "op_mapping.yaml").read_text(encoding="utf-8") if V18.is_dir() else ""
HCCL_SEED = real_lines(HCCL, 6)


def files_strategy() -> st.SearchStrategy[dict[str, bytes]]:
    kernels = {f"{kernel}.csv": csv_files(header, lines, header_steps=0, max_lines=4)
               for kernel, (header, lines) in SEEDS.items()}
    mapping = st.just(MAPPING) | mutated([MAPPING], max_steps=2)
    return st.fixed_dictionaries({
        **kernels,
        "op_mapping.yaml": mapping.map(lambda text: text.encode("utf-8", "surrogatepass")),
        "hccl": csv_files(*HCCL_SEED, header_steps=0, max_lines=6),
    })


def write(root: Path, files: dict[str, bytes]) -> None:
    version = root / DEVICE / "vllm_ascend" / V18_DIR
    hccl = root / DEVICE / "hccl" / "v8.5"
    version.mkdir(parents=True)
    hccl.mkdir(parents=True)
    for name, raw in files.items():
        target = hccl / "hcom_allReduce_.csv" if name == "hccl" else version / name
        target.write_bytes(raw)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    engine = make_engine(new_database(tmp_path_factory.mktemp("fuzz-ingest")))
    upgrade(engine)
    yield engine
    engine.dispose()


def stored_counts(engine: Engine, alias: str) -> dict[str, tuple[int, int, int]]:
    """file -> (rows_read, samples + communication samples, rejected rows) as stored."""
    p, f = t.profile_set.c, t.kernel_file.c
    out = {}
    with engine.connect() as conn:
        profile = conn.execute(select(p.id).where(p.alias == alias)).scalar_one()
        for file_id, name, rows_read in conn.execute(
                select(f.id, f.file_name, f.rows_read).where(f.profile_id == profile)):
            counted = [conn.execute(select(func.count()).select_from(table).where(
                table.c.kernel_file_id == file_id)).scalar_one()
                for table in (t.sample, t.comm_sample, t.rejected_row)]
            out[name] = (rows_read, counted[0] + counted[1], counted[2])
    return out


@settings(FUZZ, max_examples=EXAMPLES)
@given(files=files_strategy())
def test_a_fuzzed_version_ingests_and_accounts_for_every_line(engine, files):
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), files)
        # a fuzzed mapping may be unusable: its CSVs are still what this test accounts for
        summaries = {s.alias: s for s in ingest_path(engine, tmp, allow_missing_mapping=True)}
    for alias, name in (("v0.18", None), ("hccl-v8.5", "hcom_allReduce_.csv")):
        stored = stored_counts(engine, alias)
        for file_name, (rows_read, kept, rejected) in stored.items():
            raw = files["hccl" if name else file_name]
            assert rows_read == len(expected_data_lines(raw)) == kept + rejected, file_name
        if summaries[alias].status == "ingested":
            assert summaries[alias].rows_read == sum(v[0] for v in stored.values())
    with Store.open(engine.url.render_as_string(hide_password=False)) as store:
        for descriptor in SEED_LEAVES:
            result = store.lookup(LeafOp.from_json(descriptor), "v0.18")
            assert result.hit or isinstance(result.reason, Reason)
