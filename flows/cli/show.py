"""`crucible show`: a candidate's artifacts out of the lake."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flows import render
from flows.cli.base import (
    app,
)
from flows.options import (
    DEFAULT_LAKE,
    LakeOpt,
    lake_text,
)

if TYPE_CHECKING:
    pass


@app.command(
    short_help="Write a candidate's picture or artifacts.",
    rich_help_panel="Lake",
    needs=("lake",),
)
def show(
    candidate: Annotated[
        str, typer.Argument(help="A candidate_id, or a prefix of one (at least 6 characters).")
    ],
    lake: LakeOpt = DEFAULT_LAKE,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Where to write: a file for one artifact, a directory for several "
            "(default: ./<candidate id[:12]>.<ext> in the current directory).",
        ),
    ] = None,
    kind: Annotated[
        str,
        typer.Option(
            help="Which artifact: picture (the candidate over its reference, with the "
            "verdict in it, where its verifier renders one), any other kind the lake holds "
            "for it, or `all`."
        ),
    ] = "picture",
) -> None:
    """Write a candidate's artifacts out of the lake: by default its picture (PNG, where
    its verifier renders one: the candidate over its reference, with the verdict, its
    measures and a legend drawn in). Exit code 1 when there is nothing to write."""
    from lake import db
    from lake.store import Lake, LakeError

    con = render.console()
    if len(candidate) < 6 or any(ch not in "0123456789abcdef" for ch in candidate.lower()):
        raise typer.BadParameter(
            "expected a hex candidate_id or a prefix of at least 6 characters",
            param_hint="CANDIDATE",
        )
    try:
        store = Lake(lake, readonly=True)
        duck = db.connect(store)
    except LakeError as e:
        con.print(f"[bold red]lake error:[/] {e}")
        raise typer.Exit(2) from None
    try:
        rows = db.rows(duck, "candidate_artifacts", prefix=candidate.lower())
    finally:
        duck.close()
    ids = sorted({r["candidate_id"] for r in rows})
    if not ids:
        con.print(f"no candidate {candidate!r} in lake {lake_text(lake)}")
        raise typer.Exit(1)
    if len(ids) > 1:
        raise typer.BadParameter(
            f"{candidate!r} matches {len(ids)} candidates: {', '.join(i[:16] for i in ids[:5])}",
            param_hint="CANDIDATE",
        )
    head = rows[0]
    status = head["status"] or "not verified yet"
    con.print(f"{ids[0][:16]} · {head['task']} ({head['domain']}) · {status} {head['code'] or ''}")
    found = [r for r in rows if r["kind"] and (kind == "all" or r["kind"] == kind)]
    if not found:
        have = sorted({r["kind"] for r in rows if r["kind"]})
        con.print(
            f"its latest verdict has no {kind!r} artifact"
            + (f" (it has: {', '.join(have)})" if have else "")
        )
        raise typer.Exit(1)
    for r in found:
        dest = _show_dest(out, r, ids[0], several=len(found) > 1)
        try:
            data = store.read_artifact(r["sha256"])
        except LakeError as e:
            con.print(f"[bold red]lake error:[/] {e}")
            raise typer.Exit(2) from None
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        con.print(f"wrote {r['kind']} ({len(data):,} bytes) to {dest}")


def _show_dest(out: Path | None, row: dict, cand_id: str, several: bool) -> Path:
    ext = Path(row["name"]).suffix or ".bin"
    default = f"{cand_id[:12]}-{Path(row['name']).stem}{ext}" if several else f"{cand_id[:12]}{ext}"
    if out is None:
        return Path(default)
    if several or out.is_dir():
        return out / default
    return out
