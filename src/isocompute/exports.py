"""Lazy re-exports for the subpackages: `isocompute.fits.fit_law` without importing every module of `fits`.

Each subpackage's `__init__` names its public API (`EXPORTS`: name -> defining module), each name being one
that another module imports from it; a name that is also a module's name (`fits.frontier.frontier`) is
left to its module, whose own attribute would shadow it once imported. Loading them eagerly would
make `import isocompute.study.grid` import torch, TRL and Snakemake through its siblings, and would tie the
subpackages' import order into circles; PEP 562's module `__getattr__` loads a module on first use instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, resolving each name of `exports` in its module."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
