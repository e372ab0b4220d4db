"""The package's layout holds: every subpackage's public names resolve, and no library module imports the
command line or reaches back up into it."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import isocompute

PACKAGE = Path(isocompute.__file__).parent
SUBPACKAGES = sorted(info.name for info in pkgutil.iter_modules([str(PACKAGE)]) if info.ispkg and info.name != "cli")


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_exported_name_resolves_in_its_module(name: str) -> None:
    package = importlib.import_module(f"isocompute.{name}")
    assert package.__doc__, f"isocompute.{name} has no docstring saying what it owns"
    assert package.EXPORTS, f"isocompute.{name} exports nothing"
    for exported, module in package.EXPORTS.items():
        assert getattr(package, exported) is getattr(importlib.import_module(f"isocompute.{name}.{module}"), exported)
    with pytest.raises(AttributeError, match="no attribute"):
        package.not_a_name  # noqa: B018


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_library_module_imports_the_command_line() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "cli" not in path.relative_to(PACKAGE).parts
        and any(module == "isocompute.cli" or module.startswith("isocompute.cli.") for module in imported_modules(path))
    ]
    assert not offenders


def test_the_leaf_modules_import_nothing_of_the_project() -> None:
    """Table and file I/O, the error base and the lazy exports sit under everything else."""
    for leaf in ("files.py", "errors.py", "exports.py"):
        assert not [m for m in imported_modules(PACKAGE / leaf) if m.startswith("isocompute")], leaf


def test_no_two_subpackages_import_each_other() -> None:
    """The subpackages form layers: an import between two of them runs one way only (a circle would tie
    their import order, and a newcomer could not read one without the other)."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        source = parts[0] if len(parts) > 1 else path.stem
        for module in imported_modules(path):
            if module.startswith("isocompute.") and (target := module.split(".")[1]) != source:
                arrows.setdefault((source, target), []).append(str(path.relative_to(PACKAGE)))
    both_ways = sorted((a, b, arrows[a, b], arrows[b, a]) for a, b in arrows if (b, a) in arrows and a < b)
    assert not both_ways
