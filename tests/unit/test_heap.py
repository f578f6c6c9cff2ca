"""The heap settings every zhiyi process takes (projections.core.heap)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's mallopt")
def test_the_mmap_threshold_is_fixed_in_a_fresh_process() -> None:
    code = "from projections.core.heap import fix_mmap_threshold; print(fix_mmap_threshold())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"

