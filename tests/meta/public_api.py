"""The public surface (docs/architecture.md): the names of ``profstore.__all__`` and
``profstore.tensorcast.__all__``, and for each class its public methods, properties and
fields, as the reference renders them (their objects in the package, by public path)."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import fields, is_dataclass

PUBLIC_MODULES = ("profstore", "profstore.tensorcast")


def public_names() -> list[str]:
    """Every public path: ``profstore.Store``, ``profstore.Store.open``, ...

    Members are those a class defines itself (not inherited from ``object``, ``str``,
    ``enum.Enum`` or a base class in the list), without a leading underscore; enum
    members are values, documented in their class's docstring."""
    names: list[str] = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            names.append(f"{module_name}.{name}")
            value = getattr(module, name)
            if inspect.isclass(value):
                names.extend(f"{module_name}.{name}.{member}" for member in own_members(value))
    return names


def own_members(cls: type) -> list[str]:
    members = [name for name, value in vars(cls).items() if not name.startswith("_")
               and (inspect.isfunction(value) or isinstance(value, (property, classmethod,
                                                                    staticmethod)))]
    if is_dataclass(cls):
        inherited = {f.name for base in cls.__mro__[1:] if is_dataclass(base)
                     for f in fields(base)}
        members.extend(f.name for f in fields(cls) if f.name not in inherited)
    return members


def griffe_package():
    """The package as mkdocstrings reads it (griffe, Google docstrings), aliases resolved."""
    import griffe

    package = griffe.load("profstore", docstring_parser=griffe.Parser.google,
                          resolve_aliases=True, resolve_external=False)
    return package


def griffe_object(package, path: str):
    """The object at a public path, its alias followed to the definition."""
    obj = package[path.removeprefix("profstore.")] if path != "profstore" else package
    return obj.final_target if obj.is_alias else obj
