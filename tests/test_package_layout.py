"""The package is laid out by role (docs/TEAM.md): no module loose at the package root but ``__init__.py``, no trainer
package importing a sibling trainer package, and no shared package (``common``, ``sac``, ``offpolicy``, ...)
importing a trainer.  Read from the sources' import statements (``ast``), relative imports resolved."""
import ast
import os
from typing import Dict, Iterator, List, Tuple

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "mlagents_plugins"
TRAINERS = ("fast_sac", "taac", "impala", "muzero_repr")


def _modules(root: str) -> Dict[str, str]:
    """Dotted module name -> path of every ``.py`` file under ``root/PACKAGE``."""
    out = {}
    for folder, _, files in os.walk(os.path.join(root, PACKAGE)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, root)[: -len(".py")].split(os.sep)
                out[".".join(parts)] = path
    return out


def _imported(module: str, path: str) -> Iterator[Tuple[int, str]]:
    """(line, dotted name) of everything ``module`` imports: ``import a.b`` gives ``a.b``; ``from a import b`` gives
    ``a.b`` (``b`` may be a module or a name in ``a``; both are checked as prefixes)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    is_package = os.path.basename(path) == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".")
                parent = parent if is_package else parent[:-1]
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def _package_of(dotted: str) -> str:
    """The first-level folder of ``PACKAGE`` a dotted name lies in ('' for the package root itself)."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == PACKAGE else ""


def layout_violations(root: str) -> List[str]:
    """Every import arrow into a trainer package from outside it, and every loose module at the package root."""
    found = []
    for module, path in sorted(_modules(root).items()):
        rel = os.path.relpath(path, root)
        if module.count(".") == 1 and not module.endswith(".__init__"):
            found.append(f"{rel}: a module directly in {PACKAGE}/ (put it in the folder of its role)")
        own = _package_of(module)
        for line, name in _imported(module, path):
            target = _package_of(name)
            if target in TRAINERS and target != own:
                kind = "trainer" if own in TRAINERS else "shared module"
                found.append(f"{rel}:{line}: {kind} imports {name} (trainer package {target})")
    return found


def test_no_loose_module_and_no_import_into_another_trainer():
    assert layout_violations(REPO) == []


@pytest.mark.parametrize("source, found", [
    ("from mlagents_plugins.fast_sac.losses import sac_losses\n", "imports mlagents_plugins.fast_sac.losses.sac_losses"),
    ("import mlagents_plugins.fast_sac.networks as n\n", "imports mlagents_plugins.fast_sac.networks"),
    ("from mlagents_plugins import fast_sac\n", "imports mlagents_plugins.fast_sac"),
    ("from ..fast_sac import losses\n", "imports mlagents_plugins.fast_sac.losses"),
    ("def f():\n    from mlagents_plugins.fast_sac import plugin\n", "imports mlagents_plugins.fast_sac.plugin"),
])
def test_an_arrow_into_a_sibling_trainer_is_found(tmp_path, source, found):
    for folder in ("fast_sac", "muzero_repr", "common"):
        (tmp_path / PACKAGE / folder).mkdir(parents=True)
        (tmp_path / PACKAGE / folder / "__init__.py").write_text("")
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    (tmp_path / PACKAGE / "fast_sac" / "losses.py").write_text("from . import networks\nfrom ..common import x\n")
    (tmp_path / PACKAGE / "muzero_repr" / "optimizer.py").write_text(source)
    (tmp_path / PACKAGE / "common" / "tools.py").write_text(source)
    (tmp_path / PACKAGE / "loose.py").write_text("")
    violations = layout_violations(str(tmp_path))
    assert any(v.startswith(os.path.join(PACKAGE, "muzero_repr", "optimizer.py")) and "trainer imports" in v
               and found in v for v in violations), violations
    assert any(v.startswith(os.path.join(PACKAGE, "common", "tools.py")) and "shared module imports" in v
               for v in violations), violations
    assert any(v.startswith(os.path.join(PACKAGE, "loose.py")) for v in violations), violations
    # a trainer importing its own package, and the package root's __init__.py, are fine
    assert not any(os.path.join("fast_sac", "losses.py") in v or "__init__" in v for v in violations), violations
