#!/usr/bin/env bash
# The Python and the virtual environment behind `make train` and `make test`.
#
#   tools/venv.sh pick [PYTHON]          print the interpreter to use: PYTHON, checked, or else the newest
#                                        supported one on the PATH or under pyenv
#   tools/venv.sh found                  print the newest usable interpreter of each supported version
#   tools/venv.sh ensure VENV [PYTHON]   create VENV (or reuse it), install the package with its extras
#
# A shell script rather than Python because its job is to find a Python. pyenv's shims answer `command -v`
# for versions they cannot run ("pyenv: python3.12: command not found"), so every candidate is run, not
# just looked up.
set -euo pipefail

SUPPORTED="3.13 3.12 3.11"  # newest first; keep in step with setup.py's python_requires
SUPPORTED_TEXT="3.11, 3.12 or 3.13"
EXTRAS="test,games"
PYENV_ROOT="${PYENV_ROOT:-$HOME/.pyenv}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

# One line about an interpreter: "MINOR VERSION EXECUTABLE MISSING_MODULES HAS_HEADERS".
PROBE='import importlib.util, os, sys, sysconfig
missing = [m for m in ("venv", "ensurepip") if importlib.util.find_spec(m) is None]
headers = os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
print("%d.%d" % sys.version_info[:2], sys.version.split()[0], sys.executable, ",".join(missing) or "-", int(headers))'

REASONS=()  # why each candidate that runs was passed over, for the error when none fits

# usable PYTHON: set FOUND to "MINOR VERSION EXECUTABLE" if PYTHON runs, is supported and can build the
# games; otherwise add why not to REASONS and fail. (Globals, not output: a $(...) subshell would lose REASONS.)
usable() {
    local info minor version executable missing headers
    info="$("$1" -c "$PROBE" 2>/dev/null)" || return 1
    read -r minor version executable missing headers <<<"$info"
    if [[ " $SUPPORTED " != *" $minor "* ]]; then
        REASONS+=("$1 is Python $version")
        return 1
    fi
    if [[ "$missing" != "-" ]]; then
        REASONS+=("$1 (Python $version) cannot make a virtual environment ($missing missing: on Debian/Ubuntu apt-get install python$minor-venv)")
        return 1
    fi
    if [[ "$headers" != 1 ]]; then
        REASONS+=("$1 (Python $version) has no C headers, which nes-py (Super Mario Bros) compiles against (on Debian/Ubuntu apt-get install python$minor-dev; Fedora: dnf install python$minor-devel)")
        return 1
    fi
    FOUND="$minor $version $executable"
}

# candidates MINOR: the interpreters that may be Python MINOR, best guesses first.
candidates() {
    command -v "python$1" 2>/dev/null || true
    # pyenv's own builds, newest patch release first, whether or not pyenv is on the PATH or activated
    ls -d "$PYENV_ROOT"/versions/"$1".*/bin/"python$1" 2>/dev/null | sort -rV || true
    command -v python3 2>/dev/null || true
}

# best MINOR: set FOUND to the first usable interpreter of version MINOR.
best() {
    local python
    while read -r python; do
        [[ -n "$python" ]] || continue
        if usable "$python" && [[ "${FOUND%% *}" == "$1" ]]; then
            return 0
        fi
    done < <(candidates "$1")
    return 1
}

fail() {
    echo "$*" >&2
    exit 1
}

# reasons DEFAULT: why the candidates were passed over, on one line, or DEFAULT when none ran.
reasons() {
    local text
    text="$(printf '%s; ' "${REASONS[@]}")"
    text="${text%; }"
    echo "${text:-$1}"
}

# pick [PYTHON]: set FOUND to the interpreter to use, or exit with a one-line error.
pick() {
    local minor
    if [[ "${1:-}" =~ ^(python)?(3\.[0-9]+)$ ]]; then
        # a version (PYTHON=3.12 or python3.12): any usable build of it, pyenv's included, as in the search below
        minor="${BASH_REMATCH[2]}"
        [[ " $SUPPORTED " == *" $minor "* ]] || fail "PYTHON=$1: curiosity-agent needs Python $SUPPORTED_TEXT"
        best "$minor" && return 0
        fail "PYTHON=$1: no usable Python $minor on the PATH or under pyenv ($(reasons "not found")); give a path, e.g. PYTHON=/usr/bin/python$minor"
    fi
    if [[ -n "${1:-}" ]]; then
        command -v "$1" >/dev/null 2>&1 || fail "PYTHON=$1 was not found: give a path, e.g. make test PYTHON=/usr/bin/python3.12"
        usable "$1" && return 0
        [[ ${#REASONS[@]} -gt 0 ]] || fail "PYTHON=$1 does not run: $("$1" -c pass 2>&1 | head -n 1)"
        fail "PYTHON=${REASONS[-1]}; curiosity-agent needs Python $SUPPORTED_TEXT"
    fi
    for minor in $SUPPORTED; do
        best "$minor" && return 0
    done
    fail "curiosity-agent needs Python $SUPPORTED_TEXT, on the PATH or under pyenv ($(reasons "none found")): install one, or make ... PYTHON=/path/to/python3.12"
}

# install VENV: the package with its extras, by uv where pip can install it: the same packages from the same
# registry, compiled to bytecode as pip does, in 32 s where pip takes 58 s (Python 3.11, both caches full). pip does
# it otherwise. Without the bytecode every process compiled TensorFlow's modules again at import: the suite took
# twice as long (PYTHONDONTWRITEBYTECODE keeps Python from writing them itself).
install() {
    local python="$1/bin/python"
    if "$python" -m pip install --quiet uv 2>/dev/null; then
        "$python" -m uv pip install --quiet --compile-bytecode --python "$python" -e "$ROOT[$EXTRAS]" && return 0
        echo "uv could not install the packages; trying pip"
    fi
    "$python" -m pip install --quiet --upgrade pip
    "$python" -m pip install --quiet -e "$ROOT[$EXTRAS]"
}

ensure() {
    local venv="$1" wanted="${2:-}" minor version executable current="" stamp reason
    [[ -x "$venv/bin/python" ]] && current="$("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || true)"
    if [[ -z "$wanted" && -n "$current" && " $SUPPORTED " == *" ${current%.*} "* ]]; then
        version="$current"
        reason="the one $venv was made with; make ... PYTHON=... to choose another"
    else
        pick "$wanted"
        read -r minor version executable <<<"$FOUND"
        if [[ -n "$wanted" ]]; then
            reason="chosen with PYTHON=$wanted"
        else
            reason="the newest of 3.13, 3.12 and 3.11 found; make ... PYTHON=... to choose another"
        fi
        if [[ -d "$venv" && "$current" != "$version" ]]; then
            echo "Rebuilding $venv for Python $version (it was made with Python ${current:-unknown})"
            rm -rf "$venv"
        fi
        [[ -d "$venv" ]] || "$executable" -m venv "$venv"
    fi
    echo "Using Python $version in $venv: $reason"
    # Reinstall when the Python or setup.py changed since the last install.
    stamp="$version $(cksum <"$ROOT/setup.py")"
    if [[ "$(cat "$venv/.installed" 2>/dev/null)" != "$stamp" ]]; then
        echo "Installing curiosity-agent[$EXTRAS] into $venv (about 30 seconds the first time)"
        install "$venv"
        echo "$stamp" >"$venv/.installed"
    fi
}

case "${1:-}" in
pick)
    pick "${2:-}"
    echo "${FOUND##* }"
    ;;
found)
    for minor in $SUPPORTED; do
        if best "$minor"; then echo "${FOUND##* }"; fi
    done
    true
    ;;
ensure)
    [[ -n "${2:-}" ]] || fail "usage: tools/venv.sh ensure VENV [PYTHON]"
    ensure "$2" "${3:-}"
    ;;
*)
    fail "usage: tools/venv.sh pick [PYTHON] | found | ensure VENV [PYTHON]"
    ;;
esac
