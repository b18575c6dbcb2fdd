import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def run(*args, files=None):
    """Run the CLI in a temporary folder holding `files` (name -> text)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (files or {}).items():
            Path(tmp, name).write_text(text, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(PROJECT)}
        return subprocess.run([sys.executable, "-m", "textstats", *args], cwd=tmp, env=env,
                              capture_output=True, text=True)
