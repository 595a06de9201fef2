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

from profstore.tensorcast import runner_hook
from profstore.tensorcast.data_source import ProfstoreDataSource
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
    """Make every ``ModelRunner`` this process builds use profstore; returns the settings
    (``to_environment()`` hands them to worker processes). The database and the version
    are checked here: a ``ValueError`` names what is wrong before anything runs."""
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


def install_settings(settings: Settings) -> None:
    """Install ``settings`` in this process: the factory is replaced on the model runner's
    module when it is imported (``runner_hook``), so this imports nothing of TensorCast."""
    _ACTIVE["settings"] = settings
    _ACTIVE.pop("recorder", None)  # the next one writes to this installation's run_dir
    runner_hook.when_imported(_replace_factory)


def _replace_factory(module: ModuleType) -> None:
    runner = module.ModelRunner
    if "original" not in _ACTIVE:
        _ACTIVE["original"] = runner.__dict__["create_performance_models"]
    runner.create_performance_models = staticmethod(create_performance_models)


def uninstall() -> None:
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
        if settings.compare_dir is not None:
            from profstore.tensorcast.compare import ComparingDataSource

            source = ComparingDataSource(metered, settings.compare_dir, user_input,
                                         device_profile, settings.run_dir)
    except Exception as error:  # upstream's search would log it and skip the configuration
        stats.errors.append(f"{type(error).__name__}: {error}")
        recorder().flush()
        raise
    fallback: Any = AnalyticPerformanceModel(device_profile)
    record = None
    if settings.draw is not None:  # --draws: answers times their errors (drawn_source)
        from profstore.tensorcast import drawn_source

        source, fallback, record = drawn_source.attach(settings, user_input, source,
                                                       fallback, metered)
    model = counted_model_class()(device_profile, source, fallback, metered)
    if record is not None:
        model.process_op = drawn_source.counting(model.process_op, record)
    stats.data_sources += 1
    stats.setup_seconds += perf_counter() - start
    return model


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
                     metered: MeteredDataSource) -> None:
            EmpiricalPerformanceModel.__init__(self, device_profile, data_source, fallback_model)
            self._cache: dict[Any, Any] = {}
            self._fallbacks: dict[Any, Any] = {}
            self._metered = metered

        def process_op(self, op_invoke_info: Any) -> Any:
            key = op_invoke_info.cache_key
            if key not in self._cache:
                result = EmpiricalPerformanceModel.process_op(self, op_invoke_info)
                self._cache[key] = result
                self._fallbacks[key] = self._metered.fallback(result.execution_time_s * 1e6)
            self._metered.stats.calls += 1
            fallback = self._fallbacks[key]
            if fallback is not None:
                fallback.calls += 1
            return self._cache[key]

    CachingPerformanceModel.register(CountedEmpiricalModel)  # a virtual subclass: the
    # runtime's isinstance check passes, its constructor is not in the MRO
    return CountedEmpiricalModel
