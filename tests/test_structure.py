"""The shape of the code: the top-level modules import one another without a cycle, a library never imports a
command, and no file but the algorithms' table compares an algorithm's name (nor, outside curiosity.py, a bonus's).

Read from the source (ast), so that a lazy import inside a function counts as much as one at the top."""
import ast
import dataclasses
import glob
import os
import re

import pytest

import algorithms
import constants
from conftest import ROOT

COMMANDS = {"train", "worker", "demo", "plots", "status"}  # what a user runs; libraries sit below them


def modules():
    """{name: source path} of the project's top-level modules (setup.py is the package's, not the program's)."""
    return {os.path.basename(path)[:-3]: path for path in glob.glob(os.path.join(ROOT, "*.py"))
            if os.path.basename(path) != "setup.py"}


def imports(path, names):
    """The project modules `path` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(names)


def graph():
    names = modules()
    return {name: imports(path, names) - {name} for name, path in names.items()}


def find_cycle(edges):
    """A cycle of `edges` ({node: {node, ...}}) as a list of nodes, or None (depth-first search)."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for after in sorted(edges.get(node, ())):
            if state.get(after) == "open":
                return stack[stack.index(after):] + [after]
            if after not in state:
                cycle = visit(after)
                if cycle:
                    return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_find_cycle_finds_one_and_only_one_that_is_there():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]


def test_the_modules_import_one_another_without_a_cycle():
    edges = graph()
    assert {"a3c", "apex", "offpolicy", "dqn", "sac", "algorithms", "worker", "train"} <= set(edges)
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_library_imports_a_command():
    edges = graph()
    assert COMMANDS <= set(edges)
    wrong = {name: sorted(after & COMMANDS) for name, after in edges.items() if name not in COMMANDS and after & COMMANDS}
    assert not wrong, f"libraries importing commands: {wrong}"


def test_the_algorithms_table_imports_nothing_of_the_project_and_the_launcher_no_tensorflow():
    assert graph()["algorithms"] == set()
    names = modules()

    edges = graph()

    def reaches(start):
        seen, frontier = set(), [start]
        while frontier:
            for after in edges[frontier.pop()]:
                if after not in seen:
                    seen.add(after)
                    frontier.append(after)
        return seen

    tensorflow_users = {name for name, path in names.items() if "tensorflow" in imports_any(path)}
    assert not (reaches("train") | {"train"}) & tensorflow_users - {"logdir"}, \
        "train.py reaches a module that imports TensorFlow"


def imports_any(path):
    """Every top-level package `path` imports (project or not), at its top level only."""
    found = set()
    for node in ast.parse(open(path).read(), path).body:
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def compared_names(path, names):
    """The strings of `names` that `path` compares something with (==, !=, in, not in), with their lines."""
    found = []
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if not isinstance(node, ast.Compare):
            continue
        for operand in [node.left, *node.comparators]:
            items = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
            found += [(item.value, node.lineno) for item in items
                      if isinstance(item, ast.Constant) and item.value in names]
    return found


@pytest.mark.parametrize("what, names, owner", [
    ("algorithm", set(algorithms.NAMES), "algorithms"),
    ("bonus", set(constants.CURIOSITY_CHOICES) - {"none"}, "curiosity"),
])
def test_only_the_owner_compares_an_algorithms_or_a_bonuss_name(what, names, owner):
    found = {name: compared_names(path, names) for name, path in modules().items() if name != owner}
    found = {name: hits for name, hits in found.items() if hits}
    assert not found, f"{what} names compared outside {owner}.py: {found}"


def test_compared_names_sees_equality_and_membership(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("if args.algo == 'dqn' or algo in ('sac', 'x'):\n    pass\n")
    assert compared_names(str(path), {"dqn", "sac"}) == [("dqn", 1), ("sac", 1)]


def test_each_row_holds_its_presets_and_auto_picks_only_its_own():
    """A learner's presets are in its row (constants.PRESETS gathers them): its `--preset auto` choices name its own,
    and every preset's values are hyper-parameters that parse."""
    gathered = {}
    for row in algorithms.ALGORITHMS.values():
        assert set(row.presets.values()) <= set(row.hyperparameters), row.name
        gathered.update(row.hyperparameters)
        for name in row.hyperparameters:
            constants.config_from_overrides([], name)
    assert constants.PRESETS == gathered and len(gathered) == sum(
        len(row.hyperparameters) for row in algorithms.ALGORITHMS.values())
    assert constants.resolve_preset("auto", "vector", "gymnasium", "none", "sac") == "sac_classic"
    assert constants.resolve_preset("auto", "vector", "gymnasium", "icm", "dqn") == "dqn_classic_curiosity"
    assert constants.resolve_preset("auto", "image", "atari") == "atari"  # A3C: 16 emulators a worker
    assert constants.resolve_preset("auto", "image", "atari", "none", "dqn") == "dqn"


def test_auto_gives_each_bonus_on_minigrid_its_own_settings():
    """On MiniGrid `--preset auto` picks a bonus's own preset where its row has one ("<family>/<bonus>"): with A3C
    and IMPALA counts weigh 0.002, RIDE 0.03 with the time limit ending the return, the ICM 0.01, E3B and NGU's
    episodic novelty 0.001, those with the bootstrap; RND's stream int_coef 0.5 against ext_coef 2; disagreement
    RIDE's paper's 0.1; without a bonus the family's preset."""
    for algo, family_preset in (("a3c", "minigrid"), ("impala", "impala_minigrid")):
        for unsup, name, beta, bootstrap in (("counts", "counts", 0.002, True), ("ride", "ride", 0.03, False),
                                             ("action", "icm", 0.01, True), ("e3b", "e3b", 0.001, True),
                                             ("ngu", "ngu", 0.001, True)):
            preset = constants.resolve_preset("auto", "image", "minigrid", unsup, algo)
            config = constants.config_from_overrides([], preset)
            assert preset == f"{family_preset}_{name}"
            assert (config.prediction_beta, config.bootstrap_time_limit) == (beta, bootstrap)
        rnd = constants.resolve_preset("auto", "image", "minigrid", "rnd", algo)
        assert rnd == f"{family_preset}_rnd"
        config = constants.config_from_overrides([], rnd)
        assert (config.int_coef, config.ext_coef) == (0.5, 2.0)
        for unsup in ("disagreement", "none"):
            preset = constants.resolve_preset("auto", "image", "minigrid", unsup, algo)
            assert preset == family_preset and constants.config_from_overrides([], preset).prediction_beta == 0.1


def test_auto_gives_each_memory_bonus_on_doom_its_own_coefficient():
    """On ViZDoom `--preset auto` picks a memory bonus's Doom preset, with A3C and IMPALA: the family's preset with the
    coefficient that pays what the ICM pays (RIDE 0.002 with its embedding trained in the ICM's proportion, NGU's
    episodic novelty 0.0002, counts 0.002, E3B 0.001); the ICM, RND and no bonus keep the family's preset, the
    paper's 0.01."""
    for algo, family_preset in (("a3c", "doom"), ("impala", "impala_doom")):
        family = constants.config_from_overrides([], family_preset)
        for unsup, changes in (("ride", {"prediction_beta": 0.002, "ride_forward_share": 0.2}),
                               ("ngu", {"prediction_beta": 0.0002}), ("counts", {"prediction_beta": 0.002}),
                               ("e3b", {"prediction_beta": 0.001})):
            preset = constants.resolve_preset("auto", "image", "doom", unsup, algo)
            assert preset == f"{family_preset}_{unsup}"
            assert constants.config_from_overrides([], preset) == dataclasses.replace(family, **changes), preset
        for unsup in ("action", "rnd", "none"):
            assert constants.resolve_preset("auto", "image", "doom", unsup, algo) == family_preset
    assert family.prediction_beta == 0.01


def test_auto_gives_ride_on_mario_its_own_coefficient():
    """On Super Mario Bros `--preset auto` with RIDE picks `mario_ride`: the `mario` preset with the coefficient that
    pays a step what the ICM pays at the preset's 0.2 (0.03) and its embedding trained in the ICM's proportion; the
    ICM and the bonuses not measured there keep the `mario` preset."""
    family = constants.config_from_overrides([], "mario")
    assert constants.resolve_preset("auto", "image", "mario", "ride", "a3c") == "mario_ride"
    assert constants.config_from_overrides([], "mario_ride") == dataclasses.replace(
        family, prediction_beta=0.03, ride_forward_share=0.2)
    for unsup in ("action", "rnd", "ngu", "counts", "e3b", "none"):
        assert constants.resolve_preset("auto", "image", "mario", unsup, "a3c") == "mario"
    assert family.prediction_beta == 0.2


def test_an_algorithms_own_hyperparameters_are_configs_fields_checked_by_its_row():
    """SAC declares tau and target_entropy_scale in its row: they are fields of Config (defaults, --set, the help
    line), and a value outside the row's bounds is refused in one message."""
    own = {parameter.name: parameter for parameter in algorithms.SAC.own_hyperparameters}
    assert set(own) == {"tau", "target_entropy_scale"} and all(
        own[name] not in row.own_hyperparameters for row in (algorithms.A3C, algorithms.DQN) for name in own)
    config = constants.Config()
    assert (config.tau, config.target_entropy_scale) == (0.005, 0.89) and "tau" in config.to_dict()
    assert constants.config_from_overrides(["tau=0.5"], "paper").tau == 0.5
    assert constants.HELP["tau"].startswith("--algo sac: each update moves the target critics")
    for item, message in (("tau=0", "hyper-parameter tau=0.0 must lie in (0, 1]"),
                          ("tau=1.5", "hyper-parameter tau=1.5 must lie in (0, 1]"),
                          ("target_entropy_scale=-0.1", "hyper-parameter target_entropy_scale=-0.1 must lie in [0, 1]")):
        with pytest.raises(constants.ConfigError, match=re.escape(message)):
            constants.config_from_overrides([item], "paper")
    assert constants.config_from_overrides(["tau=1"], "paper").tau == 1.0, "the closed end"
