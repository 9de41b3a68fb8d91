"""The chat map for players (issue 21): ask the dolls a question by stepping on a floor
pedal, watch them think in the lane hall, read the reply on the letter wall.

Owns the chat room and its controls (the lanes and the hall of lights are the standard
layout's; mapgen/room.py finishes the map):

- **prompt pedals** on the room's floor, one per question of `PROMPTS`; stepping on one
  starts the chat script (`SCRIPT_CHAT`);
- the **letter wall**: a lamp per symbol of the vocabulary on the room's floor,
  lit when the network's one-hot output o[k] of that symbol is 1, and the reply so far
  printed on the screen, one character per step;
- the **chat script**: the bus's own steps in a loop, nothing more. It writes the prompt's
  characters (constants) into the input c one step at a time (script 2, the first with the
  begin script 3), then runs fed steps (script 6: the map copies the chosen y into c) until
  the network's own `done` output is 1. The noise inputs stay 0: greedy decoding with the
  repetition penalty, which the network applies. After each step it looks at the one-hot
  lights: the symbol whose o[k] is 1 is printed and its lamp lit (acting on a one-hot
  output; `ui_violations` checks that no control computes on a neuron's value).

For visitors' tests, `SCRIPT_STATUS` (token) leaves the runs finished in USER1, the last
reply's length in USER2 and its symbol indices from USER3 on.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from types import SimpleNamespace

from mapgen.circuit import lower
from mapgen.compile import CompiledMap, compile_acs
from mapgen import physics as P
from mapgen.layout import conveyor_tag_for, emit_lane, inset_sector, place_lanes
from mapgen.program import SCRIPT_BEGIN, SCRIPT_FED, SCRIPT_INFER, manifest
from mapgen.udmf import MapModel, Sector, Thing

from models.chat_corpus import VOCAB, encode

from engine.visitor import GalleryDriver
from mapgen.room import SKY, box, finish_hall

PROMPTS = ("bus?", "what is a door?", "what is a map?", "what is the doll?")
SCRIPT_PEDAL = 30                # 30..: the pedal of prompt 0, 1, ...
SCRIPT_CHAT = 40                 # (p): one chat run on prompt p
SCRIPT_STATUS = 42               # the reply's symbols to USER1.., for tests
SEC_ACT_ENTER = 9998
ACS_EXECUTE = 80
LAMP_OFF, LAMP_ON = 40, 255


@dataclass
class ChatMap:
    compiled: CompiledMap
    spots: dict[str, tuple[float, float]]
    lamp_tags: list[int]
    net: object


def _pedals(m: MapModel, gal, tags: list[int], spots: dict) -> None:
    """A pedal per prompt, in a row across the gallery floor."""
    n = len(PROMPTS)
    y = gal.y0 + 300
    for i in range(n):
        x = gal.cx + (i - (n - 1) / 2) * 200
        inset_sector(m, gal.room, box(x, y, 128, 128), Sector(
            gal.floor + 4, gal.ceil, 200, tag=tags[i], floor_tex="FLAT22",
            comment=f"pedal of prompt {i}: {PROMPTS[i]!r}"))
        m.things.append(Thing(x, y, SEC_ACT_ENTER, special=ACS_EXECUTE,
                              args=(SCRIPT_PEDAL + i, 0), comment=f"prompt pedal {i}"))
        spots[f"prompt{i}"] = (x, y)
    spots["rest"] = (gal.cx, gal.y0 + 100)


def _letter_wall(m: MapModel, gal, tags: list[int], spots: dict) -> None:
    """A lamp per vocabulary symbol, in the order of the vocabulary, along the gallery's
    far (south) side: floor tiles a visitor sees light up as the reply is written."""
    per_row = 15
    for k in range(len(VOCAB)):
        r, c = divmod(k, per_row)
        x = gal.cx + (c - (per_row - 1) / 2) * 56
        y = gal.y0 + 560 + r * 56
        inset_sector(m, gal.room, box(x, y, 48, 48), Sector(
            gal.floor, gal.ceil, LAMP_OFF, tag=tags[k], floor_tex="FLAT2",
            comment=f"letter lamp of {VOCAB[k]!r}"))
    spots["view"] = (gal.cx, gal.y0 + 420)


def _room(m: MapModel) -> SimpleNamespace:
    """The chat room, west of the lanes (x < 0): a box of its own. (A lane hall with the
    lanes as trenches in one floor, mapgen/room.py, is one sector with a thousand holes:
    ViZDoom's node builder crashed on it at this size, so the lanes stay in the void.)"""
    x0, y0, x1, y1 = -2048.0, 0.0, -256.0, 1024.0
    # A sky ceiling: GZDoom's OpenGL renderer draws nothing from a map's start until a
    # frame shows sky (docs/gzdoom.md, "the black start"); under FLAT19 the room was black.
    room = m.rect_sector(x0, y0, x1, y1, Sector(0, 256, 160, floor_tex="FLOOR4_8",
                                                ceil_tex=SKY, comment="chat room"),
                         tex="MARBLE1")
    return SimpleNamespace(room=room, floor=0, ceil=256, cx=(x0 + x1) / 2, y0=y0)


def build(net, title: str = "chat", acc: str = "internal") -> ChatMap:
    circuit = lower(net)
    m = MapModel()
    conveyor = conveyor_tag_for(circuit)
    pedal_tags = [conveyor + 1 + i for i in range(len(PROMPTS))]
    lamp_tags = [conveyor + 1 + len(PROMPTS) + k for k in range(len(VOCAB))]
    geoms = place_lanes(circuit, 0.0, 0.0)
    for g in geoms:
        emit_lane(m, g, conveyor)
    hall_box = (0.0, 0.0, max(g.x0 + g.length for g in geoms),
                max(g.y0 for g in geoms) + P.LANE_WIDTH)
    gal = _room(m)
    spots: dict[str, tuple[float, float]] = {}
    _pedals(m, gal, pedal_tags, spots)
    _letter_wall(m, gal, lamp_tags, spots)
    layout, sched, machine = finish_hall(m, circuit, geoms, hall_box, {}, conveyor, set(),
                                         spots["rest"], title)
    # The circuit's netlist is the lowered one (products split into quarter squares): its
    # node ids are not the parsed netlist's, so lights are looked up by its own outputs.
    low = circuit.net
    light = {low.nodes[o].name: circuit.value_light[o] for o in low.outputs}
    o_tags = [light[f"o[{k}]"] for k in range(len(VOCAB))]
    inputs = [low.nodes[i].name for i in low.inputs]
    controls = controls_source(o_tags, light["done"], lamp_tags, sched.inference_tics,
                               inputs.index("c"), len(inputs))
    bad = ui_violations(controls, o_tags + [light["done"]])
    if bad:
        raise AssertionError(f"chat control ACS computes on a neuron: {bad[0]}")
    source = machine + "\n" + controls
    behavior = compile_acs(source, "chat.acs", acc)
    info = manifest(layout, sched, title)
    info["gallery"] = {"spots": {k: list(v) for k, v in spots.items()}}
    info["chat"] = {"prompts": list(PROMPTS), "status_script": SCRIPT_STATUS}
    cm = CompiledMap("MAP01", title, circuit, layout, sched, m.textmap(), source, behavior,
                     info)
    return ChatMap(cm, spots, lamp_tags, net)


def controls_source(o_tags, done_tag: int, lamp_tags, tics: int, c_index: int = 0,
                    n_inputs: int = 46) -> str:
    """The pedal scripts and the chat script (module docstring); the character is input
    `c_index` of `n_inputs`, the others are the noise (0: greedy)."""
    n = len(VOCAB)
    prompts = [encode(p + "\n") for p in PROMPTS]
    width = max(len(p) for p in prompts)
    flat = [c for p in prompts for c in p + [0] * (width - len(p))]
    names = ", ".join(f'"{_esc(VOCAB[k])}"' for k in range(n))
    L = [
        "// ---------------------------------------------------------------------------------",
        "// The visitor's controls: a pedal per prompt starts a chat run. The run is the",
        "// bus's steps in a loop: the prompt's characters (constants) into the input c, then",
        "// fed steps (the map copies the chosen y into c) until the network's done output",
        "// is 1. After each step the symbol whose one-hot o[k] is 1 is printed and its lamp",
        "// lit: no control computes on a neuron's value.",
        f"int prompt_len[{len(prompts)}] = {{{', '.join(str(len(p)) for p in prompts)}}};",
        f"int prompt_ids[{len(flat)}] = {{{', '.join(map(str, flat))}}};",
        "int busy, seq_chat, reply_len, chat_done;  // chat_done: runs finished",
        "int reply[48];",
        "str reply_text;",
        f"str symbols[{n}] = {{{names}}};",
        "",
        "function void show_choice (void)  // act on the one-hot o: print and light its symbol",
        "{",
        "    int k = -1;",
    ]
    for k, t in enumerate(o_tags):
        L.append(f"    if (GetSectorLightLevel({t}) == 1) k = {k};  // o[{k}] is set")
    L += [
        "    if (k >= 0) {",
        "        reply[reply_len] = k; reply_len = reply_len + 1;",
        "        if (k > 0) reply_text = StrParam(s: reply_text, s: symbols[k]);",
        "    }",
    ]
    for k, t in enumerate(lamp_tags):
        L.append(f"    if (k == {k}) Light_ChangeToValue({t}, {LAMP_ON}); "
                 f"else Light_ChangeToValue({t}, {LAMP_OFF});")
    L += [
        "    HudMessage(s: reply_text; HUDMSG_PLAIN, 1, CR_GOLD, 0.5, 0.8, 0.0);",
        "}",
        "",
        f"script {SCRIPT_CHAT} (int p)  // one chat run on prompt p",
        "{",
        "    if (busy) terminate;",
        "    busy = 1; reply_len = 0; reply_text = \"\";",
        "    if (seq_chat < 1000000) seq_chat = 1000000;  // apart from a runner's acks",
        "    int t;",
        f"    for (t = 0; t < {n_inputs}; t++) inputs[t] = 0;  // the noise: 0, greedy",
        "    for (t = 0; t < prompt_len[p]; t++) {",
        f"        inputs[{c_index}] = prompt_ids[p * {width} + t];  // the prompt's character",
        "        seq_chat = seq_chat + 1;",
        f"        if (t == 0) ACS_Execute({SCRIPT_BEGIN}, 0);  // a new sequence: prev lights to their init",
        f"        ACS_Execute({SCRIPT_INFER}, 0, seq_chat);",
        f"        Delay({tics});",
        "        while (ack != seq_chat) Delay(1);  // the step's acknowledgement (the bus's)",
        "    }",
        "    show_choice();  // the prompt's newline step chose the first character",
        "    t = prompt_len[p];",
        f"    while (GetSectorLightLevel({done_tag}) != 1 && t < 48) {{  // done: a 0/1 output",
        "        seq_chat = seq_chat + 1;",
        f"        ACS_Execute({SCRIPT_FED}, 0, seq_chat);  // c = y, copied in the map",
        f"        Delay({tics});",
        "        while (ack != seq_chat) Delay(1);",
        "        show_choice();",
        "        t = t + 1;",
        "    }",
        "    chat_done = chat_done + 1;",
        "    busy = 0;",
        "}",
        "",
    ]
    for i in range(len(prompts)):
        L += [f"script {SCRIPT_PEDAL + i} (void)  // pedal {i}: {PROMPTS[i]!r}", "{",
              f"    ACS_Execute({SCRIPT_CHAT}, 0, {i});", "}", ""]
    L += [f"script {SCRIPT_STATUS} (int token)  // runs done, the last reply, for tests", "{",
          "    user1 = chat_done;", "    user2 = reply_len;"]
    L += [f"    user{j + 3} = reply[{j}];" for j in range(48)]
    L += ["    read_ack = token;", "}", ""]
    return "\n".join(L)


def _esc(ch: str) -> str:
    return {"\n": "\\n", '"': '\\"', "\\": "\\\\"}.get(ch, ch)


def ui_violations(source: str, readable: list[int]) -> list[str]:
    """Control statements that read a light other than the one-hot outputs and done, or
    that do anything with such a light but compare it with 1."""
    bad = []
    for line in source.splitlines():
        code = line.split("//", 1)[0].strip()
        for m in re.finditer(r"GetSector(LightLevel|FloorZ|CeilingZ)\(([^)]*)\)", code):
            arg = m.group(2).strip()
            if m.group(1) != "LightLevel" or not arg.isdigit() or int(arg) not in readable:
                bad.append(line.strip())
            elif not re.search(rf"GetSectorLightLevel\({arg}\) [!=]= 1", code):
                bad.append(line.strip())
    return bad


class ChatVisitor(GalleryDriver):
    """A visitor: warps onto a prompt pedal, waits for the chat run to end, reads the
    reply the map printed (SCRIPT_STATUS)."""

    what = "the chat machine"

    def status(self) -> list[int]:
        self.token = getattr(self, "token", 0) + 1
        self.engine.puke(SCRIPT_STATUS, self.token)
        self.engine.advance(1)
        vals = self.engine.users()
        if self.engine.user(self.info["read_ack_var"]) != self.token:
            from engine.doom import EngineError
            raise EngineError("the chat status script did not run")
        return vals

    def ask(self, i: int, max_steps: int = 48) -> list[int]:
        """Step on prompt pedal i; the reply's symbol indices once the run has ended."""
        from engine.doom import EngineError

        before = self.status()[0]
        self.warp("rest")
        self.warp(f"prompt{i}")
        self.warp("rest")
        per = self.info["inference_tics"] + 2
        for _ in range(max_steps + 1):
            self.engine.advance(per)
            vals = self.status()
            if vals[0] != before:
                return vals[2:2 + vals[1]]
        raise EngineError(f"the chat run on prompt {i} did not end in {max_steps} steps")
