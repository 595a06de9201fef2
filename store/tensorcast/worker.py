"""Imported as the main module of every worker a TensorCast run starts with ``spawn``.

A spawned worker imports the parent's main module again and nothing else the parent did
at run time, so ``profstore tensorcast`` runs upstream's command with this module as
``__main__``: each worker imports it and installs profstore from the settings the parent
put in its environment (``settings.ENVIRONMENT``), and sets its own objects aside from the
collector before TensorCast's modules arrive, and TensorCast's imports once its model
runner's module is imported (``own_objects``).
"""

from __future__ import annotations

from profstore.tensorcast.settings import Settings

_settings = Settings.from_environment()
if _settings is not None:
    from profstore.tensorcast.installation import install_settings

    install_settings(_settings, set_aside_imports=True)
    from profstore.tensorcast import own_objects

    own_objects.set_aside()  # a spawned worker has not imported TensorCast yet (docs/adr/0128)
