"""dpsql's version: one definition, read by the package, the probes, the prompt and the build."""

__version__ = "0.1.0"
