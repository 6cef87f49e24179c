"""tools/venv.sh, behind `make train` / `make test`: which Python it picks, and when it rebuilds the venv.

The interpreters here are fakes (shell scripts answering the script's probe), put first on the PATH, so that
each case sets exactly which versions a machine has.
"""
import os
import re
import stat
import subprocess

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "tools", "venv.sh")


def fake_python(path, version, missing="-", headers=1, broken=False, uv=True):
    """A script at `path` that answers like Python `version`; `broken` answers like a pyenv shim without it;
    without `uv`, pip cannot install uv."""
    minor = version.rsplit(".", 1)[0]
    if broken:
        body = f'echo "pyenv: python{minor}: command not found" >&2\nexit 127\n'
    else:
        # -c PROBE -> the probe line; -c <other> -> the version; -m venv DIR -> a copy of itself as DIR/bin/python;
        # -m pip ... and -m uv ... -> logged, so that the test sees whether and how an install ran.
        refuse = "" if uv else '[[ "$*" == *" uv" ]] && exit 1; '
        body = f"""case "$1 $2" in
  "-c "*importlib*) echo "{minor} {version} $0 {missing} {headers}" ;;
  "-c "*) echo "{version}" ;;
  "-m venv") mkdir -p "$3/bin" && cp "$0" "$3/bin/python" ;;
  "-m pip") {refuse}echo "pip {version} $*" >> "$PIP_LOG" ;;
  "-m uv") echo "uv {version} $*" >> "$PIP_LOG" ;;
esac
"""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write("#!/bin/bash\n" + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def run(tmp_path, *args):
    """Run the script with only the fakes in tmp_path/bin (and tmp_path/pyenv) as Pythons."""
    fakes = str(tmp_path / "bin")
    os.makedirs(fakes, exist_ok=True)
    for name in ("python3", "python3.11", "python3.12", "python3.13"):  # hide the machine's own
        if not os.path.exists(os.path.join(fakes, name)):
            fake_python(os.path.join(fakes, name), "3.13.0", broken=True)
    env = dict(os.environ, PATH=fakes + os.pathsep + os.environ["PATH"], PYENV_ROOT=str(tmp_path / "pyenv"),
               PIP_LOG=str(tmp_path / "pip.log"))
    return subprocess.run(["bash", SCRIPT, *args], env=env, capture_output=True, text=True, timeout=60,
                          cwd=str(tmp_path))


def test_picks_the_newest_supported_python_that_runs(tmp_path):
    fake_python(tmp_path / "bin" / "python3.11", "3.11.9")
    fake_python(tmp_path / "bin" / "python3.12", "3.12.3")
    fake_python(tmp_path / "bin" / "python3", "3.10.4")
    # python3.13 is a shim that cannot run it: passed over, not picked
    result = run(tmp_path, "pick")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "bin" / "python3.12")
    found = run(tmp_path, "found").stdout.split()
    assert found == [str(tmp_path / "bin" / "python3.12"), str(tmp_path / "bin" / "python3.11")]


def test_finds_pyenv_builds_that_are_not_on_the_path(tmp_path):
    fake_python(tmp_path / "bin" / "python3.12", "3.12.3")
    fake_python(tmp_path / "pyenv" / "versions" / "3.13.0" / "bin" / "python3.13", "3.13.0")
    fake_python(tmp_path / "pyenv" / "versions" / "3.13.2" / "bin" / "python3.13", "3.13.2")
    result = run(tmp_path, "pick")
    assert result.stdout.strip() == str(tmp_path / "pyenv" / "versions" / "3.13.2" / "bin" / "python3.13")


def test_passes_over_a_python_that_cannot_make_a_venv_or_build_nes_py(tmp_path):
    fake_python(tmp_path / "bin" / "python3.13", "3.13.1", missing="ensurepip")
    fake_python(tmp_path / "bin" / "python3.12", "3.12.3", headers=0)
    fake_python(tmp_path / "bin" / "python3.11", "3.11.9")
    assert run(tmp_path, "pick").stdout.strip() == str(tmp_path / "bin" / "python3.11")
    os.remove(tmp_path / "bin" / "python3.11")
    fake_python(tmp_path / "bin" / "python3.11", "3.11.9", broken=True)
    result = run(tmp_path, "pick")
    assert result.returncode == 1 and result.stdout == ""
    message = result.stderr.strip()
    assert "\n" not in message
    assert "needs Python 3.11, 3.12 or 3.13" in message
    assert "apt-get install python3.13-venv" in message and "apt-get install python3.12-dev" in message


def test_no_supported_python_is_a_one_line_error(tmp_path):
    fake_python(tmp_path / "bin" / "python3", "3.10.4")
    result = run(tmp_path, "pick")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "python3 is Python 3.10.4" in result.stderr and "PYTHON=" in result.stderr
    result = run(tmp_path, "pick", str(tmp_path / "bin" / "python3"))
    assert result.returncode == 1
    assert result.stderr.strip().endswith("is Python 3.10.4; curiosity-agent needs Python 3.11, 3.12 or 3.13")
    result = run(tmp_path, "ensure", ".venv", "/opt/no-such-python")
    assert result.returncode == 1 and "PYTHON=/opt/no-such-python was not found" in result.stderr
    shim = str(tmp_path / "bin" / "python3.13")  # the one run() puts there
    result = run(tmp_path, "ensure", ".venv", shim)
    assert result.returncode == 1
    assert result.stderr == f"PYTHON={shim} does not run: pyenv: python3.13: command not found\n"
    result = run(tmp_path, "ensure", ".venv", "python3.13")
    assert result.returncode == 1
    assert result.stderr.startswith("PYTHON=python3.13: no usable Python 3.13 on the PATH or under pyenv")
    assert not (tmp_path / ".venv").exists()


def test_a_version_as_python_finds_its_pyenv_build(tmp_path):
    """`make test PYTHON=python3.12` works under pyenv even when its shim does not run 3.12."""
    fake_python(tmp_path / "bin" / "python3.12", "3.12.1", broken=True)
    fake_python(tmp_path / "pyenv" / "versions" / "3.12.1" / "bin" / "python3.12", "3.12.1")
    pyenv_build = str(tmp_path / "pyenv" / "versions" / "3.12.1" / "bin" / "python3.12")
    assert run(tmp_path, "pick", "python3.12").stdout.strip() == pyenv_build
    assert run(tmp_path, "pick", "3.12").stdout.strip() == pyenv_build
    result = run(tmp_path, "pick", "3.10")
    assert result.returncode == 1 and result.stderr == "PYTHON=3.10: curiosity-agent needs Python 3.11, 3.12 or 3.13\n"


def test_ensure_reuses_the_venv_until_the_python_or_setup_py_changes(tmp_path):
    fake_python(tmp_path / "bin" / "python3.11", "3.11.9")
    fake_python(tmp_path / "bin" / "python3.13", "3.13.1")
    pip_log = tmp_path / "pip.log"

    def installs():
        return len(re.findall(r"pip install --quiet .*-e ", pip_log.read_text())) if pip_log.exists() else 0

    first = run(tmp_path, "ensure", ".venv")
    assert first.returncode == 0, first.stderr
    assert "Using Python 3.13.1 in .venv: the newest" in first.stdout and installs() == 1
    # the install ran by uv, with bytecode, under the venv's own Python
    assert re.search(r"uv 3\.13\.1 -m uv pip install --quiet --compile-bytecode --python \S*\.venv/bin/python -e ",
                     pip_log.read_text()), pip_log.read_text()

    again = run(tmp_path, "ensure", ".venv")
    assert "the one .venv was made with" in again.stdout and installs() == 1

    chosen = run(tmp_path, "ensure", ".venv", "python3.11")
    assert "Rebuilding .venv for Python 3.11.9 (it was made with Python 3.13.1)" in chosen.stdout
    assert "chosen with PYTHON=python3.11" in chosen.stdout and installs() == 2
    assert (tmp_path / ".venv" / ".installed").read_text().startswith("3.11.9 ")

    # a venv made by hand with a supported Python is kept when no PYTHON is given, but installed into once
    os.remove(tmp_path / ".venv" / ".installed")
    kept = run(tmp_path, "ensure", ".venv")
    assert "Using Python 3.11.9 in .venv" in kept.stdout and installs() == 3


def test_where_pip_cannot_install_uv_pip_installs_the_package(tmp_path):
    fake_python(tmp_path / "bin" / "python3.13", "3.13.1", uv=False)
    result = run(tmp_path, "ensure", ".venv")
    assert result.returncode == 0, result.stderr
    log = (tmp_path / "pip.log").read_text()
    assert "uv 3.13.1" not in log and re.search(r"pip 3\.13\.1 -m pip install --quiet -e ", log), log
