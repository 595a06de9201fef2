"""TensorCast's op-bound breakdown, reckoned once per distinct answer (ADR 0118).

Upstream's ``OpBoundClassifier`` asks ``BoundAnalyzer`` about every event of a run, and
reads each of about thirteen time statistics by scanning every key of the op's statistics
when the key is absent — as it is in every answer a data source gives (``source``,
``confidence``, the details, the shape fields). On the dense reference search that made
the classification a third of what a worker spends over the analytic command.

The counting model (``installation``) hands TensorCast one result object per distinct op,
so an event's classification depends only on that object. ``DistinctResultClassifier``
works it out once per object within one ``classify`` call and accumulates per event, in
upstream's order, with upstream's own accumulation: the breakdown is the same float for
float. Any other classifier is passed through untouched.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any


def distinct_result_classifiers(classifiers: Sequence[Any]) -> list[Any]:
    """``classifiers`` with upstream's ``OpBoundClassifier`` (exactly that class) replaced
    by ``DistinctResultClassifier``; every other classifier as it is."""
    upstream, ours = _classes()
    return [ours() if type(c) is upstream else c for c in classifiers]


@functools.cache
def _classes() -> tuple[type, type]:
    """Upstream's classifier and ours, built on first use: importing profstore never
    imports TensorCast."""
    from tensor_cast.performance_model.analytic import OpBoundClassifier
    from tensor_cast.performance_model.bound_analyzer import BoundAnalyzer

    class DistinctResultClassifier(OpBoundClassifier):
        def classify(self, event_list: Sequence[tuple[Any, Any]]) -> dict[str, float]:
            breakdown: dict[str, float] = super().classify([])  # upstream's zeroed categories
            reckoned: dict[int, tuple[str, Any]] = {}
            for _, result in event_list:  # the list holds every result: ids stay unique
                found = reckoned.get(id(result))
                if found is None:
                    found = reckoned[id(result)] = (BoundAnalyzer.dominant(result),
                                                    BoundAnalyzer.components(result))
                self._accumulate_dominant_components(breakdown, *found)
            return breakdown

    return OpBoundClassifier, DistinctResultClassifier
