"""Every in-repository link, anchor and named repository path of the user's pages resolves.

``mkdocs build --strict`` (tests/test_docs.py, long tier) checks the links between docs/ pages and their
anchors, but it never reads a README (the repository's, benchmarks/', configs/', layers/', tests/data/'s …),
and a path written as text (`benchmarks/results/x.csv`, `configs/clusters/y.toml`) is no link to it. This
checks both kinds of page in the fast tier: a link's file exists, its ``#anchor`` is a heading of that page, and
a path under one of the repository's folders that a page names exists. Heading anchors are computed here, by
the rule of the renderer that shows the page: Python-Markdown's ``toc`` for docs/ (mkdocs; checked against
Python-Markdown's own output below) and GitHub's for the READMEs.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_FOLDERS = ("archsim", "benchmarks", "configs", "layers", "reports", "tests")  # READMEs: rendered by GitHub


def readmes(root: Path) -> list[Path]:
    return [root / "README.md"] + sorted(page for folder in README_FOLDERS for page in (root / folder).rglob("README.md"))


def pages(root: Path = ROOT) -> list[Path]:
    """The hand-written pages: every README (GitHub's) and docs/ (mkdocs'); benchmarks/results/ holds what
    scripts write."""
    return readmes(root) + sorted((root / "docs").rglob("*.md"))


# The repository's folders a named path is checked under (reports/ holds generated pages, never committed, so a
# path there names an output), and the top-level files a page may name.
FOLDERS = ("archsim", "benchmarks", "configs", "docs", "layers", "tests", ".ci")
TOP_FILE = re.compile(r"(?<![\w/.~$-])([A-Z][A-Z_]*\.md|pyproject\.toml|mkdocs\.yml)(?![\w/])")
NAMED_PATH = re.compile(r"(?<![\w/.~$-])((?:" + "|".join(map(re.escape, FOLDERS)) + r")/[\w./+-]*\w)")
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]+(\.\w+)?")  # NAME.toml, FILE.csv, CHECKOUT: a part the reader fills in

# Paths the pages name in other repositories, which this one does not hold: path → whose.
ELSEWHERE = {
    "DESIGN.md": "the design notes the project started from, kept outside the repository",
    "configs/tpuv5e_downscale.cfg": "SCALE-Sim v3's repository",
    "configs/sparsity.cfg": "SCALE-Sim v3's repository",
    "docs/api-guide/dist_optimizer.md": "Megatron-LM's repository",
    "docs/user-guide/features/dist_optimizer.md": "Megatron-LM's repository",
    "docs/performance-guide.md": "NVIDIA-NeMo/Megatron-Bridge",
}


def docs_slug(text: str) -> str:
    """Python-Markdown toc's default slug: ASCII by NFKD, punctuation dropped, lower case, runs of spaces and
    hyphens one hyphen."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def github_slug(text: str) -> str:
    """GitHub's heading anchor: lower case, every character but letters, digits, spaces, ``-`` and ``_``
    dropped, each space a hyphen (so ``A — B`` is ``a--b``)."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def heading_text(markdown: str) -> str:
    """A heading's text as rendered: tags dropped, code spans and links by their text."""
    text = re.sub(r"<[^>]+>", "", markdown)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return text.replace("`", "")


def without_code(text: str) -> str:
    """The page with its fenced code blocks blanked (line numbers kept): their ``#`` lines are no headings."""
    out, fence = [], None
    for line in text.splitlines():
        marker = re.match(r"\s*(```+|~~~+)", line)
        if marker and (fence is None or marker.group(1).startswith(fence)):
            fence = marker.group(1) if fence is None else None
            out.append("")
        else:
            out.append("" if fence else line)
    return "\n".join(out)


@functools.cache
def anchors(page: Path, github: bool) -> frozenset[str]:
    """The anchors of a page's headings, a repeated one numbered as its renderer numbers it."""
    slug, found, seen = (github_slug if github else docs_slug), set(), {}
    for line in without_code(page.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)(\s+#+)?\s*$", line)
        if heading:
            base = slug(heading_text(heading.group(1)))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}" if github else f"{base}_{count}")
    return frozenset(found)


def dead_links(root: Path, page: Path) -> list[str]:
    """Each relative link of ``page`` (outside code) whose file, or whose anchor in that file, does not exist."""
    github = page.relative_to(root).parts[0] != "docs"  # a README, shown by GitHub
    dead = []
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", without_code(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            dead.append(f"{page.relative_to(root)}: ({target}): no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked, github):
            dead.append(f"{page.relative_to(root)}: ({target}): no heading #{anchor} in {linked.name}")
    return dead


def named_paths(text: str) -> set[str]:
    """The repository paths a page's text names, placeholders (`configs/devices/NAME.toml`,
    `gpu_kernels_<gpu>.csv`, `deepbench_*`) left out."""
    names = set(TOP_FILE.findall(text))
    for match in NAMED_PATH.finditer(text):
        path, after = match.group(1), text[match.end():match.end() + 1]
        if after in ("<", "{", "*") or any(PLACEHOLDER.fullmatch(part) for part in path.split("/")):
            continue
        names.add(path)
    return names


def missing_paths(root: Path, page: Path) -> list[str]:
    return [f"{page.relative_to(root)}: `{path}` does not exist"
            for path in sorted(named_paths(page.read_text(encoding="utf-8")))
            if path not in ELSEWHERE and not (root / path).exists()]


# A page's section or statement quoted by name elsewhere (`docs/accuracy.md, "Hopper check"` in a docstring or a
# page): each must still be on that page, as a heading, a bold paragraph's lead or its words (a quote cut by "…" in
# its parts, in order), so a renamed section or a reworded statement leaves no stale reference.
QUOTE = re.compile(r"(?<![\w/.-])([\w/.-]+\.md)(?:'s)?,?\s+(?:section\s+)?[\"“]([^\"”]{3,200})[\"”]")
QUOTING_FOLDERS = ("archsim", "benchmarks", "configs", "docs", "layers", "tests")
# Files that quote a page as it read before a fix (the quote is the failure they record): file → why.
QUOTED_AS_IT_WAS = {"tests/test_user_trial39.py": "the SPP page's Python sentence that raised before its fix"}


def flat(text: str) -> str:
    """Text as read: code and bold marks dropped, every run of whitespace one space."""
    return " ".join(text.replace("`", "").replace("**", "").split())


def quoted_on(plain: str, quote: str) -> bool:
    """Whether ``quote``'s parts (cut by "…") are in ``plain``, a flattened page, in order."""
    start = 0
    for part in (flat(piece) for piece in quote.split("…")):
        start = plain.find(part, start)
        if start < 0:
            return False
        start += len(part)
    return True


def stale_quotes(root: Path, sources: list[Path]) -> list[str]:
    """Each ``page.md, "quote"`` in ``sources`` whose page (from the root, its docs/ or the source's folder) no
    longer has the quote."""
    stale, plain = [], {}
    for source in sources:
        text = source.read_text(encoding="utf-8")
        for name, quote in QUOTE.findall(text) if ".md" in text else ():
            page = next((c for c in (root / name, root / "docs" / name, source.parent / name) if c.is_file()), None)
            if page is not None and page not in plain:
                plain[page] = flat(page.read_text(encoding="utf-8"))
            if page is not None and not quoted_on(plain[page], quote):
                stale.append(f"{source.relative_to(root)}: {name}, \"{quote}\" is not on that page")
    return stale


def quoting_files(root: Path = ROOT) -> list[Path]:
    """The pages, and the code and tests whose docstrings and comments cite them (not what scripts write)."""
    return [root / "README.md"] + sorted(
        path for folder in QUOTING_FOLDERS for path in (root / folder).rglob("*")
        if path.suffix in (".py", ".md", ".sh", ".toml") and "results" not in path.relative_to(root).parts
        and path.relative_to(root).as_posix() not in QUOTED_AS_IT_WAS)


def test_every_quoted_section_is_on_its_page():
    sources = quoting_files()
    stale = stale_quotes(ROOT, sources)
    assert not stale, "\n".join(stale)
    quotes = sum(len(QUOTE.findall(text)) for text in (path.read_text(encoding="utf-8") for path in sources)
                 if ".md" in text)
    assert quotes > 80  # the references were found (118 on 2026-12-04)
    assert all((ROOT / name).is_file() and QUOTE.search((ROOT / name).read_text(encoding="utf-8"))
               for name in QUOTED_AS_IT_WAS)  # each exception still quotes a page


def test_every_relative_link_and_anchor_resolves():
    checked = pages()
    dead = [line for page in checked for line in dead_links(ROOT, page)]
    assert not dead, "\n".join(dead)
    links = sum(len(re.findall(r"\]\((?![a-z]+:)", without_code(page.read_text(encoding="utf-8")))) for page in checked)
    assert links > 300  # the pages' relative links were found, not skipped (344 on 2026-12-04)


def test_every_named_repository_path_exists():
    missing = [line for page in pages() for line in missing_paths(ROOT, page)]
    assert not missing, "\n".join(missing)


def test_paths_of_other_repositories_are_named_and_not_here():
    """Each ELSEWHERE entry is still named by a page and still absent here, so the list hides nothing."""
    named = set().union(*(named_paths(page.read_text(encoding="utf-8")) for page in pages()))
    assert sorted(path for path in ELSEWHERE if path not in named) == []
    assert sorted(path for path in ELSEWHERE if (ROOT / path).exists()) == []


def test_a_dead_link_anchor_and_path_are_each_reported(tmp_path):
    """The checks can fail: on a small tree, a missing file, a missing heading (the second of two like headings
    numbered as each renderer numbers it), a missing named path and a quote no longer on its page are reported;
    the ones that exist are not."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "README.md").write_text("# B\n", encoding="utf-8")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "a.toml").write_text("", encoding="utf-8")
    (tmp_path / "docs" / "b.md").write_text("# Top\n\n## Runs — `train`\n\n## Runs — `train`\n\n```text\n"
                                            "# not a heading\n```\n", encoding="utf-8")
    (tmp_path / "docs" / "a.md").write_text(
        "[ok](b.md#runs-train) [ok](b.md#runs-train_1) [gone](b.md#runs-train_2) [code](b.md#not-a-heading)\n"
        "[none](c.md) [web](https://example.com/x.md#y) [self](#a-page)\n\n# A page\n\n"
        "`configs/a.toml`, `configs/b.toml`, `configs/devices/NAME.toml`, `configs/<gpu>.toml` and `DESIGN.md`\n",
        encoding="utf-8")
    (tmp_path / "README.md").write_text("[ok](docs/b.md#runs--train-1) [docs rule](docs/b.md#runs-train)\n",
                                        encoding="utf-8")
    page = tmp_path / "docs" / "a.md"
    assert dead_links(tmp_path, page) == [
        "docs/a.md: (b.md#runs-train_2): no heading #runs-train_2 in b.md",
        "docs/a.md: (b.md#not-a-heading): no heading #not-a-heading in b.md",
        "docs/a.md: (c.md): no such file"]
    assert dead_links(tmp_path, tmp_path / "README.md") == [
        "README.md: (docs/b.md#runs-train): no heading #runs-train in b.md"]
    assert missing_paths(tmp_path, page) == ["docs/a.md: `configs/b.toml` does not exist"]
    (tmp_path / "docs" / "c.py").write_text('"""See docs/b.md, "Runs — train"; b.md, "Top … not a"; b.md, "Gone";\n'
                                            'docs/b.md, "not a … Top" (out of order)."""\n', encoding="utf-8")
    assert stale_quotes(tmp_path, [tmp_path / "docs" / "c.py"]) == [
        'docs/c.py: b.md, "Gone" is not on that page', 'docs/c.py: docs/b.md, "not a … Top" is not on that page']


def test_github_anchors_follow_githubs_rule():
    """Hand-worked from GitHub's rule (punctuation dropped, each space a hyphen, no runs merged)."""
    assert github_slug("Runs — train (fp16), 2.5×") == "runs--train-fp16-25"
    assert github_slug("What it is for") == "what-it-is-for"


@pytest.mark.long
def test_docs_anchors_are_python_markdowns():
    """The docs pages' anchors as computed here equal the ids Python-Markdown's toc gives their headings
    (mkdocs' renderer, with the site's table, admonition and fence extensions; rendering every page takes about
    a second)."""
    markdown = pytest.importorskip("markdown")
    pytest.importorskip("pymdownx")
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        html = markdown.markdown(text, extensions=["toc", "tables", "admonition", "pymdownx.superfences"])
        ids = set(re.findall(r"<h[1-6] id=\"([^\"]+)\"", html))
        assert anchors(page, github=False) == ids, page.name
