"""The README is an entry point: short, the two commands first, and every link of it and of docs/ resolves."""
import glob
import os
import json
import re
import sys
import subprocess

import pytest

from conftest import ROOT

README = os.path.join(ROOT, "README.md")
PAGES = [README] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
README_MAX_LINES = 300
COLUMNS = 120
INLINE = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")  # [text](target) and ![alt](target)
DEFINITION = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)  # [label]: target


def prose(text):
    """The text outside fenced code blocks and inline code spans, where links are links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    found = set()
    for line in re.sub(r"^```.*?^```", "", open(path).read(), flags=re.S | re.M).splitlines():
        if line.startswith("#"):
            base, n = slug(line.lstrip("#")), 0
            while (base if n == 0 else f"{base}-{n}") in found:
                n += 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path):
    text = prose(open(path).read())
    return INLINE.findall(text) + DEFINITION.findall(text)


def test_the_pages_and_links_are_found():
    assert len(PAGES) > 10 and all(links(page) for page in PAGES[:2]), "the link scan finds nothing"
    assert slug("The launcher: `train.py`") == "the-launcher-trainpy"
    assert slug("Curiosity: `--unsup action`") == "curiosity---unsup-action"


@pytest.mark.parametrize("page", PAGES, ids=lambda path: os.path.relpath(path, ROOT))
def test_every_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto: are not checked (no network here)
            continue
        path, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(resolved):
            broken.append(f"{target}: no such file")
        elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {os.path.relpath(resolved, ROOT)}")
    assert not broken, f"{os.path.relpath(page, ROOT)}: " + "; ".join(broken)


def test_the_readme_is_short_its_prose_narrow_and_it_starts_with_the_two_commands():
    lines = open(README).read().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"
    wide = [number for number, line in enumerate(lines, 1)
            if len(line) > COLUMNS and not line.startswith(("|", "!["))]  # table rows and images render whole
    assert not wide, f"README.md lines {wide} are wider than {COLUMNS} columns"
    first_block = open(README).read().split("```")[1]
    assert "make train" in first_block and "make test" in first_block


VIDEO_CAP_BYTES = 1_000_000  # a committed video or animation: one episode, at the report's quality
CHECKPOINT = re.compile(r"(^|/)(checkpoint|[^/]+\.index|[^/]+\.data-\d+-of-\d+|[^/]+\.meta)$")


def committed_files():
    """The repository's files as git tracks them (the working tree's where this is not a git checkout)."""
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return [path for path in listed.splitlines() if os.path.exists(os.path.join(ROOT, path))]
    except (OSError, subprocess.CalledProcessError):
        return [os.path.relpath(os.path.join(folder, name), ROOT) for folder, _, names in os.walk(ROOT)
                for name in names if ".git" not in folder.split(os.sep) and ".venv" not in folder]


def test_no_checkpoint_is_committed_and_videos_stay_small():
    files = committed_files()
    assert any(path.endswith("results.json") for path in files), "the file list finds nothing"
    checkpoints = [path for path in files if CHECKPOINT.search(path)]
    assert not checkpoints, f"TensorFlow checkpoints are committed (archives keep episodes, not weights): {checkpoints}"
    large = [f"{path} ({os.path.getsize(os.path.join(ROOT, path)):,} bytes)" for path in files
             if path.endswith((".mp4", ".gif")) and os.path.getsize(os.path.join(ROOT, path)) > VIDEO_CAP_BYTES]
    assert not large, f"videos over {VIDEO_CAP_BYTES:,} bytes: {large}"


def test_no_committed_file_has_a_space_in_its_name():
    """A report's figures are named after their configuration's label (plots.visits_name): "no bonus" must not
    give a file that a shell splits in two."""
    spaced = [path for path in committed_files() if " " in path]
    assert not spaced, f"file names with spaces: {spaced}"


def test_the_license_is_mit_and_the_citation_names_this_project_and_the_papers_it_implements():
    import yaml

    assert open(os.path.join(ROOT, "LICENSE")).read().startswith("MIT License")
    citation = yaml.safe_load(open(os.path.join(ROOT, "CITATION.cff")))
    assert citation["cff-version"] == "1.2.0" and citation["license"] == "MIT"
    assert citation["message"] and citation["title"].startswith("curiosity-agent") and citation["authors"]
    cited = {(reference["authors"][0]["family-names"], reference["year"]) for reference in citation["references"]}
    implemented = {("Pathak", 2017), ("Burda", 2019), ("Mnih", 2016), ("van Hasselt", 2016), ("Schaul", 2016),
                   ("Horgan", 2018), ("Haarnoja", 2018), ("Henaff", 2022), ("Raileanu", 2020), ("Badia", 2020),
                   ("Tang", 2017)}  # the ICM, RND, A3C, Double DQN, PER, Ape-X, SAC, E3B, RIDE, NGU, counts
    assert implemented <= cited, f"not cited: {implemented - cited}"


sys.path.insert(0, os.path.join(ROOT, "tools"))
import docs as generator  # noqa: E402  tools/docs.py: the docs' generated blocks

REFERENCE = [README] + sorted(path for path in glob.glob(os.path.join(ROOT, "docs", "*.md")))
# Words only history uses: a reference page says what the code does now, and a date, a commit, an issue or a
# working session belongs to the history pages (docs/history/) or the changelog
HISTORY_ONLY = {
    "a date": re.compile(r"(?<!history/)\b20\d\d-\d\d-\d\d\b"),  # not a history page's name
    "a commit hash": re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    "a reference to an issue": re.compile(r"\bissues?\b|(?<![\w/])#\d+\b", re.I),
    "a working session": re.compile(r"\b(this|last|earlier|previous|next) (session|sitting)\b", re.I),
    "a narrative": re.compile(r"\b(yesterday|today|we tried|we found|at first|for now)\b", re.I),
}


def test_the_history_check_sees_history():
    found = [what for what, pattern in HISTORY_ONLY.items() for text in (
        "measured 2026-11-26", "at commit 5ae08ed", "as issue #72 asks", "in this session", "for now none")
        if pattern.search(text)]
    assert sorted(found) == sorted(HISTORY_ONLY), found
    assert not any(pattern.search(prose("ids `d67a63c6539d`, lr 6.25e-5, epsilon 1e-8, the 17 spawn spots"))
                   for pattern in HISTORY_ONLY.values())


@pytest.mark.parametrize("page", REFERENCE, ids=lambda path: os.path.relpath(path, ROOT))
def test_a_reference_page_holds_no_dated_history(page):
    text = re.sub(r"\]\([^)]*\)", "]", prose(open(page).read()))  # a link's target names a history page's date
    found = [f"{what}: {match.group(0)!r}" for what, pattern in HISTORY_ONLY.items() for match in pattern.finditer(text)]
    assert not found, f"{os.path.relpath(page, ROOT)} holds history (move it to docs/history/): {found}"


@pytest.mark.parametrize("page", REFERENCE, ids=lambda path: os.path.relpath(path, ROOT))
def test_a_reference_page_is_whole(page):
    """It starts with its title and ends with a whole sentence, a table, a block or a figure."""
    lines = [line for line in open(page).read().splitlines() if line.strip()]
    assert lines[0].startswith("# "), f"{os.path.relpath(page, ROOT)} does not start with its title"
    assert lines[-1].rstrip().endswith((".", "|", "```", ")", "-->")), \
        f"{os.path.relpath(page, ROOT)} ends mid-sentence: {lines[-1]!r}"


def test_the_generated_blocks_are_what_the_code_and_results_make_now():
    assert set(generator.GENERATORS) >= {"results", "support-matrix", "flags", "launch-sample", "status-sample"}
    names = [name for path in generator.pages() for name in generator.rendered(path)[1]]
    assert {"results", "support-matrix", "flags", "hyperparameters", "presets", "launch-sample"} <= set(names)
    stale = [os.path.relpath(path, ROOT) for path in generator.stale()]
    assert not stale, f"generated blocks differ from what the code makes now in {stale}: run python tools/docs.py"


def test_a_figure_changed_in_its_results_file_makes_its_page_stale(tmp_path, monkeypatch):
    """The check reads the committed file: a number changed there no longer matches the page that shows it."""
    report = json.load(open(os.path.join(ROOT, generator.MARIO_REPORT, "results.json")))
    report["verdicts"]["mario"]["lead"]["p"] = 0.01
    changed = tmp_path / "results.json"
    changed.write_text(json.dumps(report))
    original = generator.load
    monkeypatch.setattr(generator, "load", lambda path: json.load(open(changed)) if path.endswith(
        "mario-study/results.json") else original(path))
    stale = {os.path.relpath(path, ROOT) for path in generator.stale()}
    assert {"README.md", "docs/mario-study.md"} <= stale, stale


def test_a_minigrid_line_names_the_best_method_its_seeds_at_rides_level_and_its_tested_lead():
    """The README's line of a MiniGrid task of the bonus comparison, from a report's numbers: counts, the highest
    return, 3 of 3 seeds at RIDE's level by a median 6.2M, its lead over RIDE with Welch's p; an unfinished method
    (E3B, no seed at the budget) is left out; against two methods each p is given adjusted by Holm's too."""
    def method(mean, low, high, at_level, finished=3, median=None):
        returns = {"mean": mean, "min": low, "max": high} if finished else None
        return {"return_at": {"10000000": returns}, "runs_finished": finished, "runs_at_level": at_level,
                "median_level_from": median, "setups": ["IMPALA 2 x 16"]}

    task = "MiniGrid-MultiRoom-N7-S4-v0"
    results = {"milestones": None, "tasks": {task: {
        "counts": method(0.775, 0.77, 0.78, 3, median=6_200_000), "ride": method(0.7, 0.6, 0.78, 1, median=7e6),
        "e3b": method(0, 0, 0, 0, finished=0)}},
        "compared": {task: {"best": "counts", "step": 10_000_000, "mean": 0.775, "others": {
            "ride": {"difference": 0.075, "error": 0.05, "t": 1.5, "p": 0.2, "seeds": [3, 3]}}}}}
    row = generator.minigrid_line(task, results)
    assert row[2] == "IMPALA 2 x 16 envs, 10M steps, 3 seeds a method", row
    assert row[4] == ("counts 0.78 (0.77-0.78), 3 of 3 at the level, median 6.2M; RIDE 0.70 (0.60-0.78), 1 of 3 at the "
                      "level, median 7M"), row[4]
    assert row[6] == ("counts, the highest return: 3 of 3 seeds at RIDE's level by 6.2M (median), its curve in the "
                      "figure about 5.5M; its lead over RIDE 0.075 +- 0.050 (Welch p 0.200)"), row[6]
    # against two methods, each p also adjusted for the two tests (Holm's)
    results["tasks"][task]["icm"] = method(0.1, 0.0, 0.2, 0)
    results["compared"][task]["others"]["icm"] = {"difference": 0.675, "error": 0.1, "t": 6.7, "p": 0.0004,
                                                  "p_holm": 0.0008, "seeds": [3, 3]}
    results["compared"][task]["others"]["ride"]["p_holm"] = 0.2
    assert generator.minigrid_line(task, results)[6].endswith(
        "its lead over RIDE 0.075 +- 0.050 (Welch p 0.200, Holm's 0.200); over ICM 0.675 +- 0.100 (Welch p < 0.001, "
        "Holm's < 0.001)"), generator.minigrid_line(task, results)[6]


def test_the_pong_settings_table_gives_each_setting_over_its_seeds_and_tests_them_at_the_last_milestone(
        tmp_path, monkeypatch):
    """Two settings x 2 seeds, each seed's returns constant from 1.5M on, then -5 and -7 from 2.5M on at 16 x 5: at
    3M the last 100 episodes' means (-10, -12 against -5, -7), their spread, and Welch's test of the other against
    the preset (here 4 x 20) (+5); in equal training time (16 x 5 twice 4 x 20's steps/s) 16 x 5 at 3M against
    4 x 20 at 1.5M (-21: -16 +- 1); a seed short of 3M gives none there."""
    monkeypatch.setattr(generator, "atari_setting", lambda: (4, 20))
    speed = tmp_path / "speed.json"
    speed.write_text(json.dumps({"results": [
        {"measurement": "training", "envs_per_worker": count, "rollout_maxlen": length, "aggregate_steps_per_sec": rate}
        for count, length, rate in ((4, 20, 1000.0), (16, 5, 2000.0))]}))
    def run(name, count, length, late, steps=3_000_000):
        archive = tmp_path / name
        archive.mkdir()
        (archive / "config.json").write_text(json.dumps(
            {"hyperparameters": {"envs_per_worker": count, "rollout_maxlen": length}}))
        rows = ["global_step,wall_time,worker,env_reward"]
        rows += [f"{step},{step / 1000},0,{-21 if step <= 1_500_000 else late(step) if callable(late) else late}"
                 for step in range(5_000, steps + 1, 5_000)]
        (archive / "episodes_0.csv").write_text("\n".join(rows) + "\n")

    run("k4-t20-s0", 4, 20, -10)
    run("k4-t20-s1", 4, 20, -12)
    run("k16-t5-s0", 16, 5, lambda step: -20 if step < 2_500_000 else -5)
    run("k16-t5-s1", 16, 5, lambda step: -18 if step < 2_500_000 else -7)
    text = generator.pong_settings_table(str(tmp_path), str(tmp_path), str(speed))
    assert ("| 4 x 20 (the `atari` preset) | 2 | -21.0 (-21.0 to -21.0) | -11.0 (-12.0 to -10.0) | -11.0 (-12.0 to "
            "-10.0) |") in text, text
    assert "| 16 x 5 | 2 | -21.0 (-21.0 to -21.0) | -19.0 (-20.0 to -18.0) | -6.0 (-7.0 to -5.0) |" in text, text
    assert ("At 3M: 16 x 5 minus the preset's +5.0 +- 1.4 (Welch's p 0.072). In equal training time (the steps/s of "
            "the speed table above): 16 x 5 at 3M against 4 x 20 at 1.50M, -6.0 against -21.0: +15.0 +- 1.0 (Welch's "
            "p") in " ".join(text.split()), text
    run("k1-t20-s0", 1, 20, -15, steps=2_000_000)
    assert "| 1 x 20 | 1 | -21.0 (-21.0 to -21.0) | -15.0 (-15.0 to -15.0) | - |" in generator.pong_settings_table(
        str(tmp_path), str(tmp_path), str(speed))


def flag_reference_text():
    text = open(os.path.join(ROOT, "docs", "configuration.md")).read()
    return text.split("## The launcher's flags", 1)[1].split("\n## ", 1)[0]


def test_every_flag_of_train_py_is_in_the_flag_reference():
    import train

    reference = flag_reference_text()
    flags = [flag for action in train.build_parser()._actions if action.help != "==SUPPRESS=="
             for flag in action.option_strings if flag not in ("-h", "--help")]
    assert len(flags) > 30
    missing = [flag for flag in flags if f"`{flag}`" not in reference]
    assert not missing, f"docs/configuration.md lacks {missing}: run python tools/docs.py"


def support_rows():
    """The README's support matrix, {algorithm: {column: cell}}."""
    block = open(README).read().split("<!-- generated: support-matrix -->", 1)[1].split("<!-- end generated -->")[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in block.splitlines()
            if line.startswith("|")]
    head = rows[0]
    return {row[0].strip("`"): dict(zip(head, row)) for row in rows[2:]}


def test_the_support_matrix_says_what_the_code_accepts():
    """Each algorithm's action spaces as the environments take them (a continuous task refused where the matrix says
    discrete only), its placements as the launcher plans or refuses them, its bonuses as the launcher checks them."""
    import algorithms
    import envs
    import train
    from cluster import LaunchError

    def accepted(argv):
        try:
            train.check_args(train.parse_args(argv))
            return True
        except LaunchError:
            return False

    rows = support_rows()
    assert set(rows) == set(algorithms.NAMES)
    for name, row in rows.items():
        continuous = "continuous" in row["actions"]
        try:
            envs.create_env("Pendulum-v1", continuous_actions=algorithms.get(name).continuous).close()
            takes = True
        except envs.EnvError:
            takes = False
        assert takes == continuous, f"{name}: the matrix says continuous {continuous}, the code {takes}"
        game = "Pendulum-v1" if continuous else "CartPole-v1"
        assert accepted(["--algo", name, "--num-workers", "0", "--env-id", game])
        assert row["one process (`--num-workers 0`)"] == "yes"
        clusters = row["cluster (`--num-workers N`)"] != "no"
        assert accepted(["--algo", name, "--num-workers", "2", "--env-id", game]) == clusters, name
        for bonus in ("action", "rnd", "state", "stateAenc"):
            claimed = f"`{bonus}`" in row["`--unsup` bonuses"]
            assert accepted(["--algo", name, "--num-workers", "0", "--env-id", game, "--unsup", bonus]) == claimed


MODULES = {os.path.basename(path)[:-3] for path in glob.glob(os.path.join(ROOT, "*.py"))} - {"setup"}


def defined_names(module):
    """{name: the names a class of that name defines} of a module's top level, read from its source (no import)."""
    import ast

    tree = ast.parse(open(os.path.join(ROOT, f"{module}.py")).read())
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = {item.name for item in getattr(node, "body", [])
                                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))} | {
                target.id for item in getattr(node, "body", []) if isinstance(item, ast.AnnAssign | ast.Assign)
                for target in (item.targets if isinstance(item, ast.Assign) else [item.target])
                if isinstance(target, ast.Name)}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    names[target.id] = set()
    return names


def test_every_module_name_a_reference_page_names_exists():
    """`a3c.process_rollout`, `sessions.AbortRetrySession`: a page that names a moved or renamed symbol is wrong."""
    named = re.compile(r"`(" + "|".join(sorted(MODULES)) + r")\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?")
    wrong = []
    definitions = {module: defined_names(module) for module in MODULES}
    for page in REFERENCE:
        for module, name, member in named.findall(open(page).read()):
            if name in ("py", "ckpt", "json", "csv", "out"):
                continue  # a file name (`train.py`, `model.ckpt-5561`), not a symbol
            defined = definitions[module]
            if name not in defined or (member and defined[name] and member not in defined[name]):
                wrong.append(f"{os.path.relpath(page, ROOT)}: {module}.{name}" + (f".{member}" if member else ""))
    assert not wrong, f"pages name symbols the code does not have: {wrong}"


ALGORITHM_HEADINGS = ["What it computes", "How to run it", "What it logs", "Hyper-parameters", "Results", "Not built"]


def test_each_algorithm_has_its_page_with_the_same_headings():
    import algorithms

    for name in algorithms.NAMES:
        page = os.path.join(ROOT, "docs", f"{name}.md")
        headings = [line[3:].strip() for line in open(page).read().splitlines() if line.startswith("## ")]
        assert headings == ALGORITHM_HEADINGS, f"docs/{name}.md: {headings}"


def learner_report(folder, seeds):
    """A reproduce.py results.json in `folder` of doomSparse + ICM seeds (success at 3M, at 5M, the step solved for
    good, hours): a seed with neither a 5M success nor a solved step is short of its budget (3.1M of 5M)."""
    folder.mkdir()
    runs = {str(index): {
        "success_at": {"3000000": at_3m, "5000000": at_5m}, "sustained_from": solved,
        "global_step": 5_000_100 if at_5m is not None or solved else 3_100_000, "budget": 5_000_000,
        "sittings": [{"started": "2026-12-01T10:00:00", "ended": f"2026-12-01T{10 + hours}:00:00", "from_step": 0,
                      "at_step": 3_600_000 * hours}]}
        for index, (at_3m, at_5m, solved, hours) in enumerate(seeds)}
    (folder / "results.json").write_text(json.dumps(
        {"tasks": {"doomSparse": {"icm": {"setups": ["2 x 4"], "seeds": runs}}}}))
    return str(folder)


def test_the_learners_table_gives_each_learners_seeds_on_one_task_and_tests_their_steps_to_solve(tmp_path):
    """Reports of 3, 2 (and one short of its budget) and 2 seeds: success at 3M and 5M over the seeds that got there,
    the seeds solved for good with their steps, each run's hours over its sittings and its steps/s, Welch's test of
    each row's solved steps against the first's, and the seed still going named, not counted."""
    def report(name, seeds):
        return learner_report(tmp_path / name, seeds)

    first = report("a3c", [(0.1, 1.0, 4_000_000, 2), (0.2, 0.9, 5_000_000, 2), (0.0, 0.1, None, 1)])
    second = report("impala", [(0.5, 1.0, 3_000_000, 1), (0.7, None, 3_500_000, 1), (0.0, None, None, 1)])
    third = report("impala-b4", [(0.9, 1.0, 2_000_000, 1), (0.8, 1.0, 2_500_000, 1)])
    text = generator.learners_table(str(tmp_path), (("A3C", first), ("IMPALA", second), ("IMPALA b4", third)))
    assert "| A3C | 2 x 4 | 3 | 0.10 (0.00-0.20) | 0.67 (0.10-1.00) | 2 of 3 (4.00M, 5.00M, -) | 1.00-2.00 | 1,000 |" in text
    assert "| IMPALA | 2 x 4 | 2 | 0.60 (0.50-0.70) | 1.00 (1.00) | 2 of 2 (3.00M, 3.50M) | 1.00 | 1,000 |" in text
    assert "IMPALA's step to solved for good minus A3C's: -1.25M +- 0.56M (Welch's p" in " ".join(text.split()), text
    assert "IMPALA b4's step to solved for good minus A3C's: -2.25M +- 0.56M (Welch's p" in " ".join(text.split()), text
    assert "Not counted until they reach their budget: IMPALA: seed 2 (3.10M of 5M)." in " ".join(text.split()), text


def test_the_readmes_learner_line_tests_its_steps_to_solve_against_a3cs(tmp_path, monkeypatch):
    """The README's line of a learner beside A3C on doomSparse: each one's seeds solved for good, then Welch's test
    of the steps (IMPALA 3M and 3.5M against A3C's 4M and 5M: -1.25M +- 0.56M)."""
    a3c = learner_report(tmp_path / "a3c", [(0.1, 1.0, 4_000_000, 2), (0.2, 0.9, 5_000_000, 2)])
    impala = learner_report(tmp_path / "impala", [(0.5, 1.0, 3_000_000, 1), (0.7, 1.0, 3_500_000, 1)])
    monkeypatch.setattr(generator, "DOOM_REPORT", os.path.relpath(a3c, generator.ROOT))
    line = generator.doom_learners_line("IMPALA", os.path.relpath(impala, generator.ROOT))
    assert line.startswith("solved for good: IMPALA 2 of 2 (3.00M, 3.50M); A3C 2 of 2 (4.00M, 5.00M). IMPALA's "), line
    assert "IMPALA's step to solved for good minus A3C's: -1.25M +- 0.56M (Welch's p" in line, line


def test_the_impala_batches_table_gives_each_setting_against_a3c_in_its_own_round(tmp_path, monkeypatch):
    """Two rounds of throughput files: each setting's steps/s and updates/s, its ratio to A3C's of the same round."""
    for name, rate, updates in [("r1-b32", 1200, 2.0), ("r1-b4", 1100, 15.0), ("r1-a3c", 1000, 14.0),
                                ("r2-b32", 900, 1.5), ("r2-b4", 1000, 16.0), ("r2-a3c", 800, 13.0)]:
        (tmp_path / f"{name}.json").write_text(json.dumps({"results": [
            {"aggregate_steps_per_sec": rate, "profile": {"updates_per_sec": updates}}]}))
    monkeypatch.setattr(generator, "IMPALA_BATCHES", str(tmp_path))
    lines = generator.impala_batches_table(str(tmp_path)).splitlines()
    assert lines[2] == "| IMPALA, batches of 32 x 20 steps (2 actors x 8) | 1,200 (2.0; 1.20x) | 900 (1.5; 1.12x) |"
    assert lines[3] == "| IMPALA, batches of 4 x 20 steps (2 actors x 8) | 1,100 (15.0; 1.10x) | 1,000 (16.0; 1.25x) |"
    assert lines[4] == "| A3C, `doom` preset (2 workers x 4) | 1,000 (14.0; 1.00x) | 800 (13.0; 1.00x) |"


def test_the_impala_k_table_gives_each_learners_k4_against_its_k16_in_each_round(tmp_path, monkeypatch):
    """Two rounds: each learner's steps/s at K = 4 and 16 and the fraction, from its own file of the round."""
    for name, k4, k16 in [("r1-impala", 1100, 1200), ("r1-a3c", 800, 1400), ("r2-impala", 1000, 1000),
                          ("r2-a3c", 700, 1000)]:
        (tmp_path / f"{name}.json").write_text(json.dumps({"results": [
            {"envs_per_worker": 4, "aggregate_steps_per_sec": k4},
            {"envs_per_worker": 16, "aggregate_steps_per_sec": k16}]}))
    monkeypatch.setattr(generator, "IMPALA_K", str(tmp_path))
    lines = generator.impala_k_table(str(tmp_path)).splitlines()
    assert lines[2] == "| IMPALA, `impala_doom` with RMSProp (2 actors) | 1,100 / 1,200 (0.92) | 1,000 / 1,000 (1.00) |"
    assert lines[3] == "| A3C, `doom` preset (2 workers) | 800 / 1,400 (0.57) | 700 / 1,000 (0.70) |"
