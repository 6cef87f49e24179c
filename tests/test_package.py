"""The package `pip install .` builds: it holds every module, declares every package they import, and works from
outside the checkout: the wheel, installed into a fresh virtual environment with its dependencies, imports every
module, plans a run (--dry-run) and trains a short one in one process."""
import ast
import glob
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata

import pytest

from conftest import ROOT

IMPORT_NAMES = {"cv2": "opencv-python-headless", "yaml": "pyyaml"}  # import name -> distribution, where they differ


def project_modules():
    return sorted(os.path.basename(path)[:-3] for path in glob.glob(os.path.join(ROOT, "*.py"))
                  if os.path.basename(path) != "setup.py")


def third_party_imports():
    """{top-level import name: [module, ...]} of every package the modules import that is neither the standard
    library's nor the project's, anywhere in them (a lazy import counts)."""
    mine, found = set(project_modules()), {}
    for name in mine:
        path = os.path.join(ROOT, f"{name}.py")
        for node in ast.walk(ast.parse(open(path).read(), path)):
            if isinstance(node, ast.Import):
                tops = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top not in mine and top not in sys.stdlib_module_names:
                    found.setdefault(top, []).append(name)
    return found


def normalized(distribution):
    return distribution.lower().replace("_", "-")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel of the checkout, built from a copy of it (a build leaves build/ and *.egg-info behind)."""
    source = tmp_path_factory.mktemp("source")
    for path in glob.glob(os.path.join(ROOT, "*.py")):
        shutil.copy(path, source)
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(out), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    [path] = glob.glob(str(out / "*.whl"))
    return path


def wheel_requirements(path):
    """{distribution: extra or None} of the wheel's Requires-Dist."""
    with zipfile.ZipFile(path) as archive:
        name = next(item for item in archive.namelist() if item.endswith(".dist-info/METADATA"))
        lines = archive.read(name).decode().splitlines()
    required = {}
    for line in lines:
        if line.startswith("Requires-Dist:"):
            spec = line.split(":", 1)[1].strip()
            distribution = spec.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].split("!")[0]
            extra = spec.split("extra ==")[1].strip().strip("'\"") if "extra ==" in spec else None
            required.setdefault(normalized(distribution.strip()), extra)
    return required


def test_the_wheel_holds_every_module(wheel):
    with zipfile.ZipFile(wheel) as archive:
        held = sorted(name[:-3] for name in archive.namelist() if name.endswith(".py") and "/" not in name)
    assert held == project_modules()


def test_every_package_the_modules_import_is_declared(wheel):
    required = wheel_requirements(wheel)
    distributions = metadata.packages_distributions()
    missing = {}
    for top, users in third_party_imports().items():
        names = {normalized(d) for d in distributions.get(top, [])} | {normalized(IMPORT_NAMES.get(top, top))}
        if not names & set(required):
            missing[top] = sorted(set(users))
    assert not missing, f"imported but not declared in setup.py: {missing}"


def test_the_declaration_check_sees_an_undeclared_import(monkeypatch):
    """What the test above relies on: an import of a package the wheel does not declare is found."""
    found = third_party_imports()
    assert "tqdm" in found and "numpy" in found and "tensorflow" in found
    assert "a3c" not in found and "os" not in found


def installer():
    """uv beside this Python where `make test` installed it (it reuses the downloads of the first install), else
    pip."""
    uv = os.path.join(os.path.dirname(sys.executable), "uv")
    return (lambda python, *args: [uv, "pip", "install", "-q", "--python", python, *args]) if os.path.exists(uv) \
        else (lambda python, *args: [python, "-m", "pip", "install", "-q", *args])


def test_the_wheel_installs_into_a_fresh_environment_and_runs_from_outside_the_checkout(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    installed = subprocess.run(installer()(python, wheel), capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environ = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}

    def run(*argv, timeout=300):
        return subprocess.run([python, *argv], cwd=str(elsewhere), capture_output=True, text=True, timeout=timeout,
                              env=environ)

    imported = run("-c", "import importlib, os\n"
                         f"for name in {project_modules()!r}:\n"
                         "    module = importlib.import_module(name)\n"
                         f"    assert not module.__file__.startswith({ROOT!r}), module.__file__\n"
                         "print('imported')")
    assert imported.returncode == 0 and "imported" in imported.stdout, imported.stderr[-3000:]
    planned = run("-m", "train", "--env-id", "CartPole-v1", "--num-workers", "2", "--dry-run")
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert "worker.py" in planned.stdout and ROOT not in planned.stdout
    trained = run("-m", "train", "--num-workers", "0", "--env-id", "CartPole-v1", "--log-dir", "run",
                  "--set", "max_global_steps=600", "--set", "envs_per_worker=2")
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert "run over: global step" in trained.stdout
    assert os.path.exists(elsewhere / "run" / "episodes_0.csv") and glob.glob(str(elsewhere / "run" / "train" /
                                                                                  "model.ckpt-*.index"))
