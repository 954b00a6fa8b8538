"""Builds the Cython core (ext/) into cxlredis._store, ._resp, ._numbers, ._fastpath, ._cluster
and ._strops.

ext/cxlredis/ holds each extension's .pyx beside its .pxd (its typed boundary), laid out
as the package they build into, so `cimport cxlredis._store` finds ext/cxlredis/_store.pxd;
the C they wrap lives in ext/arena/, ext/cluster/, ext/strops/ and ext/globmatch.[ch].

Debug switches, as environment variables read at build time:
  CXLREDIS_ANNOTATE=1   write Cython's HTML annotation next to each .pyx
  CXLREDIS_TRACE=1      compile with line tracing (profilers, coverage)
  CXLREDIS_DEBUG=1      -O0 -g and bounds/wraparound checks on
  CXLREDIS_ONLY=_resp   build just the named extension(s), comma separated
"""
import glob
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("CXLREDIS_DEBUG") == "1"
TRACE = os.environ.get("CXLREDIS_TRACE") == "1"
EXTENSIONS = os.environ.get("CXLREDIS_ONLY", "_store,_resp,_numbers,_fastpath,_cluster,_strops").split(",")

compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]
macros = [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1")] if TRACE else []
directives = {
    "language_level": "3",
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "cdivision": True,
    "linetrace": TRACE,
    "embedsignature": True,
}


# Our C in ext/ (not the .c files Cython generates, ext/cxlredis/_*.c): what the .pyx
# files include, so an edit rebuilds them
OUR_C = sorted(path for path in glob.glob("ext/**/*.[ch]", recursive=True)
               if not os.path.basename(path).startswith("_"))
# C compiled beside an extension's .pyx (the arena's C is included by _store.pyx instead,
# one translation unit with it)
C_SOURCES = {"_store": ["ext/globmatch.c"],
             "_strops": ["ext/strops/bitops.c", "ext/strops/lcs.c", "ext/strops/hll.c"]}
# HyperLogLog's estimates must be Redis's to the last bit: no a * b + c fused into one
# rounding (what GCC does by default on a CPU with FMA), as Redis's x86-64 build has none
C_FLAGS = {"_strops": ["-ffp-contract=off"]}


def extension(name):
    return Extension(
        f"cxlredis.{name}",
        [f"ext/cxlredis/{name}.pyx", *C_SOURCES.get(name, [])],
        include_dirs=["ext"],
        depends=OUR_C,
        extra_compile_args=compile_args + C_FLAGS.get(name, []),
        define_macros=macros,
    )


setup(
    ext_modules=cythonize(
        [extension(name) for name in EXTENSIONS],
        compiler_directives=directives,
        include_path=["ext"],
        annotate=os.environ.get("CXLREDIS_ANNOTATE") == "1",
    ),
)
