"""The README and docs/ cannot rot: every relative link and `#anchor` resolves, every repo
path they quote exists, the set-up block is the two commands the project keeps, and the
catalog counts they state are the catalog's."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from verifiers import domain as domain_registry

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# The README's domain table and docs/domains.md's: `| `name` | count | yes/no |`
DOMAIN_ROW = re.compile(r"^\| `(\w+)` \| (\d+) \| (yes|no) \|", re.MULTILINE)


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a `#` line in a shell block is no heading)."""
    return re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.MULTILINE | re.DOTALL)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped (but `-`
    and `_`), each space a `-`."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _prose(page.read_text()), re.MULTILINE):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _links(page: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text()))


def _catalog() -> dict[str, int]:
    return {
        d.name: len(list(d.glob("*/task.toml")))
        for d in sorted((ROOT / "tasks").iterdir())
        if d.is_dir()
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for link in _links(page):
        if re.match(r"[a-z]+:", link):  # http(s), mailto: not ours to check here
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link} (no {target.relative_to(ROOT)})")
        elif anchor and (target.suffix != ".md" or anchor not in _anchors(target)):
            broken.append(f"{link} (no heading #{anchor})")
    assert not broken, broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_repo_path_exists(page: Path) -> None:
    """`verifiers/sandbox.py`, `bench/results/scale.txt` ...: a path under a top-level
    directory of the checkout, quoted in backticks, names something there (templates
    such as `tasks/<domain>/` and globs are left out)."""
    tops = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}
    gone = [
        quoted
        for quoted in re.findall(r"`([^`\s]+/[^`\s]*)`", page.read_text())
        if quoted.split("/")[0] in tops
        and not re.search(r"[<>*{}\[]|\.\.\.", quoted)
        and not (ROOT / quoted).exists()
    ]
    assert not gone, gone


def test_the_readme_keeps_the_two_setup_commands_first() -> None:
    """The project's rule: the README's set-up is `make demo` and `make test`, and nothing
    else, in its first code block."""
    block = re.search(r"^```sh\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    assert commands == ["make demo", "make test"]


@pytest.mark.parametrize("name", ["README.md", "docs/domains.md"])
def test_stated_catalog_counts_are_the_catalogs(name: str) -> None:
    """The domain table's counts and `make demo` column, and every "N tasks" outside code
    blocks: the whole catalog, or what `make demo` runs (the README states both)."""
    text = (ROOT / name).read_text()
    rows = {d: (int(n), flag == "yes") for d, n, flag in DOMAIN_ROW.findall(text)}
    catalog = _catalog()
    demo = set(domain_registry.default_run())
    assert rows == {d: (n, d in demo) for d, n in catalog.items()}
    true = {sum(catalog.values()), sum(catalog[d] for d in demo)}
    stated = {int(n) for n in re.findall(r"(\d+) tasks", _prose(text))}
    assert not stated - true, f"{name}: task counts the catalog does not have: {stated - true}"
    assert name != "README.md" or stated == true, f"the README states {stated}, not {true}"


def test_the_slug_is_githubs() -> None:
    assert _slug("Fleet use (#30)") == "fleet-use-30"
    assert _slug("`make test`") == "make-test"
    assert _slug("Beyond one machine: node images, a Ray cluster, PostgreSQL, S3") == (
        "beyond-one-machine-node-images-a-ray-cluster-postgresql-s3"
    )
