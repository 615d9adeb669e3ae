"""benchmarks/first_checks.py measures the matcher on the shared corpus: a quick run of its measurement."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.mark.skipif(not (CORPUS / "bench" / "links").is_dir(), reason="../shared/corpus is absent")
def test_its_bytecode_counts_do_not_move_between_runs_and_its_small_files_are_some_of_the_sites(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # (its modules, imported as the measurement runs)
    import first_checks

    one = first_checks.measure(CORPUS, repeat=20, passes=1, timings=1)
    two = first_checks.measure(CORPUS, repeat=20, passes=1, timings=1)
    assert one["first_bytecodes"] == two["first_bytecodes"] > 0  # what the machine's load cannot move
    assert one["later_small_bytecodes"] == two["later_small_bytecodes"] > 0
    assert 0 < one["small_sites"] < one["sites"]
    assert one["plugin"] == str(ROOT)  # this checkout's plugin was measured
    assert min(one["first_us"], one["later_all_ns"], one["later_small_ns"]) > 0
