"""``LeafContext``: what a leaf operator does not say itself (DESIGN §3 ``context``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from profstore.model.leaf_fields import field_error, lengths_of, object_error, positive_int

_PHASES = ("prefill", "decode", "mixed")


@dataclass(frozen=True)
class LeafContext:
    """What the op itself does not say: parallelism, phase, request grouping, topology.

    Every field is optional (None: not stated); a path that needs one misses with
    ``required_field_missing`` or ``ep_size_not_configured`` when it is absent.

    Raises:
        ValueError: a field is invalid; the message names it.

    Examples:
        >>> from profstore import LeafContext
        >>> LeafContext(ep_size=16, phase=" Decode ", kv_lens=[128, 256]).to_json()
        {'ep_size': 16, 'phase': 'decode', 'kv_lens': [128, 256]}
        >>> LeafContext(phase="warmup")
        Traceback (most recent call last):
        ValueError: phase: must be one of prefill, decode, mixed, got 'warmup'
    """

    ep_size: int | None = None
    """Expert-parallel size (MoE paths)."""
    tp_size: int | None = None
    """Tensor-parallel size."""
    phase: str | None = None
    """``prefill``, ``decode`` or ``mixed`` (normalised to lower case)."""
    num_requests: int | None = None
    """Requests in the batch (request-grouped attention)."""
    query_lens: tuple[int, ...] | None = None
    """Each request's query length."""
    kv_lens: tuple[int, ...] | None = None
    """Each request's KV (sequence) length."""
    num_devices: int | None = None
    """Devices taking part in a communication op."""
    topology_tier: str | None = None
    """The communication's topology tier, as the HCCL data names it."""

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
        """Build from a JSON object.

        Args:
            data: the ``context`` object of a descriptor; None gives the empty context.
            path: where it sits (``context``), prefixed to errors.

        Returns:
            The validated context.

        Raises:
            ValueError: not an object, an unknown key or an invalid value, named with
                ``path``.

        Examples:
            >>> from profstore import LeafContext
            >>> LeafContext.from_json({"num_devices": 16}).num_devices
            16
            >>> LeafContext.from_json({"ep": 16}, "context")
            Traceback (most recent call last):
            ValueError: context: unknown key 'ep'; known: ep_size, tp_size, phase, ...
        """
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
        """The stated fields as a JSON object.

        Never raises.

        Returns:
            The non-None fields; length tuples as lists.

        Examples:
            >>> from profstore import LeafContext
            >>> LeafContext(tp_size=8, query_lens=(1, 1)).to_json()
            {'tp_size': 8, 'query_lens': [1, 1]}
        """
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


_NO_CONTEXT = LeafContext()
"""The context of a descriptor that states none (frozen, so one instance serves all)."""
