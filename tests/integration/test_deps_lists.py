"""Every Python module the tests need comes from a Debian package that
`make test` installs (issue 29).

`make test` installs the packages of scripts/deps/build*.txt, test*.txt and
slurm*.txt (scripts/deps.sh test) before the first test starts; a package
missing from those lists goes unnoticed on a machine that happens to have it
(python3-torchvision did, once). This test walks the Python files the tests
run (tests/, the job scripts and models under workloads/, the SDK under
python/), collects every module imported outside a `try ... except
ImportError`, and for each one that is neither the standard library nor
loom's own finds the file /usr/bin/python3 would load and the Debian package
that owns it (`dpkg -S`). It fails, naming the module, the file and line
that imports it, when the module is not installed at all or its package is
in none of those lists. It runs under /usr/bin/python3, as the tests do.
"""
import ast
import importlib.util
import os
import subprocess
import sys
import unittest

SRC = os.environ.get("LOOM_SOURCE_DIR", ".")
WALK = ["tests", "workloads", "python"]
LISTS = ("build", "test", "slurm")  # what scripts/deps.sh test reads


def listed_packages():
    pkgs = set()
    d = os.path.join(SRC, "scripts", "deps")
    for name in sorted(os.listdir(d)):
        if name.endswith(".txt") and name.startswith(LISTS):
            with open(os.path.join(d, name)) as f:
                for line in f:
                    pkgs.update(line.split("#", 1)[0].split())
    return pkgs


def optional_lines(tree):
    """Line numbers of imports inside `try: ... except ImportError`."""
    lines = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        names = []
        for h in node.handlers:
            t = h.type
            if t is None:
                continue
            for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if isinstance(e, ast.Name):
                    names.append(e.id)
        if not {"ImportError", "ModuleNotFoundError"} & set(names):
            continue
        for stmt in node.body:
            for sub in ast.walk(stmt):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    lines.add(sub.lineno)
    return lines


def imports(path):
    """(module, line) for every top-level module path imports."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    optional = optional_lines(tree)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in optional:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


def python_files():
    for top in WALK:
        for root, dirs, files in os.walk(os.path.join(SRC, top)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "corpus")]
            for f in files:
                if f.endswith(".py"):
                    yield os.path.join(root, f)


def local_modules(files):
    """Modules that are loom's own: its files and packages."""
    names = {"loom"}
    for p in files:
        names.add(os.path.splitext(os.path.basename(p))[0])
        names.add(os.path.basename(os.path.dirname(p)))
    return names


def owner(path):
    r = subprocess.run(["dpkg", "-S", os.path.realpath(path)], capture_output=True, text=True)
    if r.returncode != 0:
        r = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return r.stdout.split(":", 1)[0].split(",")[0].strip()


class DepsLists(unittest.TestCase):
    def test_every_import_is_a_listed_debian_package(self):
        self.assertEqual(os.path.realpath(sys.executable), os.path.realpath("/usr/bin/python3"),
                         "run this test with /usr/bin/python3, as the tests run")
        files = sorted(python_files())
        self.assertGreater(len(files), 40)
        own = local_modules(files)
        std = set(sys.stdlib_module_names)
        listed = listed_packages()
        seen = {}
        for path in files:
            for mod, line in imports(path):
                if mod in std or mod in own or mod == "__future__":
                    continue
                seen.setdefault(mod, "%s:%d" % (os.path.relpath(path, SRC), line))
        self.assertIn("torch", seen, "the walk should find the tests' torch imports")
        problems = []
        for mod, where in sorted(seen.items()):
            spec = importlib.util.find_spec(mod)
            if spec is None or not (spec.origin or spec.submodule_search_locations):
                problems.append("%s (imported at %s): not installed; add its Debian package to "
                                "a scripts/deps/test*.txt list" % (mod, where))
                continue
            path = spec.origin if spec.origin not in (None, "namespace") else \
                list(spec.submodule_search_locations)[0]
            pkg = owner(path)
            if pkg is None:
                problems.append("%s (imported at %s): %s belongs to no Debian package (installed "
                                "by hand?); the tests may use only Debian's" % (mod, where, path))
            elif pkg not in listed:
                problems.append("%s (imported at %s): its package %s is in no "
                                "scripts/deps/{build,test,slurm}*.txt list" % (mod, where, pkg))
        print("%d files, %d modules outside the standard library: %s" % (
            len(files), len(seen), ", ".join(sorted(seen))))
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_openblas_wherever_torch(self):
        """Every list that installs PyTorch installs OpenBLAS beside it
        (issue 36): without it Debian's torch runs the reference BLAS, about
        25x slower on a 512x512 matmul, a speed no user would have."""
        d = os.path.join(SRC, "scripts", "deps")
        missing = []
        for name in sorted(os.listdir(d)):
            if not name.endswith(".txt"):
                continue
            with open(os.path.join(d, name)) as f:
                pkgs = set(w for line in f for w in line.split("#", 1)[0].split())
            if "python3-torch" in pkgs and "libopenblas0" not in pkgs:
                missing.append(name)
        self.assertEqual(missing, [], "lists with python3-torch but not libopenblas0")

    def test_the_check_finds_a_missing_module(self):
        """The walk and the lookup can fail: an import of a module no
        package provides is reported."""
        tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "loom-deps-lists-probe.py")
        with open(tmp, "w") as f:
            f.write("import os\ntry:\n    import nosuchmod_b\nexcept ImportError:\n    pass\n"
                    "import nosuchmod_a.sub\n")
        try:
            mods = dict(imports(tmp))
        finally:
            os.unlink(tmp)
        self.assertEqual(set(mods), {"os", "nosuchmod_a"})
        self.assertIsNone(importlib.util.find_spec("nosuchmod_a"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
