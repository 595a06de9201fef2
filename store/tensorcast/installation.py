"""profstore as the profiling data source of TensorCast's own ``ModelRunner``.

``install(db, version, ...)`` replaces ``ModelRunner.create_performance_models`` (the one
factory TensorCast's runner, its throughput search and its workload replay build their
performance models with) by one that gives the ``profiling`` model a
``ProfstoreDataSource`` on this process's shared store (``stores``), with the EP and TP
sizes of each configuration's own parallel config. ``uninstall()`` puts upstream's back.
A worker process started with ``spawn`` installs from the environment (``worker``).
Neither imports TensorCast: the factory is replaced when the runner's module is imported
(``runner_hook``), where upstream's own process first imports it.

The empirical model it builds is upstream's ``EmpiricalPerformanceModel``, made to count
every call: it is registered as a (virtual) ``CachingPerformanceModel``, so the runtime
does not wrap it in one and hide the calls it answers from its cache, and keeps upstream's
cache rule, one answer per ``op_invoke_info.cache_key``.
"""

from __future__ import annotations

import functools
import os
import sys
from time import perf_counter
from types import ModuleType
from typing import Any

from profstore.tensorcast import calibrated, own_objects, runner_hook
from profstore.tensorcast.bound_breakdown import distinct_result_classifiers
from profstore.tensorcast.calibrated import ClassCalibration
from profstore.tensorcast.data_source import ProfstoreDataSource
from profstore.tensorcast.ledger import Kind, ModelLedger, PricedOp, config_of
from profstore.tensorcast.metered import MeteredDataSource
from profstore.tensorcast.run_stats import Recorder
from profstore.tensorcast.settings import Settings
from profstore.tensorcast.stores import shared_store

_ACTIVE: dict[str, Any] = {}
"""The installed settings, upstream's original factory and this process's recorder."""


def install(db: str | os.PathLike[str], version: str, *,
            context: dict[str, Any] | None = None,
            format_policy: dict[str, Any] | None = None,
            run_dir: str | None = None, compare_dir: str | None = None,
            regime_policy: dict[str, Any] | None = None) -> Settings:
    """Make every ``ModelRunner`` this process builds use profstore.

    The database and the version are checked here, before anything runs. Nothing of
    TensorCast is imported: the factory is replaced when ``tensor_cast.core.model_runner``
    is imported (at once if it already is).

    Args:
        db: a SQLite file path or SQLAlchemy URL.
        version: the version to answer from.
        context: ``LeafContext`` fields for every leaf (EP and TP sizes come from each
            configuration's parallel config).
        format_policy: formats stated for tensors that state none.
        run_dir: a folder for the run's statistics (``profstore tensorcast`` sums them).
        compare_dir: a profiling folder for upstream's own CSV data source, asked beside
            profstore for every op (``--compare``).
        regime_policy: stated regime equivalences.

    Returns:
        The settings (``to_environment()`` hands them to worker processes).

    Raises:
        ValueError: an unknown version, a bad context field or a policy the version
            refutes.
        FileNotFoundError: no database at ``db``.

    Examples:
        >>> from tensor_cast.core.model_runner import ModelRunner
        >>> settings = install(demo_db, "v0.18", context={"phase": "decode"})
        >>> settings.version, settings.context
        ('v0.18', {'phase': 'decode'})
        >>> ModelRunner.create_performance_models.__module__
        'profstore.tensorcast.installation'
        >>> uninstall()
    """
    settings = Settings(os.fspath(db), version, dict(context or {}), format_policy,
                        run_dir, compare_dir, regime_policy)
    check(settings)
    install_settings(settings)
    return settings


def check(settings: Settings) -> None:
    """Open the store and build one data source, as every process will."""
    ProfstoreDataSource(shared_store(settings.db), settings.version,
                        context=settings.context or None,
                        format_policy=settings.format_policy,
                        regime_policy=settings.regime_policy).close()


def install_settings(settings: Settings, *, set_aside_imports: bool = False) -> None:
    """Install ``settings`` in this process: the factory is replaced on the model runner's
    module when it is imported (``runner_hook``), so this imports nothing of TensorCast.
    ``set_aside_imports`` (``profstore tensorcast``'s own processes): then also freeze what
    that import brought (``own_objects``, docs/adr/0129)."""
    _ACTIVE["settings"] = settings
    _ACTIVE.pop("recorder", None)  # the next one writes to this installation's run_dir
    runner_hook.when_imported(_replace_factory_and_set_aside if set_aside_imports
                              else _replace_factory)


def _replace_factory(module: ModuleType) -> None:
    runner = module.ModelRunner
    if "original" not in _ACTIVE:
        _ACTIVE["original"] = runner.__dict__["create_performance_models"]
    runner.create_performance_models = staticmethod(create_performance_models)


def _replace_factory_and_set_aside(module: ModuleType) -> None:
    _replace_factory(module)
    own_objects.set_aside_imports()


def uninstall() -> None:
    """Give ``ModelRunner`` back upstream's own performance-model factory.

    Nothing happens when profstore is not installed; a runner module imported later is
    left as upstream wrote it. Never raises.

    Examples:
        >>> from tensor_cast.core.model_runner import ModelRunner
        >>> settings = install(demo_db, "v0.18")
        >>> uninstall()
        >>> ModelRunner.create_performance_models.__module__
        'tensor_cast.core.model_runner'
    """
    runner_hook.forget()
    original = _ACTIVE.pop("original", None)
    _ACTIVE.pop("settings", None)
    module = sys.modules.get(runner_hook.RUNNER_MODULE)
    if original is not None and module is not None:
        module.ModelRunner.create_performance_models = original


def recorder() -> Recorder:
    """This process's recorder (a forked child starts its own)."""
    found = _ACTIVE.get("recorder")
    if found is None or found.stats.pid != os.getpid():
        settings = _ACTIVE.get("settings")
        found = _ACTIVE["recorder"] = Recorder(settings.run_dir if settings else None)
    return found


def create_performance_models(user_input: Any, device_profile: Any) -> list[Any]:
    """Upstream's factory, with profstore behind the ``profiling`` model."""
    from tensor_cast.performance_model.analytic import AnalyticPerformanceModel

    models = []
    for kind in getattr(user_input, "performance_model", ["analytic"]):
        if kind == "profiling":
            models.append(_profstore_model(user_input, device_profile))
        elif kind == "analytic":
            models.append(AnalyticPerformanceModel(device_profile))
    return models


def _profstore_model(user_input: Any, device_profile: Any) -> Any:
    from tensor_cast.performance_model.analytic import AnalyticPerformanceModel

    settings: Settings = _ACTIVE["settings"]
    stats = recorder().stats
    start = perf_counter()
    try:
        metered = MeteredDataSource(_data_source(settings, user_input), stats)
        source: Any = metered
        comparing = None
        if settings.compare_dir is not None:
            from profstore.tensorcast.compare import ComparingDataSource

            source = comparing = ComparingDataSource(metered, settings.compare_dir, user_input,
                                                     device_profile, settings.run_dir)
    except Exception as error:  # upstream's search would log it and skip the configuration
        stats.errors.append(f"{type(error).__name__}: {error}")
        recorder().flush()
        raise
    fallback: Any = AnalyticPerformanceModel(device_profile)
    record = None
    if settings.draw is not None:  # --draws: answers times their errors (draws.source)
        from profstore.tensorcast.draws import source as drawn_source

        run = drawn_source.DrawRun(settings.draw, settings.db, settings.version,
                                   settings.run_dir)
        source, fallback, record = drawn_source.attach(run, user_input, source, fallback,
                                                       metered)
    ledger = ModelLedger(config_of(user_input))
    stats.models.append(ledger)
    model = counted_model_class()(device_profile, source, fallback, metered, ledger,
                                  _calibrations(settings), comparing)
    if record is not None:
        model.process_op = drawn_source.counting(model.process_op, record)
    stats.data_sources += 1
    stats.setup_seconds += perf_counter() - start
    return model


def _calibrations(settings: Settings) -> dict[str, ClassCalibration]:
    """The calibrations that price fallbacks (``--calibrated-fallbacks``; else none)."""
    return {name: ClassCalibration.from_json(data)
            for name, data in (settings.calibration or {}).items()}


def _data_source(settings: Settings, user_input: Any) -> ProfstoreDataSource:
    parallel = user_input.get_parallel_config()
    return ProfstoreDataSource(
        shared_store(settings.db), settings.version,
        ep_size=parallel.expert_parallel_size, tp_size=parallel.tensor_parallel_size,
        interpolation=not getattr(user_input, "disable_profiling_interpolation", False),
        context=settings.context or None, format_policy=settings.format_policy,
        details="compact", miss_codes="upstream", regime_policy=settings.regime_policy)


@functools.cache
def counted_model_class() -> type:
    """Upstream's empirical model counting every call (module docstring); built on first
    use, so importing profstore never imports TensorCast."""
    from tensor_cast.performance_model.base import CachingPerformanceModel
    from tensor_cast.performance_model.empirical import EmpiricalPerformanceModel

    class CountedEmpiricalModel(EmpiricalPerformanceModel):
        def __init__(self, device_profile: Any, data_source: Any, fallback_model: Any,
                     metered: MeteredDataSource, ledger: ModelLedger,
                     calibrations: dict[str, ClassCalibration], comparing: Any) -> None:
            EmpiricalPerformanceModel.__init__(self, device_profile, data_source, fallback_model)
            self._cache: dict[Any, tuple[Any, PricedOp, Any]] = {}
            self._metered = metered
            self._ledger = ledger
            self._calibrations = calibrations
            self._comparing = comparing
            self._classifiers: list[Any] | None = None

        def process_op(self, op_invoke_info: Any) -> Any:
            key = op_invoke_info.cache_key
            found = self._cache.get(key)
            if found is None:
                found = self._cache[key] = self._price(op_invoke_info, key)
            result, entry, fallback = found
            self._metered.stats.calls += 1
            entry.calls += 1
            if fallback is not None:
                fallback.calls += 1
            return result

        def _price(self, op_invoke_info: Any, key: Any) -> tuple[Any, PricedOp, Any]:
            """Upstream's answer for a new op, its ledger entry and its fallback record."""
            result = EmpiricalPerformanceModel.process_op(self, op_invoke_info)
            latency_us = result.execution_time_s * 1e6
            record = self.op_records[-1]
            entry = self._metered.priced(record.func_name, latency_us,
                                         record.analytic_latency_s * 1e6)
            fallback = self._metered.fallback(latency_us)
            theirs = self._comparing.last_upstream if self._comparing is not None else None
            if theirs is not None:
                entry.upstream_kind, entry.upstream_us = theirs.kind, theirs.latency_us
                entry.upstream_reason = theirs.reason
            found = self._calibrations.get(entry.op_class)
            if found is not None and entry.kind is Kind.FALLBACK:
                result, entry = calibrated.apply(result, entry, found)
                fallback = None  # priced by its calibration, not by the analytic model
            self._ledger.ops[str(key)] = entry
            return result, entry, fallback

        def get_classifiers(self) -> list[Any]:
            """Upstream's classifiers, the op-bound one reckoned per distinct result
            (``bound_breakdown``): this model answers every call of an op with one object."""
            if self._classifiers is None:
                self._classifiers = distinct_result_classifiers(
                    EmpiricalPerformanceModel.get_classifiers(self))
            return self._classifiers

    CachingPerformanceModel.register(CountedEmpiricalModel)  # a virtual subclass: the
    # runtime's isinstance check passes, its constructor is not in the MRO
    return CountedEmpiricalModel
