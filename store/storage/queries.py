"""SQL for the hot queries: exact keys and a regime's points.

Every query names the profile, kernel and (for points) path and regime key, so each is a
range scan of an index or primary key in ``store.schema`` (keys: the kernel's files, then
the key, then their samples by id; points: the regime by its unique key, then its one
``regime_points`` row, since 0006). A regime's points are cached as a columnar slice
(``regime_slice``, bounded ClockCache): exact coordinates, interpolation, duplicate
handling and hold-out exclusion work on it without going back to the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from profstore.model.clock_cache import ClockCache
from profstore.model.exact_keys import output_key
from profstore.storage import schema as t
from profstore.storage.regime_pack import READ_COLUMNS, decode
from profstore.storage.regime_slice import MeasuredRow, RegimeSlice, build_slice
from profstore.storage.statements import Statement, compile_all
from sqlalchemy import Engine, and_, bindparam, func, select

__all__ = ["CandidateQueries"]

_G = t.regime.c
_K = t.key_table.c
_S = t.sample_table.c
_F = t.kernel_file.c
_OF_KERNEL = (_F.profile_id == bindparam("profile"), _F.kernel_type == bindparam("kernel"))
"""The kernel's files in one version: every key statement starts from them."""
_KERNEL_PRESENT = Statement(select(_F.id).where(*_OF_KERNEL).limit(1))
_KEY_COLUMNS = (_K.sample_id, _S.latency_us, _S.latency_column, _S.line_no, _F.file_name)
_KEY_JOIN = (
    select(*_KEY_COLUMNS)
    .select_from(t.kernel_file)
    .join(t.key_table, _K.kernel_file_id == _F.id)
    .join(t.sample_table, _S.id == _K.sample_id)
    .where(*_OF_KERNEL)
)
MAX_KEYS = 3
"""The most exact keys a target tries (``exact_keys.target_keys``)."""


def _exact_keys(n: int) -> Statement:
    keys = and_(_K.kernel_file_id == _F.id,
                _K.exact_key.in_([bindparam(f"k{i}") for i in range(n)]))
    return Statement(select(*_KEY_COLUMNS, _K.exact_key)
                     .select_from(t.kernel_file.outerjoin(t.key_table, keys)
                                  .outerjoin(t.sample_table, _S.id == _K.sample_id))
                     .where(*_OF_KERNEL))


_EXACT_KEYS = tuple(_exact_keys(n) for n in range(1, MAX_KEYS + 1))
"""Every key of a target in one statement, from each of the kernel's files (a file without
any of the keys gives one row of NULLs): a miss on the first key costs no second query, and
a miss on all of them tells whether the kernel has a CSV without a query of its own.
Unordered: a key has one to a few rows, sorted in Python (no temporary b-tree)."""
_OUTPUT_SHAPE = Statement(
    _KEY_JOIN.add_columns(_K.exact_key)
    .where(_K.exact_key >= bindparam("low"), _K.exact_key < bindparam("high"))
    .order_by(_K.exact_key, _K.sample_id)
)
_PACK = t.regime_points.c
_REGIME_PACK = Statement(
    select(*[_PACK[name] for name in READ_COLUMNS])
    .select_from(t.regime).join(t.regime_points, _PACK.regime_id == _G.id)
    .where(_G.profile_id == bindparam("profile"), _G.kernel_type == bindparam("kernel"),
           _G.path == bindparam("path"), _G.regime_key == bindparam("regime")))
"""A regime's points in one row (``regime_points``, ``profstore.storage.regime_pack``)."""
_REGIME_KEYS = Statement(
    select(_G.regime_key, _PACK.points)
    .select_from(t.regime).join(t.regime_points, _PACK.regime_id == _G.id)
    .where(_G.profile_id == bindparam("profile"), _G.kernel_type == bindparam("kernel"),
           _G.path == bindparam("path")))
"""The measured regimes of a kernel on a path (key, points): what a regime miss compares
its target with (``profstore.lookup.nearest_regime``)."""
_R = t.path_refusal.c
_REFUSALS = Statement(
    select(_R.reason, func.count())
    .where(_R.profile_id == bindparam("profile"), _R.kernel_type == bindparam("kernel"),
           _R.path == bindparam("path"))
    .group_by(_R.reason)
)
"""Hot statements are built once with bound parameters and compiled once per dialect
(``store.statements``); inside a lookup's snapshot they run on its DBAPI cursor."""
_KEY_SEPARATOR = "\x1f"
_LISTED = (select(_K.exact_key.label("key"))
           .select_from(t.kernel_file.outerjoin(t.key_table, _K.kernel_file_id == _F.id))
           .where(*_OF_KERNEL)
           .limit(bindparam("limit")).subquery())
_KERNEL_KEYS = Statement(select(func.count(), func.count(_LISTED.c.key),
                                func.aggregate_strings(_LISTED.c.key, _KEY_SEPARATOR)))
"""A kernel's exact keys, at most ``limit`` rows (one per key and sample; a file without keys
gives one NULL, so no row at all means no CSV): (rows, keys, the keys joined by
``_KEY_SEPARATOR``). A range scan of ``ix_kernel_file_profile_kernel`` then ``sample_key``'s
primary key. One string, not a row per key: a tuple per key is thousands of container
objects counted toward the cyclic collector's thresholds (a collection of the older
generations inside a lookup costs 30–50 ms); the split strings are not tracked."""


_NO_POINTS = build_slice(())
"""The slice of a regime the kernel does not have (read only, as every slice is)."""


def _key_row_order(r: Sequence[Any]) -> tuple[str, float, int]:
    """Latency column, latency, sample id: the order a key's rows merge in."""
    return r[2], r[1], r[0]


KEY_SET_CAP = 8192
"""The most ``sample_key`` rows a kernel's key set is read from (see ``CandidateQueries``)."""
KEY_SET_AFTER = 2
"""Misses on a kernel before its key set is read."""
KEY_SETS = 32
"""Kernels whose miss count or key set is kept: at most ≈ 32 MB of keys."""


@dataclass(frozen=True, slots=True)
class _KernelKeys:
    present: bool
    """The kernel has a CSV (a file, with or without keys)."""
    keys: frozenset[str] | None
    """Every exact key of the kernel, or None: more rows than the cap (ask SQL)."""


class CandidateQueries:
    """The hot queries of one generation, with their caches.

    A kernel missed ``KEY_SET_AFTER`` times (an interpolated target always misses its exact
    keys) has its set of exact keys read once, from at most ``KEY_SET_CAP`` rows (both
    constants read when the generation's queries are built): a later target none of whose
    keys is in it misses without a statement. The threshold counts misses, not lookups: a
    hit runs its statement anyway, and a kernel missed once never pays for the read. In a
    search every new shape of an interpolated op misses its kernels' keys: the second miss
    reads the set (docs/adr/0126-key-sets-after-two-misses.md)."""

    def __init__(self, engine: Engine | Any, slice_cache_size: int = 512) -> None:
        self.engine = engine
        compile_all(engine.dialect)
        self._slices: ClockCache[tuple[int, str, str, str], RegimeSlice] = ClockCache(
            slice_cache_size)
        self._kernels: ClockCache[tuple[int, str], bool] = ClockCache(4096)
        self._stats: ClockCache[tuple[Any, ...], Any] = ClockCache(1024)
        self._misses: ClockCache[tuple[int, str], int] = ClockCache(KEY_SETS)
        """(profile, kernel) → exact-key misses so far, until its key set is read."""
        self._key_sets: ClockCache[tuple[int, str], _KernelKeys] = ClockCache(KEY_SETS)
        self._key_set_cap, self._key_set_after = KEY_SET_CAP, KEY_SET_AFTER

    def clear(self) -> None:
        self._slices.clear()
        self._kernels.clear()
        self._stats.clear()
        self._key_sets.clear()
        self._misses.clear()

    def kernel_present(self, profile_id: int, kernel: str) -> bool:
        key = (profile_id, kernel)
        cached = self._kernels.get(key)
        if cached is None:
            cached = bool(_KERNEL_PRESENT.rows(self.engine, profile=profile_id, kernel=kernel))
            self._kernels.put(key, cached)
        return cached

    def exact_key_rows(
        self, profile_id: int, kernel: str, keys: Sequence[str],
        exclude: frozenset[int] = frozenset(),
    ) -> dict[str, list[MeasuredRow]]:
        """The rows of each key that has any (latency column, latency, sample order), all
        keys in one statement: a hit costs ≈ 1 µs more than asking for its key alone, a
        miss one statement less. A kernel's key set, once read, answers a miss alone."""
        known = self._key_sets.get((profile_id, kernel))
        if known is not None and known.keys is not None and known.keys.isdisjoint(keys):
            self._note_kernel(profile_id, kernel, known.present)
            return {}
        found = self._key_rows(profile_id, kernel, keys, exclude)
        if not found and known is None:
            self._missed(profile_id, kernel)
        return found

    def _key_rows(self, profile_id: int, kernel: str, keys: Sequence[str],
                  exclude: frozenset[int]) -> dict[str, list[MeasuredRow]]:
        found: dict[str, list[MeasuredRow]] = {}
        for start in range(0, len(keys), MAX_KEYS):
            part = keys[start:start + MAX_KEYS]
            rows = _EXACT_KEYS[len(part) - 1].rows(self.engine, profile=profile_id,
                                                   kernel=kernel,
                                                   **{f"k{i}": k for i, k in enumerate(part)})
            self._note_kernel(profile_id, kernel, bool(rows))
            matched = [r for r in rows if r[0] is not None and r[0] not in exclude]
            for r in sorted(matched, key=_key_row_order):
                found.setdefault(r[5], []).append(MeasuredRow(r[0], r[1], r[2], r[3], r[4]))
        return found

    def _note_kernel(self, profile_id: int, kernel: str, present: bool) -> None:
        """Kernel presence learnt on the way (``kernel_present`` then asks no statement)."""
        if self._kernels.get((profile_id, kernel)) is None:
            self._kernels.put((profile_id, kernel), present)

    def _missed(self, profile_id: int, kernel: str) -> None:
        misses = (self._misses.get((profile_id, kernel)) or 0) + 1
        if misses < self._key_set_after:
            self._misses.put((profile_id, kernel), misses)
            return
        rows, listed, joined = _KERNEL_KEYS.rows(self.engine, profile=profile_id, kernel=kernel,
                                                 limit=self._key_set_cap + 1)[0]
        keys = joined.split(_KEY_SEPARATOR) if listed else []
        # more pieces than keys would be a key holding the separator: SQL answers those
        whole = rows <= self._key_set_cap and len(keys) == listed
        self._key_sets.put((profile_id, kernel),
                           _KernelKeys(rows > 0, frozenset(keys) if whole else None))

    def output_shape_rows(
        self, profile_id: int, kernel: str, shape: tuple[int, ...],
        exclude: frozenset[int] = frozenset(),
    ) -> list[tuple[str, MeasuredRow]]:
        """Rows whose first output has this (batch-stripped) shape, in any dtype."""
        prefix = output_key(shape, "")
        rows = _OUTPUT_SHAPE.rows(self.engine, profile=profile_id, kernel=kernel, low=prefix,
                                  high=prefix[:-1] + chr(ord(":") + 1))
        return [(r[5][len(prefix):], MeasuredRow(r[0], r[1], r[2], r[3], r[4]))
                for r in rows if r[0] not in exclude]

    def points_at(
        self,
        profile_id: int,
        kernel: str,
        path: str,
        regime_key: str,
        axes: Sequence[float],
        exclude: frozenset[int] = frozenset(),
    ) -> list[MeasuredRow]:
        """Rows at one exact coordinate of a regime (the specialised exact lookup), in point
        order, from the regime's slice: the interpolation that follows a miss reads the
        same slice, so the regime's one row is read once."""
        return self._full_slice(profile_id, kernel, path, regime_key).rows_at(
            tuple(float(v) for v in axes), exclude)

    def regime_slice(
        self,
        profile_id: int,
        kernel: str,
        path: str,
        regime_key: str,
        exclude: frozenset[int] = frozenset(),
    ) -> RegimeSlice:
        full = self._full_slice(profile_id, kernel, path, regime_key)
        return full.without(exclude) if exclude else full

    def _full_slice(self, profile_id: int, kernel: str, path: str, regime_key: str
                    ) -> RegimeSlice:
        key = (profile_id, kernel, path, regime_key)
        full = self._slices.get(key)
        if full is None:
            listed = self._stats.get(("regime_set", profile_id, kernel, path))
            if listed is not None and regime_key not in listed:
                return _NO_POINTS
            packed = _REGIME_PACK.rows(self.engine, profile=profile_id, kernel=kernel,
                                       path=path, regime=regime_key)
            full = decode(packed[0]) if packed else _NO_POINTS
            self._slices.put(key, full)
        return full

    def regime_stats(self, profile_id: int, kernel: str, path: str) -> tuple[int, int]:
        """(points, distinct regimes) of a kernel on a path: a regime mismatch vs. no data.
        Counted from ``regime_keys``, which the miss's nearest regimes read next."""
        key = ("regime_stats", profile_id, kernel, path)
        cached = self._stats.get(key)
        if cached is None:
            regimes = self.regime_keys(profile_id, kernel, path)
            cached = (sum(points for _, points in regimes), len(regimes))
            self._stats.put(key, cached)
        return cached

    def regime_keys(self, profile_id: int, kernel: str, path: str
                    ) -> tuple[tuple[str, int], ...]:
        """(regime key, points) of every measured regime of a kernel on a path, in key
        order. Once a kernel's regimes are read (a regime miss names the nearest), a
        regime not among them has no points without a statement: a search misses a
        kernel's regimes at every new shape."""
        key = ("regimes", profile_id, kernel, path)
        cached = self._stats.get(key)
        if cached is None:
            cached = tuple(sorted((r[0], int(r[1])) for r in _REGIME_KEYS.rows(
                self.engine, profile=profile_id, kernel=kernel, path=path)))
            self._stats.put(key, cached)
            self._stats.put(("regime_set", profile_id, kernel, path),
                            frozenset(k for k, _ in cached))
        return cached

    def refusal_counts(self, profile_id: int, kernel: str, path: str) -> dict[str, int]:
        key = ("refusals", profile_id, kernel, path)
        cached = self._stats.get(key)
        if cached is None:
            cached = {reason: int(n) for reason, n in _REFUSALS.rows(
                self.engine, profile=profile_id, kernel=kernel, path=path)}
            self._stats.put(key, cached)
        return dict(cached)
