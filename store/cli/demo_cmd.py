"""``profstore demo``: generate the demo profiling data, ingest it, inspect it, look up.

The README's main job: it needs nothing but this repository.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from profstore.api import Store
from profstore.cli.demo_data import DEMO_QUERIES, write_demo_data
from profstore.cli.output import emit
from profstore.ingest.loader import ingest_path
from profstore.model.leaf import LeafOp
from profstore.presentation.text_table import Column
from profstore.storage.engines import make_engine, upgrade

RESULT_COLUMNS = [
    Column("query", "QUERY"), Column("latency_us", "LATENCY_US", True),
    Column("source", "SOURCE"), Column("how", "METHOD / REASON"),
]


def run(args: argparse.Namespace) -> int:
    from profstore.cli.main import main

    folder = Path(args.dir).resolve()
    data, db = folder / "data", folder / "demo.db"
    shutil.rmtree(data, ignore_errors=True)
    for stale in folder.glob("demo.db*"):
        stale.unlink()
    write_demo_data(data)
    print(f"demo data written to {data}")
    engine = make_engine(db)
    upgrade(engine)
    for summary in ingest_path(engine, data):
        print(summary.line())
    engine.dispose()
    for verb in (["versions"], ["kernels", "--version", "v0.18"],
                 ["regimes", "--version", "v0.18"]):
        print(f"\n$ profstore {' '.join(verb)} --db {db}")
        main([*verb, "--db", str(db)])
    print("\nlookups:")
    emit(list(_answers(db)), RESULT_COLUMNS, False)
    print(f"\nnext: profstore explain --db {db} --version v0.18 '<descriptor JSON>'")
    return 0


def _answers(db: Path):
    with Store.open(db) as store:
        for label, descriptor in DEMO_QUERIES:
            result = store.lookup(LeafOp.from_json(descriptor), "v0.18")
            reason = None if result.hit else result.reason
            how = reason.value if reason else result.details.get("method")
            yield {"query": label, "latency_us": result.latency_us,
                   "source": result.source.value if result.source else "miss", "how": how}
