"""autonomous-harness: a multi-role harness for long-running coding agents."""

__version__ = "0.1.0"
FORMAT_VERSION = 1
