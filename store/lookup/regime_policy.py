"""Stated regime equivalences (docs/adr/0006-stated-regime-equivalences.md).

A caller states, per op or per kernel and per regime field, a target value it accepts
another measured value for: ``{"ops": {"tensor_cast.dynamic_quantize_symmetric.default":
{"scale_mode": {"per_tensor": "per_token"}}}}`` (``"kernels"``: the same by kernel type).
A lookup whose own regime has no measured point then reads the regime with the stated
values instead, and its answer lists each substitution in ``details["regime_equivalences"]``
(``{field, target, used}``). Nothing is substituted unless stated: profstore never decides
that two discrete regimes are compatible (RFC §2.2).

Construction checks the document's shape (``ValueError`` naming the entry); ``check``
checks it against a version: every op in the mapping, every kernel in it, every field a
regime field of the kernel's rows and every accepted value one the kernel measures.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from profstore.model.mapping import VersionMapping

SECTIONS = ("ops", "kernels")
Rules = Mapping[str, Mapping[str, Any]]
"""field → {target value (as text) → accepted value}."""
Vocabulary = Callable[[str], Mapping[str, set[str]]]
"""kernel → {regime field → the values its measured regimes hold, as JSON texts}."""


@dataclass(frozen=True)
class Equivalence:
    """One stated substitution an answer used."""

    field: str
    target: Any
    used: Any

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "target": self.target, "used": self.used}


def spell(value: Any) -> str:
    """A regime value as the policy's keys spell it (strings as they are, else JSON)."""
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True)
class RegimePolicy:
    """Per op and per kernel: field → {target value → accepted value} (module docstring)."""

    ops: Mapping[str, Rules] = field(default_factory=dict)
    kernels: Mapping[str, Rules] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ops = {str(op).removeprefix("torch.ops."): _rules(rules, f"regime_policy.ops[{op!r}]")
               for op, rules in _mapping(self.ops, "regime_policy.ops").items()}
        kernels = {str(k): _rules(rules, f"regime_policy.kernels[{k!r}]")
                   for k, rules in _mapping(self.kernels, "regime_policy.kernels").items()}
        if not ops and not kernels:
            raise ValueError("regime_policy: states no equivalence (empty ops and kernels)")
        object.__setattr__(self, "ops", ops)
        object.__setattr__(self, "kernels", kernels)
        object.__setattr__(self, "_text", json.dumps(self.to_json(), sort_keys=True,
                                                     default=str))

    @classmethod
    def from_json(cls, data: Any) -> RegimePolicy:
        if isinstance(data, RegimePolicy):
            return data
        if not isinstance(data, Mapping):
            raise ValueError(f"regime_policy: must be an object, got {data!r}")
        unknown = sorted(set(data) - set(SECTIONS))
        if unknown:
            raise ValueError(f"regime_policy: unknown key {unknown[0]!r}; known: ops, kernels")
        ops, kernels = data.get("ops"), data.get("kernels")
        return cls({} if ops is None else ops, {} if kernels is None else kernels)

    @classmethod
    def load(cls, path: str | Path) -> RegimePolicy:
        """A JSON or YAML file (``ValueError`` for an unreadable or malformed one)."""
        from profstore.model.mapping_yaml import load_yaml

        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
        data, _, _ = load_yaml(text, str(path))  # JSON is YAML
        return cls.from_json(data)

    def rules(self, op: str, kernel: str) -> dict[str, dict[str, Any]]:
        """The rules for one op on one kernel: the kernel's, the op's over them."""
        found: dict[str, dict[str, Any]] = {}
        for rules in (self.kernels.get(kernel, {}), self.ops.get(op, {})):
            for name, values in rules.items():
                found.setdefault(name, {}).update(values)
        return found

    def apply(self, op: str, kernel: str, regime: Mapping[str, Any]
              ) -> tuple[dict[str, Any], list[Equivalence]] | None:
        """The regime with the stated values, and what was substituted; None: nothing."""
        rules = self.rules(op, kernel)
        if not rules:
            return None
        changed = dict(regime)
        used: list[Equivalence] = []
        for name, values in rules.items():
            if name in regime and spell(regime[name]) in values:
                changed[name] = values[spell(regime[name])]
                used.append(Equivalence(name, regime[name], changed[name]))
        return (changed, used) if used else None

    def check(self, ops: Mapping[str, Iterable[str]], vocabulary: Vocabulary,
              version: str) -> None:
        """Against a version: ``ops`` (op → its kernels) and each kernel's measured regime
        fields and values (an accepted value is compared with its type: ``"2"`` is not the
        integer 2)."""
        known_kernels = {k for kernels in ops.values() for k in kernels}
        for op, rules in self.ops.items():
            if op not in ops:
                raise ValueError(f"regime_policy.ops: unknown op {op!r} (not in the {version} "
                                 "mapping)")
            _check_rules(rules, list(ops[op]), vocabulary, f"regime_policy.ops[{op!r}]")
        for kernel, rules in self.kernels.items():
            if kernel not in known_kernels:
                raise ValueError(f"regime_policy.kernels: unknown kernel {kernel!r} (no op of "
                                 f"the {version} mapping uses it)")
            _check_rules(rules, [kernel], vocabulary, f"regime_policy.kernels[{kernel!r}]")

    def to_json(self) -> dict[str, Any]:
        return {name: {k: {f: dict(v) for f, v in rules.items()} for k, rules in
                       getattr(self, name).items()} for name in SECTIONS if getattr(self, name)}

    def __hash__(self) -> int:  # every lookup with a policy hashes it (the cache key)
        return hash(self.__dict__["_text"])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RegimePolicy) and \
            self.__dict__["_text"] == other.__dict__["_text"]


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: must be an object, got {value!r}")
    return value


def _rules(rules: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(rules, Mapping) or not rules:
        raise ValueError(f"{where}: must map regime fields to {{target: accepted}}, "
                         f"got {rules!r}")
    found: dict[str, dict[str, Any]] = {}
    for name, values in rules.items():
        here = f"{where}[{name!r}]"
        if not isinstance(values, Mapping) or not values:
            raise ValueError(f"{here}: must map target values to accepted values, "
                             f"got {values!r}")
        found[str(name)] = {}
        for target, used in values.items():
            if isinstance(used, (Mapping, list, tuple)):
                raise ValueError(f"{here}[{target!r}]: the accepted value must be a single "
                                 f"value, got {used!r}")
            if spell(target) == spell(used):
                raise ValueError(f"{here}[{target!r}]: states a value equivalent to itself")
            found[str(name)][spell(target)] = used
    return found


def _check_rules(rules: Rules, kernels: list[str], vocabulary: Vocabulary,
                 where: str) -> None:
    for name, values in rules.items():
        measured: set[str] = set()
        has_field = False
        for kernel in kernels:
            fields = vocabulary(kernel)
            if name in fields:
                has_field = True
                measured |= fields[name]
        if not has_field:
            raise ValueError(f"{where}: unknown regime field {name!r} (not a field of the "
                             f"measured regimes of {', '.join(kernels)})")
        for target, used in values.items():
            if json.dumps(used) not in measured:
                shown = sorted(spell(json.loads(v)) for v in measured)
                raise ValueError(
                    f"{where}[{name!r}][{target!r}]: unknown value {used!r} (measured: "
                    f"{', '.join(shown) or 'none'})")


def vocabulary_of(regime_keys: Iterable[str]) -> dict[str, set[str]]:
    """{field → its values as JSON texts} over some regime keys (``Vocabulary``'s answer)."""
    found: dict[str, set[str]] = {}
    for key in regime_keys:
        for name, value in json.loads(key).items():
            found.setdefault(name, set()).add(json.dumps(value))
    return found


def kernel_paths(mapping: VersionMapping, kernel: str) -> set[str]:
    """The capability paths the mapping's entries read a kernel's rows on."""
    from profstore.paths.registry import path_for, selector_of

    found = set()
    for entry in mapping.entries_for_kernel(kernel):
        path = path_for(selector_of(entry), kernel)
        if path is not None:
            found.add(path.name)
    return found
