"""Build script: cythonize ``cbudget/_core/*.pyx`` with numpy headers and, when the
compiler supports it, OpenMP (test-compiled first; a serial build otherwise).

Environment:
    CBUDGET_NO_OPENMP=1       build the serial version even when OpenMP is available
    CBUDGET_REQUIRE_OPENMP=1  fail instead of falling back to the serial version (release
                              wheels set it, so a broken OpenMP set-up cannot ship silently)
    CFLAGS / CPPFLAGS / LDFLAGS  are honoured, also by the OpenMP test program (e.g. the
                              include and library paths of Homebrew's libomp on macOS)
"""
import os
import shlex
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


def _env_flag(name):
    return os.environ.get(name, "0") not in ("", "0")


def openmp_flags(compiler):
    """Return (compile_args, link_args) enabling OpenMP, or ([], []) when unavailable or
    disabled with ``CBUDGET_NO_OPENMP=1``."""
    if _env_flag("CBUDGET_NO_OPENMP"):
        return [], []
    if sys.platform == "win32":
        candidates = [(["/openmp"], [])]
    elif sys.platform == "darwin":
        candidates = [(["-Xpreprocessor", "-fopenmp"], ["-lomp"]), (["-fopenmp"], ["-fopenmp"])]
    else:
        candidates = [(["-fopenmp"], ["-fopenmp"])]
    # distutils passes LDFLAGS to shared-object links only; the test program needs them too
    ldflags = shlex.split(os.environ.get("LDFLAGS", ""))
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "test_openmp.c")
        with open(source, "w") as f:
            f.write(OPENMP_TEST_PROGRAM)
        for compile_args, link_args in candidates:
            try:
                objects = compiler.compile([source], output_dir=tmp, extra_postargs=compile_args)
                compiler.link_executable(
                    objects, "test_openmp", output_dir=tmp, extra_preargs=ldflags,
                    extra_postargs=link_args
                )
                return compile_args, link_args
            except Exception:  # noqa: BLE001 - any compiler failure means "no OpenMP"
                continue
    return [], []


class BuildExtWithOpenMP(build_ext):
    def build_extensions(self):
        compile_args, link_args = openmp_flags(self.compiler)
        if not compile_args:
            if _env_flag("CBUDGET_REQUIRE_OPENMP") and not _env_flag("CBUDGET_NO_OPENMP"):
                sys.exit("cbudget: CBUDGET_REQUIRE_OPENMP is set but the compiler cannot "
                         "build and link an OpenMP program (see CFLAGS / LDFLAGS)")
            print("cbudget: OpenMP disabled or not available; building the serial version")
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
