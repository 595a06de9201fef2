"""What every process of a TensorCast run needs to build its data source.

The parent validates the settings and hands them to its workers through one environment
variable (a worker started with ``spawn`` inherits the environment, not the parent's
objects): ``PROFSTORE_TENSORCAST``, a JSON object of the fields below.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from profstore.tensorcast.draw_spec import DrawSpec

ENVIRONMENT = "PROFSTORE_TENSORCAST"


@dataclass(frozen=True)
class Settings:
    """``db``: a SQLite path or URL; ``version``: its alias or directory; ``context`` and
    ``format_policy`` as ``ProfstoreDataSource`` takes them; ``run_dir``: where each
    process writes its statistics (None: none are kept); ``compare_dir``: a version
    directory of CSVs whose upstream data source is asked beside profstore (None: no
    comparison); ``regime_policy``: stated regime equivalences as ``ProfstoreDataSource``
    takes them (JSON); ``draw``: the draw this run simulates (None: the search as
    measured); ``calibration``: per usable op class, the analytic check's calibration
    that prices its fallbacks (``--calibrated-fallbacks``; None: the analytic answer)."""

    db: str
    version: str
    context: dict[str, Any] = field(default_factory=dict)
    format_policy: dict[str, Any] | None = None
    run_dir: str | None = None
    compare_dir: str | None = None
    regime_policy: dict[str, Any] | None = None
    draw: DrawSpec | None = None
    calibration: dict[str, dict[str, float]] | None = None

    def to_environment(self) -> None:
        os.environ[ENVIRONMENT] = json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_environment(cls) -> Settings | None:
        text = os.environ.get(ENVIRONMENT)
        if not text:
            return None
        data = json.loads(text)
        data["draw"] = DrawSpec.from_json(data.get("draw"))
        return cls(**data)
