"""The C of ext/ on its own: the arena (ext/arena/, its collections' trees among it), glob matching (ext/globmatch.c) and the
bitmap, LCS and HyperLogLog operations (ext/strops/).

Each is compiled with -Wall -Wextra -Werror as the library it is (so any warning in our
C fails here, whatever the extension build shows), and its unit tests (tests/c/*.c,
with their own harness, check.h) are built with ASan and UBSan and run; a failed
check, a sanitizer report or a crash fails the test with the program's output.
"""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXT = REPO / "ext"
HERE = Path(__file__).resolve().parent
GCC = shutil.which("gcc")

STRICT = ["-std=gnu11", "-Wall", "-Wextra", "-Werror"]
# -fno-sanitize-recover: a UBSan finding ends the program with an error (by default it
# only prints and goes on)
SANITIZED = [*STRICT, "-g", "-O1", "-fno-omit-frame-pointer",
             "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]

pytestmark = pytest.mark.skipif(GCC is None, reason="gcc is not installed")


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=300, **kwargs)


def compile_or_fail(command):
    built = run(command)
    if built.returncode:
        pytest.fail(f"{' '.join(map(str, command))}\n{built.stdout}{built.stderr}")


@pytest.mark.parametrize("source", ["arena/arena.c", "globmatch.c", "strops/bitops.c", "strops/lcs.c",
                                    "strops/hll.c"])
@pytest.mark.parametrize("optimize", ["-O0", "-O2"])
def test_compiles_without_warnings(tmp_path, source, optimize):
    # -O2 too: some warnings (maybe-uninitialized, format truncation) need the optimizer
    compile_or_fail([GCC, *STRICT, optimize, "-c", EXT / source, "-o", tmp_path / "unit.o"])


UNITS = {
    "test_arena": [HERE / "test_arena.c"],
    "test_tree": [HERE / "test_tree.c"],
    "test_glob": [HERE / "test_glob.c", EXT / "globmatch.c"],
    "test_strops": [HERE / "test_strops.c", EXT / "strops" / "bitops.c", EXT / "strops" / "lcs.c"],
    "test_hll": [HERE / "test_hll.c", EXT / "strops" / "hll.c", "-lm"],
}


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_unit(tmp_path, unit):
    binary = tmp_path / unit
    compile_or_fail([GCC, *SANITIZED, "-I", EXT, *UNITS[unit], "-o", binary])
    # the arena over a real file goes where the server's default arena does, tmpfs
    # (/dev/shm), which can allocate and punch pages
    scratch = Path(tempfile.mkdtemp(prefix="cxlredis-ctest-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        result = run([binary, scratch], env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1",
                                             "UBSAN_OPTIONS": "print_stacktrace=1"})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if result.returncode != 0:
        pytest.fail(f"{unit} exited with {result.returncode}\n{result.stdout}{result.stderr}")
    assert " 0 failed" in result.stdout, result.stdout
