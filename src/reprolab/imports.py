"""What a script or notebook imports, read from its source without running it.

Two users: `dvc_export` makes every project module a script imports a dependency of its DVC
stage, and `envs` puts every third-party package those modules import into the conda env of
the rule that runs it. Both want every import that can run, so the reading is conservative:
imports inside functions count (the project imports torch lazily), and so do
`importlib.import_module` calls whose argument is a literal or an f-string, the placeholders
standing for any name (`core.summary` loads `reprolab.studies.{study}.results`).
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

PROJECT = "reprolab"


def source(path: Path) -> str:
    """The Python code of a `.py` file, or the code cells of a notebook with the IPython magics
    and shell escapes (`%...`, `!...`) left out, since they are no Python."""
    if path.suffix != ".ipynb":
        return path.read_text()
    cells = json.loads(path.read_text())["cells"]
    lines = [
        line
        for cell in cells
        if cell["cell_type"] == "code"
        for line in "".join(cell["source"]).splitlines()
        if not line.lstrip().startswith(("%", "!"))
    ]
    return "\n".join(lines)


def _dynamic_name(call: ast.Call) -> str | None:
    """The module an `import_module(...)` call loads, placeholders of an f-string as `*`."""
    func = call.func
    named = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if named != "import_module" or not call.args:
        return None
    argument = call.args[0]
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return argument.value
    if isinstance(argument, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) else "*" for part in argument.values
        )
    return None


@cache
def imported_names(code: str) -> tuple[str, ...]:
    """Every absolute module name `code` imports: `import a.b`, `from a.b import c` (as `a.b`
    and `a.b.c`, since `c` may be a module) and `import_module` calls (relative imports are
    left out: the project has none). Cached by the code's text: a module is read once for
    every script that imports it."""
    names: list[str] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Call) and (name := _dynamic_name(node)):
            names.append(name)
    return tuple(names)


def _module_files(module: str, src: Path) -> list[Path]:
    """The source files of a module under `src` (a package's __init__.py); a `*` in the name
    matches any one package or module."""
    base = "/".join(module.split("."))
    if "*" in base:
        return sorted({*src.glob(f"{base}.py"), *src.glob(f"{base}/__init__.py")})
    return [path for path in (src / f"{base}.py", src / base / "__init__.py") if path.is_file()]


def imported_modules(entry: Path, src: Path) -> list[Path]:
    """Every project source file that running `entry` imports, its packages' __init__ included,
    followed transitively through `reprolab` imports (third-party imports are left out)."""
    found: set[Path] = set()
    todo = [entry]
    while todo:
        for name in imported_names(source(todo.pop())):
            if name.split(".")[0] != PROJECT:
                continue
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):
                for path in _module_files(".".join(parts[:depth]), src):
                    if path not in found:
                        found.add(path)
                        todo.append(path)
    return sorted(found)


def third_party_imports(files: Iterable[Path]) -> set[str]:
    """The top-level names of the modules `files` import that are neither the standard
    library nor the project itself (`cv2`, `yaml`, `torch`, ...)."""
    tops = {name.split(".")[0] for path in files for name in imported_names(source(path))}
    return {
        top
        for top in tops
        if top not in sys.stdlib_module_names and top not in (PROJECT, "__future__", "*")
    }
