"""The verifiers: the contract, the sandbox, the taxonomy and one module per domain."""

__crucible__ = True  # the mark flows/cli/install.py looks for: this module is Crucible's
