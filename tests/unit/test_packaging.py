"""The README's `pip install .` installs a server that starts: the wheel carries every
module and data file of the package (a subpackage left out of it once made the installed
server fail at its first import)."""
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def checkout_files():
    """The checkout's files as a clean clone has them (tracked, or new and not ignored):
    no build/ directory left by an earlier build to hide what the configuration omits."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [path for path in out.stdout.splitlines() if (ROOT / path).is_file()]


def test_wheel_carries_every_module(tmp_path):
    files = checkout_files()
    source = tmp_path / "src"
    for path in files:
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, source / path)
    expected = {path for path in files
                if path.startswith("cxlredis/") and path.endswith((".py", ".lua"))}
    # one small extension is enough to build the wheel; the others are not what is checked
    env = dict(os.environ, CXLREDIS_ONLY="_numbers")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(source)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = tmp_path.glob("cxlredis-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    missing = sorted(expected - shipped)
    assert not missing, f"the wheel lacks {missing}"
