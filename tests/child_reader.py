"""Reading hostile text in a child process: a pattern that backtracks for minutes fails the test at a
guard instead of hanging the suite, and no test asserts a duration."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

GUARD_SECONDS = 120


def read_in_child(script: str, stdin: str | None = None) -> Any:
    """Run `script` in a fresh Python and return the JSON it prints; raises TimeoutExpired past the
    guard, CalledProcessError when it fails."""
    child = subprocess.run(
        [sys.executable, "-c", script],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
        check=True,
    )
    return json.loads(child.stdout)
