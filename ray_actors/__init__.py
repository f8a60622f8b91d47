"""Ray actors that wrap verifiers and generators, pinned to node types by resources."""

__crucible__ = True  # the mark flows/cli/install.py looks for: this module is Crucible's
