"""``LeafContext``: what a leaf operator does not say itself (DESIGN §3 ``context``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from profstore.model.leaf_fields import field_error, lengths_of, object_error, positive_int

_PHASES = ("prefill", "decode", "mixed")


@dataclass(frozen=True)
class LeafContext:
    """What the op itself does not say: parallelism, phase, request grouping, topology."""

    ep_size: int | None = None
    tp_size: int | None = None
    phase: str | None = None
    num_requests: int | None = None
    query_lens: tuple[int, ...] | None = None
    kv_lens: tuple[int, ...] | None = None
    num_devices: int | None = None
    topology_tier: str | None = None

    def __post_init__(self) -> None:
        for name in ("ep_size", "tp_size", "num_requests", "num_devices"):
            object.__setattr__(self, name, positive_int(getattr(self, name), name))
        for name in ("query_lens", "kv_lens"):
            object.__setattr__(self, name, lengths_of(getattr(self, name), name))
        if self.phase is not None:
            phase = self.phase.strip().lower() if isinstance(self.phase, str) else None
            if phase not in _PHASES:
                raise ValueError(f"phase: must be one of {', '.join(_PHASES)}, got {self.phase!r}")
            object.__setattr__(self, "phase", phase)
        tier = self.topology_tier
        if tier is not None:
            if not isinstance(tier, str) or not tier.strip():
                raise ValueError(f"topology_tier: must be a non-empty string, got {tier!r}")
            object.__setattr__(self, "topology_tier", tier.strip())

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None, path: str = "") -> LeafContext:
        """Build from a JSON object (None -> empty context); unknown keys are an error."""
        if data is None:
            return _NO_CONTEXT if cls is LeafContext else cls()
        if not isinstance(data, Mapping):
            raise object_error(path, f"must be an object, got {data!r}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise object_error(path, f"unknown key {unknown[0]!r}; known: {', '.join(known)}")
        try:
            return cls(**data)
        except ValueError as error:
            raise field_error(path, error) from None

    def to_json(self) -> dict[str, Any]:
        """The non-None fields; length lists as JSON lists."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


_NO_CONTEXT = LeafContext()
"""The context of a descriptor that states none (frozen, so one instance serves all)."""
