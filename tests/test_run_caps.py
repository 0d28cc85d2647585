"""The cap decision of `spar run` (design §8), from records already read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spar.errors import EXIT_REFUSED, Refused
from spar.judge.caps import decide

DATA = json.loads((Path(__file__).parent / "data" / "run_caps.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: c["why"])
def test_cap_decision(case):
    kwargs = {
        "series": "SERIES", "stage": case["stage"], "base": case["new"]["base"], "head": case["new"]["head"],
        "packet_sha256": case["new"]["packet"], "dry_run": case.get("dry_run", False),
        "caps": case.get("caps", DATA["caps"]), "extensions": case["extensions"], "rounds": case["rounds"],
    }
    if "refused" in case:
        with pytest.raises(Refused) as info:
            decide(**kwargs)
        assert info.value.exit_code == EXIT_REFUSED
        for part in case["refused"]:
            assert part in str(info.value)
        return
    decision = decide(**kwargs)
    assert decision.cap == case["cap"]
    assert decision.counted is case["counted"]
    assert decision.rerun_of == case.get("rerun_of")
