"""Build script: cythonize ``cbudget/_core/*.pyx`` with numpy headers and, when the
compiler supports it, OpenMP (test-compiled first; a serial build otherwise)."""
import os
import sys
import tempfile
import textwrap
from glob import glob

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

OPENMP_TEST_PROGRAM = textwrap.dedent(
    """
    #include <omp.h>
    int main(void) {
        int n = 0;
        #pragma omp parallel reduction(+:n)
        n += omp_get_num_threads() > 0;
        return n > 0 ? 0 : 1;
    }
    """
)


def openmp_flags(compiler):
    """Return (compile_args, link_args) enabling OpenMP, or ([], []) when unavailable.

    Set ``CBUDGET_NO_OPENMP=1`` to force the serial build.
    """
    if os.environ.get("CBUDGET_NO_OPENMP", "0") not in ("", "0"):
        return [], []
    if sys.platform == "win32":
        candidates = [(["/openmp"], [])]
    elif sys.platform == "darwin":
        candidates = [(["-Xpreprocessor", "-fopenmp"], ["-lomp"]), (["-fopenmp"], ["-fopenmp"])]
    else:
        candidates = [(["-fopenmp"], ["-fopenmp"])]
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "test_openmp.c")
        with open(source, "w") as f:
            f.write(OPENMP_TEST_PROGRAM)
        for compile_args, link_args in candidates:
            try:
                objects = compiler.compile([source], output_dir=tmp, extra_postargs=compile_args)
                compiler.link_executable(
                    objects, "test_openmp", output_dir=tmp, extra_postargs=link_args
                )
                return compile_args, link_args
            except Exception:  # noqa: BLE001 - any compiler failure means "no OpenMP"
                continue
    return [], []


class BuildExtWithOpenMP(build_ext):
    def build_extensions(self):
        compile_args, link_args = openmp_flags(self.compiler)
        if not compile_args:
            print("cbudget: OpenMP not available; building the serial version")
        for ext in self.extensions:
            ext.extra_compile_args = list(ext.extra_compile_args) + compile_args
            ext.extra_link_args = list(ext.extra_link_args) + link_args
        super().build_extensions()


def extensions():
    base_args = [] if sys.platform == "win32" else ["-O3"]
    exts = []
    for pyx in sorted(glob(os.path.join("cbudget", "_core", "*.pyx"))):
        name = pyx[: -len(".pyx")].replace(os.sep, ".")
        exts.append(
            Extension(
                name,
                [pyx],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=base_args,
            )
        )
    return cythonize(
        exts,
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
            "nonecheck": False,
        },
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExtWithOpenMP})
