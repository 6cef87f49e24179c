"""The package `pip install .` builds: it holds every module, declares every package they import, and works from
outside the checkout: the wheel, installed into a fresh virtual environment with its dependencies, imports every
module, plans a run (--dry-run) and trains a short A3C run in one process, which a relaunch resumes."""
import ast
import glob
import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata

import pytest

import logdir
import status
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


@pytest.mark.install
def test_the_wheel_installs_into_a_fresh_environment_and_runs_from_outside_the_checkout(wheel, tmp_path):
    """Installed with its dependencies into a fresh environment, run from another directory: every module imports
    from the installation, the launcher plans a run, and A3C trains in one process (`--num-workers 0`: the
    cluster's worker placed in the launcher's process), checkpoints, beats the heartbeat the status view reads, and
    a relaunch resumes from its checkpoint, with the evaluation process beside it until the last checkpoint is
    evaluated."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    installed = subprocess.run(installer()(python, wheel), capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # bytecode written by the first process that imports a module, read by the others (without it each process
    # compiles TensorFlow's modules again: 14 s of CPU an import here, against 6)
    environ = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}

    def start(*argv):
        return subprocess.Popen([python, *argv], cwd=str(elsewhere), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=environ)

    def finish(process):
        stdout, stderr = process.communicate(timeout=300)
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def train(steps, *extra):
        return start("-m", "train", "--num-workers", "0", "--env-id", "CartPole-v1", "--log-dir", "run", "--set",
                     f"max_global_steps={steps}", "--set", "envs_per_worker=2", *extra)

    # the launcher's plan beside the imports (it imports no TensorFlow); the run after them, from their bytecode
    importing = start("-c", "import importlib, os\n"
                            f"for name in {project_modules()!r}:\n"
                            "    module = importlib.import_module(name)\n"
                            f"    assert not module.__file__.startswith({ROOT!r}), module.__file__\n"
                            "print('imported')")
    planning = start("-m", "train", "--env-id", "CartPole-v1", "--num-workers", "2", "--dry-run")
    imported, planned = finish(importing), finish(planning)
    first = finish(train(1000))
    assert imported.returncode == 0 and "imported" in imported.stdout, imported.stderr[-3000:]
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert "worker.py" in planned.stdout and ROOT not in planned.stdout

    log_dir = elsewhere / "run"
    assert first.returncode == 0, first.stderr[-3000:]
    assert "run over: global step" in first.stdout and "step/s" in first.stderr, "the progress bar"
    config = json.loads((log_dir / "config.json").read_text())
    assert config["run"]["algo"] == "a3c" and config["run"]["num_workers"] == 0 and config["preset"] == "classic"
    beat = json.loads((log_dir / "status_local.json").read_text())
    assert (beat["name"], beat["state"]) == ("local", "stopped") and beat["global_step"] >= 1000, beat
    assert beat["steps_trained"] == beat["global_step"], "one worker: every step of the run is its own"
    rows = logdir.read_rows(str(log_dir / "episodes_0.csv"))
    assert len(rows) > 10 and all(int(row["global_step"]) <= beat["global_step"] for row in rows)
    assert "\nlocal " in status.render(status.collect(str(log_dir)))
    saved = sorted(glob.glob(str(log_dir / "train" / "model.ckpt-*.index")))

    second = finish(train(2000, "--eval-every", "1000", "--eval-episodes", "2"))
    assert second.returncode == 0, second.stderr[-3000:]
    # the evaluation process beside it (demo.py --watch), waited for at the end: the last checkpoint evaluated
    evaluations = logdir.read_rows(str(log_dir / "eval.csv"))
    assert evaluations and int(evaluations[-1]["global_step"]) >= 2000, evaluations
    assert "is evaluated: done" in (log_dir / "eval.out").read_text()
    assert "resuming from" in second.stderr and f"model.ckpt-{beat['global_step']}" in second.stderr, saved
    again = json.loads((log_dir / "status_local.json").read_text())
    assert again["global_step"] >= 2000 and again["steps_trained"] == again["global_step"] - beat["global_step"]
    assert len(logdir.read_rows(str(log_dir / "episodes_0.csv"))) > len(rows), "appended to"
