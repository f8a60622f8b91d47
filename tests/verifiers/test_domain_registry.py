"""The domain registry: the only map from a name to a descriptor, and the rule that shared
code never names a domain."""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verifiers import domain as domains
from verifiers.domain import Domain, ExtractRules, PromptStyle

ROOT = Path(__file__).resolve().parents[2]


def _toy(name: str = "toy", **kw) -> Domain:
    fields = dict(
        name=name,
        verifier="toy.verifier:ToyVerifier",
        spec_loader="toy.spec:load",
        resource="cpu",
        install="pip install toy",
        prompt=PromptStyle("Toy", "toy", "a toy"),
        extract=ExtractRules(entry=r"^toy", named_entry=r"^toy {name}", unfenced=r"\Atoy"),
        syntax="c",
        gates=(("compile", "build"), ("run", "run")),
    )
    fields.update(kw)
    return Domain(**fields)


def fresh_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`code` run by a new interpreter in the checkout (what it imports is its own)."""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out


@pytest.fixture
def toy():
    d = _toy()
    domains.register(d)
    try:
        yield d
    finally:
        domains.unregister(d.name)


def test_builtin_domains_sorted_and_complete():
    assert domains.names() == ("ascendc", "cad", "cuda", "embedded", "rtl", "triton", "x86asm")
    assert list(domains.domains()) == sorted(domains.domains())
    assert set(domains.default_run()) == {"cad", "embedded", "rtl"}
    for name, d in domains.domains().items():
        assert d.name == name
        for gate in d.gate_names:
            assert d.stage_of(gate) in domains.STAGES
        assert d.stage_of("format") == "build"


def test_register_refuses_a_silent_overwrite(toy):
    domains.register(toy)  # the same descriptor again: no change, fine
    other = dataclasses.replace(toy, resource="eda")
    with pytest.raises(ValueError, match="already registered"):
        domains.register(other)
    domains.register(other, overwrite=True)
    assert domains.get("toy").resource == "eda"
    assert "toy" in domains.names()


def test_unknown_domain_lists_the_known_ones():
    with pytest.raises(domains.UnknownDomain) as e:
        domains.get("rtll")
    assert "rtll" in str(e.value) and "rtl" in str(e.value) and "cad" in str(e.value)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(name="Bad-Name"), "snake_case"),
        (dict(verifier="no_colon"), "dotted"),
        (dict(syntax="cobol"), "syntax"),
        (dict(gates=()), "gates"),
        (dict(gates=(("a", "build"), ("a", "run"))), "unique"),
        (dict(gates=(("format", "build"),)), "format"),
        (dict(gates=(("a", "compile"),)), "stage"),
        (dict(fast_gates=("nope",)), "fast_gates"),
    ],
)
def test_descriptor_refuses_malformed_fields(bad, match):
    with pytest.raises(ValueError, match=match):
        _toy(**bad)


def test_entry_point_group_discovers_a_domain_of_another_package(tmp_path):
    """A package installed next to Crucible declares its domain in the `crucible.domains`
    entry-point group; the registry finds it with no edit here."""
    pkg = tmp_path / "toypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "domain.py").write_text(
        textwrap.dedent(
            """
            from verifiers.domain import Domain, ExtractRules, PromptStyle
            DOMAIN = Domain(
                name="toyep", verifier="toypkg.v:V", spec_loader="toypkg.s:load",
                resource="cpu", install="pip install toypkg",
                prompt=PromptStyle("Toy", "toy", "a toy"),
                extract=ExtractRules(entry="^t", named_entry="^t {name}", unfenced="t"),
                syntax="c", gates=(("compile", "build"),),
            )
            WRONG = DOMAIN
            """
        )
    )
    dist = tmp_path / "toypkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toypkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[crucible.domains]\ntoyep = toypkg.domain:DOMAIN\nmisnamed = toypkg.domain:WRONG\n"
        "broken = toypkg.nowhere:DOMAIN\n"
    )
    code = (
        "from verifiers import domain as d; print(','.join(d.names())); "
        "print(d.get('toyep').install)"
    )
    out = fresh_python(code, env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"})
    names, install = out.stdout.split()[:2], out.stdout.strip().splitlines()[1]
    assert names[0].split(",") == [
        "ascendc",
        "cad",
        "cuda",
        "embedded",
        "rtl",
        "toyep",
        "triton",
        "x86asm",
    ]
    assert install == "pip install toypkg"
    # the misnamed and the broken entry points are ignored with a warning, not a crash
    assert "misnamed" in out.stderr and "broken" in out.stderr


def test_spec_loaders_do_not_import_the_catalog():
    """The import circle (catalog -> domain spec loader -> catalog) is broken: the loaders
    and the catalog share a leaf module."""
    code = (
        "import sys; import verifiers.rtl.spec, verifiers.kernels.spec, verifiers.cad.spec; "
        "print('verifiers.catalog' in sys.modules)"
    )
    out = fresh_python(code)
    assert out.stdout.strip() == "False"
    # the leaf imports none of ours but `verifiers.pyast` (the locked parse), itself a leaf
    for name, allowed in (("specfields", {"verifiers.pyast"}), ("pyast", set())):
        leaf = ast.parse((ROOT / "verifiers" / f"{name}.py").read_text())
        imported = {
            n.module + (f".{a.name}" if n.module == "verifiers" else "")
            for n in ast.walk(leaf)
            if isinstance(n, ast.ImportFrom) and n.module
            for a in n.names
        } | {a.name for n in ast.walk(leaf) if isinstance(n, ast.Import) for a in n.names}
        ours = {m for m in imported if m.startswith(("verifiers", "generators", "lake"))}
        assert ours <= allowed, (name, ours)


def test_descriptors_are_stdlib_only():
    """Reading a descriptor never imports a toolchain (or Crucible's heavier modules)."""
    code = (
        "import sys; from verifiers import domain as d; d.names(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch','triton','cadquery','OCP','numpy','ray','prefect','duckdb','deltalake')"
        " or m in ('verifiers.base','verifiers.sandbox')))"
    )
    out = fresh_python(code)
    assert out.stdout.strip() == "[]"


# --- no domain names in shared code ----------------------------------------------------
SHARED = ("flows", "lake", "ray_actors", "sql", "generators")
# generators/ holds shared code and the per-domain offline generators: those are a
# domain's own code (named by its descriptor's `perturb`), so they are not shared
DOMAIN_OWNED_PREFIXES = ("generators/perturb/",)
SHARED_IN_PERTURB = ("generators/perturb/__init__.py", "generators/perturb/repair.py")

# (path, literal): why this one stays
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _domain_words() -> dict[str, re.Pattern[str]]:
    # any case: "RTL:" in a card sentence is the domain's fact as much as "rtl"
    return {n: re.compile(rf"(?<![A-Za-z0-9]){n}(?![A-Za-z0-9])", re.I) for n in domains.names()}


def _domain_modules() -> set[str]:
    """The packages a domain owns: every module its descriptor names, by package."""
    mods = set()
    for d in domains.domains().values():
        for dotted in (d.verifier, d.spec_loader, d.perturb, d.settings):
            if dotted:
                mod = dotted.split(":")[0]
                # verifiers.rtl.verifier -> verifiers.rtl; generators.perturb.rtl -> itself
                parts = mod.split(".")
                mods.add(".".join(parts[:2]) if parts[0] == "verifiers" else mod)
    return mods


def _shared_files() -> list[Path]:
    out = []
    for top in SHARED:
        for p in sorted((ROOT / top).rglob("*")):
            rel = p.relative_to(ROOT).as_posix()
            if p.suffix not in (".py", ".sql") or "__pycache__" in rel:
                continue
            if rel.startswith(DOMAIN_OWNED_PREFIXES) and rel not in SHARED_IN_PERTURB:
                continue
            out.append(p)
    return out


def _python_literals(tree: ast.AST) -> list[tuple[int, str]]:
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def domain_literals() -> list[tuple[str, int, str, str]]:
    """(path, line, domain, text) for every domain name in shared code."""
    words, mods = _domain_words(), _domain_modules()
    found = []
    for p in _shared_files():
        rel = p.relative_to(ROOT).as_posix()
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".sql":
            code = re.sub(r"--[^\n]*", "", text)  # comments are prose
            for m in re.finditer(r"'([^']*)'", code):
                for name, rx in words.items():
                    if rx.search(m.group(1)):
                        line = code[: m.start()].count("\n") + 1
                        found.append((rel, line, name, m.group(0)))
            continue
        tree = ast.parse(text)
        for line, value in _python_literals(tree):
            for name, rx in words.items():
                if rx.search(value):
                    found.append((rel, line, name, value[:60]))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for mod in names:
                owner = next((m for m in mods if mod == m or mod.startswith(m + ".")), None)
                if owner:
                    found.append((rel, node.lineno, owner, f"import {mod}"))
    return [f for f in found if (f[0], f[3]) not in EXCEPTIONS]


def test_no_domain_names_in_shared_code():
    """flows/, lake/, ray_actors/, sql/ and shared generators/ code ask the descriptor:
    a domain's name as a literal there, or an import of a domain's package, is a side
    table in disguise."""
    found = domain_literals()
    shown = "\n".join(f"{p}:{ln}: {d}: {t!r}" for p, ln, d, t in found)
    assert not found, f"domain literals in shared code:\n{shown}"


def test_the_literal_detector_finds_what_it_must(tmp_path, monkeypatch):
    """The detector itself fails on a planted literal, import and SQL string."""
    for top in SHARED:
        (tmp_path / top).mkdir()
    (tmp_path / "lake" / "x.py").write_text(
        '"""Docstrings may say rtl."""\n# so may comments: cad\n'
        'METRIC = {"rtl": 1}\nfrom verifiers.cad.verifier import CadVerifier\n'
    )
    (tmp_path / "sql" / "x.sql").write_text("-- prose: triton\nSELECT * WHERE domain = 'cuda'\n")
    (tmp_path / "generators" / "perturb").mkdir()
    (tmp_path / "generators" / "perturb" / "rtl.py").write_text('OWN = "rtl"\n')
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = {(p, d) for p, _, d, _ in domain_literals()}
    assert found == {("lake/x.py", "rtl"), ("lake/x.py", "verifiers.cad"), ("sql/x.sql", "cuda")}
