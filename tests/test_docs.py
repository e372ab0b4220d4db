"""The documentation holds together: every relative link in every Markdown file resolves (the file, and a
`#anchor` to a heading of that file by GitHub's slug), the README stays short, and every page under
docs/ sits in one of its three folders and is on the README's map. Reads files only: no network."""

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README_MAX_LINES = 120
DOC_FOLDERS = ("guide", "reference", "log")
# Folders whose Markdown is not the repository's documentation: outputs of a run, fixtures, environments.
SKIPPED_PARTS = {".git", ".snakemake", ".venv", ".venv-cluster-cpu", "venv", "node_modules", "logs", "benchmarks", "__pycache__"}

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def _skipped(path: Path) -> bool:
    parts = path.relative_to(ROOT).parts
    if any(part in SKIPPED_PARTS or part.startswith("results") for part in parts[:-1]):
        return True
    return parts[:2] == ("tests", "data")


def markdown_files() -> list[Path]:
    """The repository's Markdown: what git tracks or would track (so an ignored environment such as CI's
    .venv-cluster-cpu, full of other projects' READMEs, is not ours to check); outside a git checkout, a walk
    that skips the known non-documentation folders."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"],
            cwd=ROOT, capture_output=True, check=True, text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return sorted(path for path in ROOT.rglob("*.md") if not _skipped(path))
    paths = (ROOT / name for name in listed.split("\0") if name)
    return sorted(path for path in paths if path.is_file() and not _skipped(path))


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
            continue
        lines.append("" if fenced else INLINE_CODE.sub("", line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup and punctuation dropped, lower case, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays, its target goes
    text = text.replace("`", "").strip().lower()
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if char in " -_" or category[0] in "LN" or category == "Mn":
            kept.append(char)
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, seen = set(), {}
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    for line in lines:
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(path: Path) -> list[tuple[int, str]]:
    links = []
    for number, line in enumerate(prose_lines(path.read_text(encoding="utf-8")), start=1):
        for match in LINK.finditer(line):
            target = match.group(1)
            if not EXTERNAL.match(target):
                links.append((number, target))
    return links


def broken_links(path: Path) -> list[str]:
    broken = []
    for number, target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        if not resolved.exists():
            broken.append(f"{where} (no such file)")
            continue
        if anchor and resolved.is_file() and resolved.suffix == ".md" and anchor.lower() not in anchors(resolved):
            broken.append(f"{where} (no heading with the anchor #{anchor})")
    return broken


def test_markdown_files_are_found():
    names = {path.relative_to(ROOT).as_posix() for path in markdown_files()}
    assert {"README.md", "config/README.md"} <= names
    assert any(name.startswith("docs/") for name in names)


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(path):
    assert broken_links(path) == []


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines, at most {README_MAX_LINES}"


def test_docs_pages_sit_in_their_folders_and_are_on_the_readme_map():
    docs = ROOT / "docs"
    pages = sorted(docs.rglob("*.md"))
    assert pages
    outside = [page.relative_to(docs).as_posix() for page in pages if page.relative_to(docs).parts[0] not in DOC_FOLDERS]
    assert outside == [], f"pages outside docs/{{{','.join(DOC_FOLDERS)}}}/: {outside}"
    mapped = {target.partition("#")[0] for _, target in relative_links(ROOT / "README.md")}
    missing = [page.relative_to(ROOT).as_posix() for page in pages if page.relative_to(ROOT).as_posix() not in mapped]
    assert missing == [], f"docs pages missing from the README's map: {missing}"


def test_slug_follows_github():
    assert slug("The default study") == "the-default-study"
    assert slug("In the workflow (`rules/adaptive.smk`)") == "in-the-workflow-rulesadaptivesmk"
    assert slug("12b. After the validation reserve (issue 12: every set's ...)") == (
        "12b-after-the-validation-reserve-issue-12-every-sets-"
    )
    assert slug("Pilot 1 and 2: questions and stop rules") == "pilot-1-and-2-questions-and-stop-rules"
    assert slug("2026-12-05: the n*(C) law") == "2026-12-05-the-nc-law"
