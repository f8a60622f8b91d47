"""Offline generators: the reference, rewrites of it, and mutations, per domain; and the
offline repair (reconstruction from the nearest verified variant).

A domain's descriptor names its generator (`Domain.perturb`, a dotted path imported on
first use, as the verifier registry does), so importing this package costs nothing for
domains a stage does not touch, and a new domain needs no line here.
"""

from __future__ import annotations

from collections.abc import Sequence

from generators.base import Generator, RepairRequest
from verifiers import domain as domain_registry
from verifiers.contract import Candidate, Task
from verifiers.domain import load_dotted


def known_domains() -> list[str]:
    """The domains whose descriptor names a perturb generator, sorted."""
    return [name for name, d in domain_registry.domains().items() if d.perturb]


def generator_for(domain: str) -> Generator:
    """A fresh generator (its `stats` start at zero) for `domain`'s tasks."""
    try:
        dotted = domain_registry.get(domain).perturb
    except domain_registry.UnknownDomain as e:
        raise ValueError(f"no perturb generator for domain {domain!r}: {e}") from None
    if not dotted:
        raise ValueError(
            f"no perturb generator for domain {domain!r}: its descriptor declares none "
            f"(Domain.perturb); domains with one: {', '.join(known_domains())}"
        )
    cls = load_dotted(dotted)
    return cls()


class PerturbChannel(Generator):
    """The offline channel behind the common interface: each task goes to its domain's
    perturb generator; repairs go to reference-guided reconstruction."""

    name = "perturb"
    origins = ("reference", "rewrite", "perturb")
    deterministic = True
    # its candidates name their operator (`catalog:reference`, `rewrite:...`, ...)
    candidates_like = "%"

    def __init__(self) -> None:
        super().__init__()
        self._by_domain: dict[str, Generator] = {}
        self._repairer: Generator | None = None

    def generate(self, task: Task, *, n: int | None = None, seed: int = 0) -> list[Candidate]:
        gen = self._by_domain.get(task.domain)
        if gen is None:
            gen = self._by_domain[task.domain] = generator_for(task.domain)
        out = gen.generate(task, n=n, seed=seed)
        self.stats.update(gen.stats)
        gen.stats.clear()
        return out

    def repair(self, request: RepairRequest, *, seed: int = 0) -> list[Candidate]:
        if self._repairer is None:
            from generators.perturb.repair import ReconstructRepair

            self._repairer = ReconstructRepair()
        out = self._repairer.repair(request, seed=seed)
        self.stats.update({f"repair_{k}": v for k, v in self._repairer.stats.items()})
        self._repairer.stats.clear()
        return out

    def known(self) -> Sequence[str]:
        return known_domains()
