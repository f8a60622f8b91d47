"""The CAD domain's descriptor (stdlib only: read without importing CadQuery)."""

from verifiers.domain import Domain, ExtractRules, PromptStyle

DOMAIN = Domain(
    name="cad",
    summary="CadQuery parts judged by exact geometry against the reference",
    verifier="verifiers.cad.verifier:CadVerifier",
    spec_loader="verifiers.cad.spec:load_cad_spec",
    perturb="generators.perturb.cad:CadPerturbGenerator",
    resource="cad",
    tools=("bwrap",),
    modules=("cadquery",),
    install="pip install -e '.[cad]'",
    prompt=PromptStyle(
        "CadQuery (Python)",
        "python",
        "a Python script that builds the part with CadQuery and assigns it to `result`",
    ),
    extract=ExtractRules(
        entry=r"^\s*result\s*=",
        named_entry=r"^\s*(?:class|def)\s+{name}\b",
        unfenced=r"\A(?:\s*#[^\n]*)*\s*(?:import\s|from\s+\S+\s+import\s)",
        python=True,
    ),
    syntax="python",
    gates=(
        ("anticheat", "build"),
        ("build", "build"),
        ("solid", "judge"),
        ("iou", "judge"),
        ("surface", "judge"),
    ),
    fast_gates=("build",),
    default_run=True,
)
