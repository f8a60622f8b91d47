"""Prefect flows, the stages, and the crucible command."""

__crucible__ = True  # the mark flows/cli/install.py looks for: this module is Crucible's
