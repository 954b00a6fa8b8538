"""An instrumented build of the RESP parser so atheris sees its C code's coverage.

atheris measures coverage of Python bytecode; the parser is C (Cython), so
without help libFuzzer would mutate blind.  Clang's ``-fsanitize=fuzzer-no-link``
is the usual answer, but CI has only gcc.  gcc's ``-fsanitize-coverage=trace-pc``
calls ``__sanitizer_cov_trace_pc()`` on every basic block and
``trace-cmp`` calls ``__sanitizer_cov_trace_cmp*()`` on every comparison;
libFuzzer ignores the former today.  So the module is linked with a small
shim (below) that turns those calls into libFuzzer's inline 8-bit counters:
an AFL-style edge hash (this block's address xor the previous one's) and, for
comparisons, the address with the number of differing bits of the operands
(libFuzzer's own "value profile" idea), which leads the fuzzer byte by byte
towards the tokens the parser compares against (``*``, ``$``, CR, digits...).

The shim's functions are hidden, so calls from the module bind to them and not
to the no-op versions atheris exports.  ``register()`` hands the counter table
to the libFuzzer inside atheris (the same shared object atheris loads when
fuzzing starts).

It is compiled as setup.py compiles it (module ``cxlredis._resp``, its .pxd
beside it in ext/cxlredis/) into ``build/fuzz/`` (git-ignored), keyed by
a hash of the .pyx, the .pxd and this file, in a few seconds.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import importlib.machinery
import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# CXLREDIS_FUZZ_PYX points at another copy of the parser's source (e.g. an older version).
PYX = Path(os.environ.get("CXLREDIS_FUZZ_PYX", REPO_ROOT / "ext" / "cxlredis" / "_resp.pyx"))
PXD = REPO_ROOT / "ext" / "cxlredis" / "_resp.pxd"   # its typed boundary (attributes), beside it
MODULE = "cxlredis._resp"
BUILD_DIR = REPO_ROOT / "build" / "fuzz"
# The same directives as setup.py's release build: fuzz what ships.
DIRECTIVES = ["language_level=3", "boundscheck=False", "wraparound=False", "cdivision=True"]
COUNTERS = 1 << 16

SHIM = r"""
#include <stdint.h>
#include <stddef.h>

#define COUNTERS %(counters)d
#define HIDDEN __attribute__((visibility("hidden")))

static uint8_t counters[COUNTERS];
static uintptr_t pcs[2 * COUNTERS];     /* (pc, flags) per counter, as libFuzzer wants */
static uintptr_t previous;

static inline uint32_t mix(uintptr_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
    return (uint32_t)x %% COUNTERS;
}

static inline void hit(uint32_t slot) {
    uint8_t c = counters[slot];
    counters[slot] = c == 255 ? 255 : c + 1;
}

HIDDEN void __sanitizer_cov_trace_pc(void) {
    uintptr_t here = (uintptr_t)__builtin_return_address(0);
    hit(mix(here ^ previous));
    previous = here >> 1;
}

static inline void compare(uintptr_t pc, uint64_t a, uint64_t b) {
    hit(mix(pc * 131 + __builtin_popcountll(a ^ b) + 1));
}

#define CMP(name, type) \
    HIDDEN void name(type a, type b) { compare((uintptr_t)__builtin_return_address(0), a, b); }
CMP(__sanitizer_cov_trace_cmp1, uint8_t)
CMP(__sanitizer_cov_trace_cmp2, uint16_t)
CMP(__sanitizer_cov_trace_cmp4, uint32_t)
CMP(__sanitizer_cov_trace_cmp8, uint64_t)
CMP(__sanitizer_cov_trace_const_cmp1, uint8_t)
CMP(__sanitizer_cov_trace_const_cmp2, uint16_t)
CMP(__sanitizer_cov_trace_const_cmp4, uint32_t)
CMP(__sanitizer_cov_trace_const_cmp8, uint64_t)

HIDDEN void __sanitizer_cov_trace_cmpf(float a, float b) {
    compare((uintptr_t)__builtin_return_address(0), a == b, 1);
}
HIDDEN void __sanitizer_cov_trace_cmpd(double a, double b) {
    compare((uintptr_t)__builtin_return_address(0), a == b, 1);
}

/* cases[0] = number of cases, cases[1] = bit width, then the case values */
HIDDEN void __sanitizer_cov_trace_switch(uint64_t value, uint64_t *cases) {
    uintptr_t pc = (uintptr_t)__builtin_return_address(0);
    for (uint64_t i = 0; i < cases[0]; i++)
        compare(pc + i, value, cases[2 + i]);
}

void cxlfuzz_tables(uint8_t **counters_begin, uint8_t **counters_end,
                    uintptr_t **pcs_begin, uintptr_t **pcs_end) {
    for (size_t i = 0; i < COUNTERS; i++)
        pcs[2 * i] = i + 1;              /* any distinct non-zero "address" */
    *counters_begin = counters;
    *counters_end = counters + COUNTERS;
    *pcs_begin = pcs;
    *pcs_end = pcs + 2 * COUNTERS;
}
""" % {"counters": COUNTERS}


def _fingerprint() -> str:
    digest = hashlib.sha256(PYX.read_bytes())
    if PXD.exists():
        digest.update(PXD.read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:16]


def build() -> Path:
    """Cythonize and compile the instrumented parser; returns the extension's path."""
    out = BUILD_DIR / _fingerprint()
    module = out / ("_resp" + sysconfig.get_config_var("EXT_SUFFIX"))
    if module.exists():
        return module
    if BUILD_DIR.exists():               # builds of older sources
        for old in BUILD_DIR.iterdir():
            shutil.rmtree(old, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    c_source = out / "_resp.c"
    shim = out / "sancov_shim.c"
    shim.write_text(SHIM)
    cython = [sys.executable, "-m", "cython", "-3", "--module-name", MODULE,
              "-I", str(REPO_ROOT / "ext"), str(PYX), "-o", str(c_source)]
    for directive in DIRECTIVES:
        cython += ["-X", directive]
    done = subprocess.run(cython, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"cython failed on {PYX}:\n{done.stdout}{done.stderr}")
    include = sysconfig.get_paths()["include"]
    # The shim is compiled without instrumentation: its callbacks must not call themselves.
    shim_object = out / "sancov_shim.o"
    subprocess.run(["gcc", "-O2", "-fPIC", "-c", str(shim), "-o", str(shim_object)],
                   check=True, capture_output=True, text=True)
    partial = out / "module.tmp.so"
    subprocess.run(["gcc", "-O1", "-g", "-fPIC", "-shared", f"-I{include}", f"-I{REPO_ROOT / 'ext'}",
                    "-fsanitize-coverage=trace-pc,trace-cmp", str(c_source), str(shim_object),
                    "-o", str(partial)],
                   check=True, capture_output=True, text=True)
    partial.rename(module)
    return module


def load(path: Path):
    """Import the instrumented module (not into sys.modules) and register its counters with libFuzzer."""
    loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
    spec = importlib.util.spec_from_loader(MODULE, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    register(path)
    return module


def register(path: Path) -> None:
    begin, end = ctypes.c_void_p(), ctypes.c_void_p()
    pcs_begin, pcs_end = ctypes.c_void_p(), ctypes.c_void_p()
    ctypes.CDLL(str(path)).cxlfuzz_tables(ctypes.byref(begin), ctypes.byref(end),
                                          ctypes.byref(pcs_begin), ctypes.byref(pcs_end))
    libfuzzer = ctypes.CDLL(str(_atheris_core()))
    libfuzzer.__sanitizer_cov_8bit_counters_init(begin, end)
    libfuzzer.__sanitizer_cov_pcs_init(pcs_begin, pcs_end)


def _atheris_core() -> Path:
    import atheris
    package = Path(atheris.__file__).parent
    return package / ("core_with_libfuzzer" + sysconfig.get_config_var("EXT_SUFFIX"))
