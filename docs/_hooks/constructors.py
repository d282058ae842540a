"""Griffe extension: the constructor signature of every class, as Python sees it.

Static analysis sees no `__init__` in an `eqx.Module` that declares only fields (equinox
writes the dataclass `__init__` at run time; a base class's may be found instead), so the API reference would show such a class
without its arguments. For those classes this imports the class and gives it an `__init__`
with `inspect.signature`'s parameters; mkdocstrings' `merge_init_into_class` then shows them
in the class's heading."""

from __future__ import annotations

import inspect

import equinox as eqx
import griffe


def _default(p: inspect.Parameter) -> str | None:
    return None if p.default is inspect.Parameter.empty else repr(p.default)


class ConstructorSignatures(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for cls in _classes(pkg):
            if "__init__" in cls.members:  # written in the class's source: seen statically
                continue
            try:
                obj = griffe.dynamic_import(cls.path)
                if not (isinstance(obj, type) and issubclass(obj, eqx.Module)):
                    continue
                sig = inspect.signature(obj)
            except Exception:  # noqa: BLE001 - not importable or no signature: left as is
                continue
            params = [griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword)]
            params += [griffe.Parameter(p.name, kind=griffe.ParameterKind(p.kind.description),
                                        default=_default(p)) for p in sig.parameters.values()]
            cls.set_member("__init__", griffe.Function(
                "__init__", parameters=griffe.Parameters(*params), parent=cls))


def _classes(obj):
    for member in list(obj.members.values()):
        if member.is_alias:
            continue
        if member.is_class:
            yield member
        if member.is_module or member.is_class:
            yield from _classes(member)
