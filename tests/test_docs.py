"""The README is an entry point: short, the two commands first, and every link of it and of docs/ resolves."""
import glob
import os
import re
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


def test_the_readme_is_short_narrow_and_starts_with_the_two_commands():
    lines = open(README).read().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"
    wide = [number for number, line in enumerate(lines, 1) if len(line) > COLUMNS]
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


def test_the_license_is_mit_and_the_citation_names_this_project_and_the_papers_it_implements():
    import yaml

    assert open(os.path.join(ROOT, "LICENSE")).read().startswith("MIT License")
    citation = yaml.safe_load(open(os.path.join(ROOT, "CITATION.cff")))
    assert citation["cff-version"] == "1.2.0" and citation["license"] == "MIT"
    assert citation["message"] and citation["title"].startswith("curiosity-agent") and citation["authors"]
    cited = {(reference["authors"][0]["family-names"], reference["year"]) for reference in citation["references"]}
    implemented = {("Pathak", 2017), ("Burda", 2019), ("Mnih", 2016), ("van Hasselt", 2016), ("Schaul", 2016),
                   ("Horgan", 2018), ("Haarnoja", 2018)}  # the ICM, RND, A3C, Double DQN, PER, Ape-X, SAC
    assert implemented <= cited, f"not cited: {implemented - cited}"
