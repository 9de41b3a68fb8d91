"""The chat room's keyboard (issue 36, demos/chat_map.py) without the engine: a pad per
symbol of the vocabulary (not the newline) and DELETE, CLEAR, ASK; pads apart, every pad
reached along its aisle without crossing another, clear of the pedals and the letter wall;
the keys' scripts pass `ui_violations` and compile (with the real acc too, when $ACC names
it); the context read from the netlist; GZDoom's visitor steps onto the right pads. The
walking visitor in the engine is in tests/test_chat_engine.py (it shares that map)."""
from __future__ import annotations

import re

import pytest

import acs
from demos import chat_map
from demos.chat_map import KEY_SIZE, ROOM, VOCAB, keyboard

PLAYER_MARGIN = 16      # a walker's tolerance and drift stay well inside this


def _box(k: dict) -> tuple:
    return (k["x"] - k["w"] / 2, k["y"] - KEY_SIZE / 2, k["x"] + k["w"] / 2,
            k["y"] + KEY_SIZE / 2)


def _near(b: tuple, x: float, y: float, margin: float = PLAYER_MARGIN) -> bool:
    return b[0] - margin < x < b[2] + margin and b[1] - margin < y < b[3] + margin


def test_every_symbol_has_one_key_and_the_controls_theirs():
    keys = keyboard()
    typed = sorted(k["symbol"] for k in keys.values() if k["symbol"] is not None)
    assert typed == [i for i, ch in enumerate(VOCAB) if ch != "\n"]
    assert all(VOCAB[k["symbol"]] == label for label, k in keys.items() if len(label) == 1)
    assert {l for l in keys if len(l) > 1} == {"DELETE", "CLEAR", "ASK"}
    assert len(keys) == len(VOCAB) - 1 + 3


def test_pads_are_apart_and_each_is_reached_along_its_aisle():
    keys, corridor = keyboard(), chat_map.corridor_x()
    boxes = {l: _box(k) for l, k in keys.items()}
    others = [(x - 64, y - 64, x + 64, y + 64) for x, y in chat_map.pedal_centres()] + \
             [(x - 24, y - 24, x + 24, y + 24) for x, y in chat_map.lamp_centres(
                 (ROOM[0] + ROOM[2]) / 2)]
    for label, k in keys.items():
        b = boxes[label]
        assert ROOM[0] < b[0] and b[2] < corridor - PLAYER_MARGIN and b[3] < ROOM[3]
        # the walk: along the aisle from the corridor, up onto the pad, back
        path = [(x, k["aisle"]) for x in range(int(k["x"]), int(corridor) + 1, 4)]
        path += [(k["x"], k["aisle"] + d) for d in range(0, int(k["y"] - k["aisle"]) + 1, 4)]
        for other, ob in list(boxes.items()) + [(f"part {i}", o) for i, o in enumerate(others)]:
            if other == label:
                continue
            assert not any(_near(ob, x, y) for x, y in path), f"{label!r}'s walk nears {other!r}"
    aisles = sorted({k["aisle"] for k in keys.values()})
    for x, y in chat_map.pedal_centres():   # the corridor's run and the start, clear too
        assert x + 64 + PLAYER_MARGIN < min(b[0] for b in boxes.values())
    assert aisles[0] > ROOM[1] + 96 and all(not _near(b, corridor, y) for b in boxes.values()
                                            for y in range(int(ROOM[1]) + 96, int(aisles[-1])))


def test_context_comes_from_the_netlist():
    from demos import chat

    assert chat_map.context_of(chat.load_net()) == chat.load_model().cfg.context == 48


def _controls(context: int = 48) -> str:
    return chat_map.controls_source(list(range(1, 46)), 50, list(range(100, 145)), 10, 0, 46,
                                    context)


def test_the_keys_scripts_only_copy_symbols():
    src = _controls()
    for script in (chat_map.SCRIPT_KEY, chat_map.SCRIPT_DELETE, chat_map.SCRIPT_CLEAR,
                   chat_map.SCRIPT_ASK):
        assert re.search(rf"^script {script} ", src, re.M)
    readable = list(range(1, 46)) + [50]
    assert chat_map.ui_violations(src, readable) == []
    assert "at most 46 characters" in src and "typed_len >= 46" in src
    assert "at most 30 characters" in _controls(32)
    # a key that typed what a light holds would compute on the network: caught
    bad = src.replace("typed[typed_len] = k;", "typed[typed_len] = GetSectorLightLevel(7);")
    assert bad != src and chat_map.ui_violations(bad, readable)


def _program(src: str) -> str:
    """The controls with the machine's declarations they use (mapgen/program.py)."""
    head = ['#include "zcommon.acs"'] + [f"global int {k}:user{k};" for k in range(1, 59)]
    head += ["global int 59:read_ack;", "global int 60:ack;", "int inputs[46];"]
    return "\n".join(head + [src])


def test_the_controls_compile_with_ours_and_the_real_acc():
    from acs.external import compile_with_acc, find_acc

    lump = acs.compile_source(_program(_controls()), "chat.acs")
    assert lump[:3] == b"ACS"
    if find_acc() is None:
        pytest.skip("NOT RUN (ours compiled): the real acc is not installed; set $ACC")
    assert compile_with_acc(_program(_controls()), "chat.acs")[:3] == b"ACS"  # acc: ACS, a zero byte


def test_gzdoom_visitor_steps_onto_each_key_then_ask():
    keys = keyboard()
    info = {"init_tics": 10, "inference_tics": 100, "chat": {"keys": keys},
            "gallery": {"spots": {"rest": (0, 0)}}}
    parts = chat_map.gzdoom_visit(info, "hi!", 3)
    onto = [p for p in parts if p.startswith("warp")][1::3][:4]
    assert onto == [f"warp {keys[l]['x']:g} {keys[l]['y']:g}" for l in ("h", "i", "!", "ASK")]
    assert parts[-1] == "SHOT"
