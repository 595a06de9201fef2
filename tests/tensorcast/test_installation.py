"""``profstore.tensorcast.install``: TensorCast's own ``ModelRunner`` factory answers from
profstore, counts what it does, and a process that cannot use the store says so."""

from __future__ import annotations

import shutil

import pytest
from profstore.tensorcast import ProfstoreDataSource, install, uninstall
from profstore.tensorcast.installation import recorder
from profstore.tensorcast.run_stats import RunSummary
from profstore.tensorcast.stores import close_shared

from tests.tensorcast.simulation import DEVICE, copy_model, require_tensor_cast

pytestmark = [pytest.mark.requires_perfdb, pytest.mark.sqlite_only]


def user_input(model: str, *options: str):
    from cli.inference.text_generate import arg_parse
    from tensor_cast.core.user_config import UserInputConfig

    args = arg_parse([model, "--num-queries", "1", "--query-length", "1", "--context-length",
                      "128", "--decode", "--device", DEVICE, "--performance-model",
                      "profiling", "--profiling-database-path", "unused", *options])
    return UserInputConfig.from_args(args)


@pytest.fixture
def installed(perfdb_path, tmp_path):
    require_tensor_cast()
    database = tmp_path / "perf.db"
    shutil.copyfile(perfdb_path, database)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    install(database, "v0.18", run_dir=str(run_dir))
    yield database, run_dir
    uninstall()
    close_shared()


def factory(config):
    from tensor_cast.core.model_runner import ModelRunner
    from tensor_cast.device import DeviceProfile

    return ModelRunner.create_performance_models(config,
                                                 DeviceProfile.all_device_profiles[DEVICE])


@pytest.fixture
def model_path(tmp_path) -> str:
    """The model config copied into the test's own folder (see ``copy_model``)."""
    return str(copy_model("qwen3_dense_32b", tmp_path / "models"))


def test_the_profiling_model_answers_from_profstore_with_each_configurations_sizes(
        installed, model_path):
    (model,) = factory(user_input(model_path, "--tp-size", "4", "--num-devices", "8"))
    source = model.data_source.inner
    assert isinstance(source, ProfstoreDataSource)
    assert (source.context.tp_size, source.compact, source.miss_codes) == (4, True, "upstream")
    from tensor_cast.performance_model.base import CachingPerformanceModel

    assert isinstance(model, CachingPerformanceModel)  # the runtime leaves it unwrapped


def test_a_process_that_cannot_open_the_store_records_why(installed, model_path):
    database, run_dir = installed
    close_shared()
    database.unlink()  # as if the file went away before a worker opened it
    with pytest.raises(Exception) as raised:
        factory(user_input(model_path, "--tp-size", "8", "--num-devices", "8"))
    (error,) = recorder().stats.errors
    assert error.startswith(type(raised.value).__name__ + ": ") and str(database) in error
    assert RunSummary.collect(run_dir).errors() == [error]  # flushed at once


def test_uninstall_gives_upstream_its_factory_back(installed, model_path):
    uninstall()
    (model,) = factory(user_input(model_path, "--tp-size", "8", "--num-devices", "8"))
    assert type(model.data_source).__name__ == "InterpolatingDataSource"
