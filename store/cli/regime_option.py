"""``--regime-policy FILE``: stated regime equivalences (store/lookup/regime_policy.py) on
``lookup``, ``explain``, ``replay`` and ``tensorcast``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from profstore.cli.common import CliError
from profstore.lookup.regime_policy import RegimePolicy

if TYPE_CHECKING:
    from profstore.api import Store

def load_regime_policy(args: argparse.Namespace) -> RegimePolicy | None:
    """The file's policy (its shape checked), or None without the option."""
    path = getattr(args, "regime_policy", None)
    if not path:
        return None
    try:
        return RegimePolicy.load(path)
    except ValueError as exc:
        raise CliError(f"--regime-policy: {_one_line(exc)}") from None


def checked_regime_policy(args: argparse.Namespace, store: Store) -> RegimePolicy | None:
    """``load_regime_policy`` checked against the version's mapping and measured regimes."""
    policy = load_regime_policy(args)
    profile = store.profile(args.version)
    if policy is None or profile is None:
        return policy
    try:
        store.check_regime_policy(policy, profile)
    except ValueError as exc:
        raise CliError(f"--regime-policy: {_one_line(exc)}") from None
    return policy


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())
