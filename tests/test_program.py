"""The generated ACS is only the bus and the clock, and it compiles and reads well."""
import glob
import os

import pytest

from conftest import NEEDS_TILES, ROOT
from dsl import load
from mapgen.compile import compile_netlist
from mapgen import physics as P
from mapgen.program import bus_violations

CIRCUITS = [p for p in sorted(glob.glob(os.path.join(ROOT, "circuits", "*.dnet")))
            if "mnist" not in p and os.path.basename(p) not in NEEDS_TILES]


@pytest.mark.parametrize("path", CIRCUITS, ids=os.path.basename)
def test_generated_acs_only_moves_values(path):
    cm = compile_netlist(load(path))
    assert bus_violations(cm.acs) == []
    # Every light is reset, every lane is parked and released, every door written once.
    c = cm.circuit
    infer, fed, pipe = (script_body(cm.acs, k) for k in (2, 6, 4))
    assert (pipe == "") == (cm.schedule.pipeline is None)
    # a run of steps (spiking, recurrent) goes step by step: no pipelined beat (compile's
    # run_all has checked the beat of the others)
    assert (cm.schedule.pipeline is None) == cm.circuit.net.multi_step
    assert (fed == "") == (cm.manifest["fed_script"] is None)
    # Counted once per script: a count per lane over the chat map's script is minutes.
    resets = [_calls(body, "Light_ChangeToValue") for body in (script_body(cm.acs, 3), infer)]
    for light in c.lights:
        assert resets[0 if light.persistent else 1][str(light.tag)] >= 1
    bodies = [infer] + ([fed] if fed else []) + ([pipe] if pipe else [])
    doors = [_calls(b, "Ceiling_MoveToValue") for b in bodies]
    parks = [_calls(b, "SetActorPosition") for b in bodies]
    goes = [_calls(b, "SetActorVelocity", f", {P.DOLL_SPEED << 16}, ") for b in bodies]
    at_load = _calls(script_body(cm.acs, 1), "SetActorPosition")
    for lane in c.lanes:
        for k in range(len(bodies)):
            assert doors[k][str(lane.door_tag)] == 1
            assert parks[k][str(lane.tid)] == 1   # parked after its ride
            assert goes[k][str(lane.tid)] == 1    # released once
        assert at_load[str(lane.tid)] == 1        # ... and at load time


def _calls(body: str, special: str, then: str = ", ") -> "Counter[str]":
    """How often `special(N` followed by `then` is called in body, by first argument N."""
    import re
    from collections import Counter

    return Counter(re.findall(rf"\b{special}\((-?\d+){re.escape(then)}", body))


def script_body(acs: str, number: int) -> str:
    """The text of script `number` ('' when the map has none)."""
    import re

    m = re.search(rf"^script {number} .*?^}}", acs, re.M | re.S)
    return m.group(0) if m else ""


@pytest.mark.parametrize("line", [
    "user1 = GetSectorLightLevel(3) + 1;",
    "Ceiling_MoveToValue(4, 8, GetSectorLightLevel(3) * 2, 0);",
    "if (GetSectorLightLevel(3) > 0) user1 = 1;",
    "Light_RaiseByValue(3, GetSectorLightLevel(4));",
    "inputs[0] = a / 2;",
    "ack = seq + 1;",
])
def test_computing_on_values_is_caught(line):
    src = 'script 2 (int seq)\n{\n    ' + line + "\n}\n"
    assert bus_violations(src) == [(3, line)]


def test_acs_is_commented_and_indented():
    cm = compile_netlist(load(os.path.join(ROOT, "circuits", "xor.dnet")))
    assert "// neuron h_or" in cm.acs or "neuron h_or" in cm.acs
    assert "    Light_ChangeToValue(" in cm.acs
    assert cm.acs.startswith("// xor: a neural network compiled into a Doom map")


def test_many_inputs_keep_script_numbers_apart():
    """500 inputs make 125 input scripts (10..134): the read scripts move past them."""
    import re

    from dsl.random_net import mlp
    cm = compile_netlist(mlp(3, [500, 2, 1], in_range=(0, 1), weight=1, zero_fraction=0.9))
    numbers = [int(n) for n in re.findall(r"^script (\d+)", cm.acs, re.M)]
    assert len(numbers) == len(set(numbers))
    assert cm.manifest["input_scripts"][-1] == 134
    assert cm.manifest["read_batches"][0]["script"] == 200
