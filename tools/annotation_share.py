"""Measure how much of cbudget is fully annotated.

    python tools/annotation_share.py            # the table
    python tools/annotation_share.py --missing  # also list the public functions not annotated

A function is fully annotated when every parameter (but a method's ``self``/``cls``) and
its return have annotations; as in mypy, an ``__init__`` with an annotated parameter needs
no return annotation. Annotations are read with ``ast`` from the source files; the public
API is found by importing cbudget (so that re-exports and inherited methods resolve):

* the names in ``cbudget.__all__`` and ``cbudget.sklearn.__all__``, the public functions
  of ``cbudget.plotting`` and of the ``cbudget.interop`` modules;
* for a public class, its public methods (and ``__init__``/``__call__``), including those
  it inherits from cbudget classes (an estimator's ``fit`` is written on a private base).

Run from the repository root (or with cbudget importable).
"""
from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import os
import pkgutil
import sys
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "cbudget")
FOLDERS = ["cbudget/", "cbudget/algorithms/", "cbudget/interop/", "cbudget/dask/"]
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# dunder methods a user calls through syntax, counted with the public methods
PUBLIC_DUNDERS = {"__init__", "__call__"}


def fully_annotated(node: FunctionNode, is_method: bool) -> bool:
    """Whether every parameter (but a method's first) and the return are annotated."""
    args = node.args
    params = [*args.posonlyargs, *args.args]
    decorators = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
    if is_method and "staticmethod" not in decorators and params:
        params = params[1:]  # self / cls
    params += args.kwonlyargs
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    if any(p.annotation is None for p in params):
        return False
    if node.returns is None:
        # mypy accepts an __init__ without a return annotation when a parameter has one
        return node.name == "__init__" and bool(params)
    return True


def functions(tree: ast.AST) -> Iterator[tuple[FunctionNode, bool]]:
    """Every function of a module (nested ones too), with whether it is a method."""
    def visit(node: ast.AST, in_class: bool) -> Iterator[tuple[FunctionNode, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield child, in_class
                yield from visit(child, False)
            else:
                yield from visit(child, isinstance(child, ast.ClassDef))
    yield from visit(tree, False)


_parsed: dict[str, ast.Module] = {}


def parsed(path: str) -> ast.Module:
    if path not in _parsed:
        with open(path, encoding="utf-8") as f:
            _parsed[path] = ast.parse(f.read(), path)
    return _parsed[path]


def package_files() -> list[str]:
    return sorted(os.path.join(d, f) for d, _, files in os.walk(PACKAGE)
                  for f in files if f.endswith(".py"))


def folder_of(path: str) -> str:
    return os.path.relpath(os.path.dirname(path), ROOT).replace(os.sep, "/") + "/"


def find_def(path: str, qualname: str) -> FunctionNode | None:
    """The def of `qualname` (``f`` or ``Class.method``) in the module at `path`."""
    scope: list[ast.stmt] = parsed(path).body
    *outer, name = qualname.split(".")
    for part in outer:
        found = [n for n in scope if isinstance(n, ast.ClassDef) and n.name == part]
        if not found:
            return None
        scope = found[0].body
    defs = [n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == name]
    return defs[-1] if defs else None  # the last def wins (property setters come later)


def public_names() -> dict[str, object]:
    """The public API's objects by their public name."""
    cbudget = importlib.import_module("cbudget")
    sklearn = importlib.import_module("cbudget.sklearn")
    names: dict[str, object] = {f"cbudget.{n}": getattr(cbudget, n) for n in cbudget.__all__}
    names.update({f"cbudget.sklearn.{n}": getattr(sklearn, n) for n in sklearn.__all__})
    modules = ["cbudget.plotting"] + [
        f"cbudget.interop.{m.name}" for m in pkgutil.iter_modules(
            importlib.import_module("cbudget.interop").__path__) if not m.name.startswith("_")]
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if (not name.startswith("_") and inspect.isfunction(value)
                    and value.__module__ == module_name):
                names[f"{module_name}.{name}"] = value
    return names


def defined_in_cbudget(obj: object) -> bool:
    return (getattr(obj, "__module__", "") or "").split(".")[0] == "cbudget"


def public_functions() -> dict[str, tuple[str, str]]:
    """The public API's functions and methods: shown name -> (source file, qualname)."""
    found: dict[str, tuple[str, str]] = {}
    for shown, obj in public_names().items():
        if inspect.isfunction(obj) and defined_in_cbudget(obj):
            found[shown] = (inspect.getsourcefile(obj) or "", obj.__qualname__)
        elif inspect.isclass(obj) and defined_in_cbudget(obj):
            for name, value in inspect.getmembers(obj):
                if name.startswith("_") and name not in PUBLIC_DUNDERS:
                    continue
                if isinstance(inspect.getattr_static(obj, name), property):
                    value = inspect.getattr_static(obj, name).fget
                value = getattr(value, "__func__", value)  # classmethod
                if inspect.isfunction(value) and defined_in_cbudget(value):
                    found[f"{shown}.{name}"] = (inspect.getsourcefile(value) or "",
                                                value.__qualname__)
    return found


def measure() -> tuple[dict[str, list[int]], list[str]]:
    """Counts [annotated, total] per row of the table, and the unannotated public names."""
    rows: dict[str, list[int]] = {"all of cbudget/": [0, 0]}
    rows.update({folder: [0, 0] for folder in FOLDERS})
    for path in package_files():
        folder = folder_of(path)
        for node, is_method in functions(parsed(path)):
            ok = fully_annotated(node, is_method)
            for key in ("all of cbudget/", folder):
                if key in rows:
                    rows[key][0] += ok
                    rows[key][1] += 1
    missing = []
    public = rows["public API"] = [0, 0]
    for shown, (path, qualname) in sorted(public_functions().items()):
        # a dataclass's or NamedTuple's generated methods have no def (nor a file) to read
        node = find_def(path, qualname) if os.path.isfile(path) else None
        if node is None:
            continue
        ok = fully_annotated(node, "." in qualname)
        public[0] += ok
        public[1] += 1
        if not ok:
            missing.append(f"{shown}  ({os.path.relpath(path, ROOT)}:{node.lineno})")
    return rows, missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true",
                        help="list the public functions that are not fully annotated")
    args = parser.parse_args(argv)
    sys.path.insert(0, ROOT)
    rows, missing = measure()
    print(f"{'functions':<22}{'annotated':>10}{'total':>8}{'share':>8}")
    for name, (done, total) in rows.items():
        share = f"{100 * done / total:.0f}%" if total else "-"
        print(f"{name:<22}{done:>10}{total:>8}{share:>8}")
    if args.missing:
        print("\nnot fully annotated (public API):")
        print("\n".join(f"  {m}" for m in missing) or "  none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
