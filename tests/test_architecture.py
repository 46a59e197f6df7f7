"""The package's structure (docs/architecture.md, "Layers"): no import cycle, no module
importing another module's underscore names (the compiled kernels in ``_core`` excepted),
no reaching into another object's underscore members."""
import ast
import functools
from pathlib import Path

import cbudget

PACKAGE = Path(cbudget.__file__).parent


def _modules():
    """{dotted name: path} of every Python module of the package."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


@functools.cache
def _tree(path):
    """The module's syntax tree, parsed once for every test here (nothing changes it)."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _imports(name, path):
    """(imported module, imported names, line, at module level) of every import in the
    module, relative imports resolved (found once for every test here)."""
    return tuple(_import_statements(name, path))


def _import_statements(name, path):
    tree = _tree(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    in_functions = {id(n) for node in ast.walk(tree)
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for n in ast.walk(node)}
    type_checking = set()
    for node in tree.body:   # imports under `if TYPE_CHECKING:` are not run
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_checking.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in type_checking:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            names = [alias.name for alias in node.names]
            # `from . import module` imports a module, not a name
            submodules = [n for n in names if f"{target}.{n}" in MODULES]
            for sub in submodules:
                yield f"{target}.{sub}", [], node.lineno, id(node) not in in_functions
            rest = [n for n in names if n not in submodules]
            if rest:
                yield target, rest, node.lineno, id(node) not in in_functions
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno, id(node) not in in_functions


def test_no_function_local_imports_of_the_package():
    """Imports of cbudget's own modules sit at the top of a module: a function-local one
    is how an import cycle gets hidden."""
    local = [f"{path.name}:{line} imports {target}"
             for name, path in MODULES.items()
             for target, _, line, top in _imports(name, path)
             if target.startswith("cbudget") and not top]
    assert local == []


def test_no_import_cycles():
    graph = {name: {target for target, _, _, _ in _imports(name, path) if target in MODULES}
             for name, path in MODULES.items()}
    # a package imports its parents' __init__ implicitly, which is not a cycle of ours
    visiting, done, cycles = [], set(), []

    def visit(node):
        if node in done:
            return
        if node in visiting:
            cycles.append(visiting[visiting.index(node):] + [node])
            return
        visiting.append(node)
        for target in sorted(graph[node]):
            if not node.startswith(target + ".") and target != node:
                visit(target)
        visiting.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)
    assert cycles == []


def test_no_module_imports_another_modules_underscore_names():
    wrong = []
    for name, path in MODULES.items():
        for target, names, line, _ in _imports(name, path):
            if not target.startswith("cbudget") or target.startswith("cbudget._core"):
                continue
            wrong += [f"{path.name}:{line} {target}.{n}" for n in names
                      if n.startswith("_") and not n.startswith("__")]
    assert wrong == []


def _private_members(tree):
    """The underscore names a module defines: methods, and attributes it assigns."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_no_access_to_other_modules_underscore_members():
    """``obj._member`` only for members the module itself defines: a class's private
    members are used by its own module, never by another one."""
    wrong = []
    for path in MODULES.values():
        tree = _tree(path)
        own = _private_members(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and node.attr not in own
                    and not (isinstance(node.value, ast.Name)
                             and node.value.id in ("self", "cls"))):
                wrong.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert wrong == []

