"""Builds the C unit tests (tests/c/test_*.c) with gcc under ASan and UBSan, warnings as
errors, and runs each binary: the arena's C (ext/arena/, one unit through arena.c) and
the glob matcher (ext/globmatch.c) are compiled here with the strictest flags we hold
our own C to, so any warning in it fails the suite."""
import pathlib
import shutil
import subprocess

import pytest

HERE = pathlib.Path(__file__).parent
EXT = HERE.parent.parent / "ext"
FLAGS = ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-g", "-O1",
         "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
# each program and the separately compiled sources it links
PROGRAMS = {
    "test_arena": [],                       # includes arena/arena.c itself
    "test_glob": [EXT / "globmatch.c"],
}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_c_program(program, tmp_path):
    binary = tmp_path / program
    build = subprocess.run(["gcc", *FLAGS, f"-I{EXT}", f"-I{HERE}", "-o", str(binary),
                            str(HERE / f"{program}.c"), *map(str, PROGRAMS[program])],
                           capture_output=True, text=True)
    assert build.returncode == 0, f"{program} does not build:\n{build.stderr}"
    run = subprocess.run([str(binary), str(tmp_path)], capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, f"{program} failed (exit {run.returncode}):\n{run.stdout}\n{run.stderr}"
