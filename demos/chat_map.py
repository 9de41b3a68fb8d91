"""The chat map for players (issue 21, issue 36): ask the dolls a question by typing it on
a keyboard on the floor (or stepping on a prompt pedal), watch them think in the lane hall,
read the reply on the letter wall.

Owns the chat room and its controls (the lanes and the hall of lights are the standard
layout's; mapgen/room.py finishes the map):

- the **keyboard**: a floor pad per symbol of the model's vocabulary but the newline
  (`KEYS`: QWERTY rows, digits above, punctuation at the row ends, a wide SPACE) and the
  DELETE, CLEAR and ASK pads. Rows are apart, with an aisle below each and a corridor east
  of them, so a visitor reaches any pad without crossing another. Entering a pad types its
  symbol once (step off and on again to type it again) into an ACS array, the typed prompt
  printed on the screen; a prompt cannot grow past the model's context (`context_of`: the
  prompt, its newline and a reply's first character must fit): the key is refused with a
  message. ASK runs the typed prompt;
- **prompt pedals**, one per question of `PROMPTS`, west of the keyboard: shortcuts;
- the **letter wall**: a lamp per symbol of the vocabulary on the room's floor,
  lit when the network's one-hot output o[k] of that symbol is 1, and the reply so far
  printed on the screen, one character per step;
- the **chat script**: the bus's own steps in a loop, nothing more. It writes the prompt's
  characters (a pedal's constants, or the array the keys filled) into the input c one step
  at a time (script 2, the first with the begin script 3), then runs fed steps (script 6:
  the map copies the chosen y into c) until the network's own `done` output is 1. The
  noise inputs stay 0: greedy decoding with the repetition penalty, which the network
  applies. After each step it looks at the one-hot lights: the symbol whose o[k] is 1 is
  noted (every step's, for tests), and from the prompt's newline on printed and its lamp
  lit (acting on a one-hot output; `ui_violations` checks that no control computes on a
  neuron's value). Typing only copies the pads' symbol numbers: input, not computation.

For visitors' tests, `SCRIPT_STATUS` (token, page) leaves in USER1.. page 0: the runs
finished, the last reply's length and its symbol indices; page 1: the typed prompt's
length, the last step's sequence number and its symbols; page 2: the steps of the last run
and each step's one-hot choice (-1: none lit).
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

from engine.visitor import BUTTONS, GalleryDriver, Walker
from mapgen.room import SKY, box, finish_hall

PROMPTS = ("bus?", "hello", "what is a map?", "what is the doll?")
SCRIPT_PEDAL = 30                # 30..: the pedal of prompt 0, 1, ...
SCRIPT_CHAT = 40                 # (p): one chat run on prompt p (len(PROMPTS): the typed one)
SCRIPT_STATUS = 42               # (token, page): the reply, the typed prompt, the steps
SCRIPT_KEY = 43                  # (k): type symbol k
SCRIPT_DELETE, SCRIPT_CLEAR, SCRIPT_ASK = 44, 45, 46
SEC_ACT_ENTER = 9998
ACS_EXECUTE = 80
LAMP_OFF, LAMP_ON = 40, 255
NEWLINE = encode("\n")[0]       # the prompt's end; no pad types it

# The keyboard, top row (north, furthest from the player's start) first: (label, first
# column, columns wide) per pad; a one-character label types that symbol.
KEY_ROWS = (
    [(ch, c, 1) for c, ch in enumerate("1234567890")],
    [(ch, c, 1) for c, ch in enumerate("qwertyuiop")],
    [(ch, c, 1) for c, ch in enumerate("asdfghjkl'")],
    [(ch, c, 1) for c, ch in enumerate("zxcvbnm,.?")],
    [("!", 0, 1), ("-", 1, 1), (":", 2, 1), (" ", 3, 3), ("DELETE", 6, 1), ("CLEAR", 7, 1),
     ("ASK", 8, 2)],
)
KEY_PITCH_X, KEY_PITCH_Y, KEY_SIZE = 96, 128, 64
KEY_X0, KEY_Y0 = -1632.0, 256.0      # column 0's centre; the bottom row's centre
ROOM = (-2048.0, 0.0, -256.0, 1280.0)  # the chat room's box (x0, y0, x1, y1)
KEY_TEX = {"DELETE": "FLAT5_3", "CLEAR": "FLAT5_3", "ASK": "FLAT23"}   # red, grey; else blue


@dataclass
class ChatMap:
    compiled: CompiledMap
    spots: dict[str, tuple[float, float]]
    lamp_tags: list[int]
    net: object


def context_of(net) -> int:
    """The model's context, from the netlist: the run ends (`done`, a step gate) when the
    step counter t reaches it (models/chat_dnet.py `_write_ends`)."""
    gate = net.by_name("done").gate
    if type(gate).__name__ != "Step":
        raise ValueError(f"{net.name}: its done neuron is not the context's step gate")
    return int(gate.t)


def keyboard() -> dict[str, dict]:
    """Every pad of the keyboard by label: its centre, size, the aisle south of its row
    (where a visitor walks) and what it does (`symbol`: the index it types, or None)."""
    keys = {}
    n_rows = len(KEY_ROWS)
    for r, row in enumerate(KEY_ROWS):
        y = KEY_Y0 + (n_rows - 1 - r) * KEY_PITCH_Y
        for label, c, w in row:
            x = KEY_X0 + (c + (w - 1) / 2) * KEY_PITCH_X
            keys[label] = {"x": x, "y": y, "w": KEY_SIZE + (w - 1) * KEY_PITCH_X,
                           "aisle": y - KEY_PITCH_Y / 2,
                           "symbol": VOCAB.index(label) if len(label) == 1 else None}
    return keys


def corridor_x() -> float:
    """The corridor east of the keyboard, joining the aisles."""
    return KEY_X0 + 10 * KEY_PITCH_X + KEY_SIZE


def _keys(m: MapModel, gal) -> dict[str, dict]:
    """The keyboard's pads (`keyboard`), each with the thing that runs its script."""
    keys = keyboard()
    for label, k in keys.items():
        if k["symbol"] is not None:
            script, args, tex = SCRIPT_KEY, (0, k["symbol"]), "FLAT14"
        else:
            script = {"DELETE": SCRIPT_DELETE, "CLEAR": SCRIPT_CLEAR, "ASK": SCRIPT_ASK}[label]
            args, tex = (0,), KEY_TEX[label]
        inset_sector(m, gal.room, box(k["x"], k["y"], k["w"], KEY_SIZE), Sector(
            gal.floor + 4, gal.ceil, 200, floor_tex=tex, comment=f"key {label!r}"))
        m.things.append(Thing(k["x"], k["y"], SEC_ACT_ENTER, special=ACS_EXECUTE,
                              args=(script, *args), comment=f"key {label!r}"))
    return keys


def _pedals(m: MapModel, gal, tags: list[int], spots: dict) -> None:
    """A pedal per prompt, in a column west of the keyboard."""
    for i, (x, y) in enumerate(pedal_centres()):
        inset_sector(m, gal.room, box(x, y, 128, 128), Sector(
            gal.floor + 4, gal.ceil, 200, tag=tags[i], floor_tex="FLAT22",
            comment=f"pedal of prompt {i}: {PROMPTS[i]!r}"))
        m.things.append(Thing(x, y, SEC_ACT_ENTER, special=ACS_EXECUTE,
                              args=(SCRIPT_PEDAL + i, 0), comment=f"prompt pedal {i}"))
        spots[f"prompt{i}"] = (x, y)
    spots["rest"] = (gal.cx, gal.y0 + 96)


def pedal_centres() -> list[tuple[float, float]]:
    """The prompt pedals' centres (128 square), a column by the room's west wall."""
    return [(ROOM[0] + 128, KEY_Y0 + 64 + i * 160) for i in range(len(PROMPTS))]


def _letter_wall(m: MapModel, gal, tags: list[int], spots: dict) -> None:
    """A lamp per vocabulary symbol, in the order of the vocabulary, north of the
    keyboard: floor tiles a visitor sees light up as the reply is written."""
    for k, (x, y) in enumerate(lamp_centres(gal.cx)):
        inset_sector(m, gal.room, box(x, y, 48, 48), Sector(
            gal.floor, gal.ceil, LAMP_OFF, tag=tags[k], floor_tex="FLAT2",
            comment=f"letter lamp of {VOCAB[k]!r}"))
    spots["view"] = (gal.cx, KEY_Y0 + len(KEY_ROWS) * KEY_PITCH_Y - 32)


def lamp_centres(cx: float) -> list[tuple[float, float]]:
    """The letter lamps' centres (48 square), rows of 15 north of the keyboard."""
    per_row, top = 15, KEY_Y0 + (len(KEY_ROWS) - 1) * KEY_PITCH_Y
    return [(cx + (k % per_row - (per_row - 1) / 2) * 56, top + 224 + k // per_row * 56)
            for k in range(len(VOCAB))]


def _room(m: MapModel) -> SimpleNamespace:
    """The chat room, west of the lanes (x < 0): a box of its own. (A lane hall with the
    lanes as trenches in one floor, mapgen/room.py, is one sector with a thousand holes:
    ViZDoom's node builder crashed on it at this size, so the lanes stay in the void.)"""
    x0, y0, x1, y1 = ROOM
    # A sky ceiling: GZDoom's OpenGL renderer draws nothing from a map's start until a
    # frame shows sky (docs/gzdoom.md, "the black start"); under FLAT19 the room was black.
    room = m.rect_sector(x0, y0, x1, y1, Sector(0, 256, 160, floor_tex="FLOOR4_8",
                                                ceil_tex=SKY, comment="chat room"),
                         tex="MARBLE1")
    return SimpleNamespace(room=room, floor=0, ceil=256, cx=(x0 + x1) / 2, x0=x0, y0=y0)


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
    keys = _keys(m, gal)
    _letter_wall(m, gal, lamp_tags, spots)
    layout, sched, machine = finish_hall(m, circuit, geoms, hall_box, {}, conveyor, set(),
                                         spots["rest"], title)
    # The circuit's netlist is the lowered one (products split into quarter squares): its
    # node ids are not the parsed netlist's, so lights are looked up by its own outputs.
    low = circuit.net
    light = {low.nodes[o].name: circuit.value_light[o] for o in low.outputs}
    o_tags = [light[f"o[{k}]"] for k in range(len(VOCAB))]
    inputs = [low.nodes[i].name for i in low.inputs]
    context = context_of(net)
    controls = controls_source(o_tags, light["done"], lamp_tags, sched.inference_tics,
                               inputs.index("c"), len(inputs), context)
    bad = ui_violations(controls, o_tags + [light["done"]])
    if bad:
        raise AssertionError(f"chat control ACS computes on a neuron: {bad[0]}")
    source = machine + "\n" + controls
    behavior = compile_acs(source, "chat.acs", acc)
    info = manifest(layout, sched, title)
    info["gallery"] = {"spots": {k: list(v) for k, v in spots.items()}}
    info["chat"] = {"prompts": list(PROMPTS), "status_script": SCRIPT_STATUS,
                    "context": context, "keys": keys, "corridor": corridor_x()}
    cm = CompiledMap("MAP01", title, circuit, layout, sched, m.textmap(), source, behavior,
                     info)
    return ChatMap(cm, spots, lamp_tags, net)


def controls_source(o_tags, done_tag: int, lamp_tags, tics: int, c_index: int = 0,
                    n_inputs: int = 46, context: int = 48) -> str:
    """The controls' scripts (module docstring); the character is input `c_index` of
    `n_inputs`, the others are the noise (0: greedy)."""
    prompts = [encode(p + "\n") for p in PROMPTS]
    width = max(len(p) for p in prompts)
    flat = [c for p in prompts for c in p + [0] * (width - len(p))]
    names = ", ".join(f'"{_esc(VOCAB[k])}"' for k in range(len(VOCAB)))
    L = [
        "// ---------------------------------------------------------------------------------",
        "// The visitor's controls: the keys type a prompt (symbol numbers into an array), a",
        "// pedal or ASK starts a chat run. The run is the bus's steps in a loop: the",
        "// prompt's characters into the input c, then fed steps (the map copies the chosen y",
        "// into c) until the network's done output is 1. After each step the symbol whose",
        "// one-hot o[k] is 1 is noted, printed and its lamp lit: no control computes on a",
        "// neuron's value.",
        f"int prompt_len[{len(prompts)}] = {{{', '.join(str(len(p)) for p in prompts)}}};",
        f"int prompt_ids[{len(flat)}] = {{{', '.join(map(str, flat))}}};",
        "int busy, seq_chat, reply_len, chat_done, typed_len, run_len, n_steps;",
        f"int reply[{context}];",
        f"int typed[{context}];     // the keys' symbols",
        f"int run_ids[{context}];   // the prompt of the run, its newline last",
        f"int steps[{context}];     // each step's one-hot choice (-1: none)",
        "str reply_text, typed_text;",
        f"str symbols[{len(VOCAB)}] = {{{names}}};",
        "",
    ]
    L += _choice_source(o_tags, lamp_tags)
    L += _chat_source(done_tag, tics, c_index, n_inputs, context, width, len(prompts))
    L += _keys_source(context)
    for i in range(len(prompts)):
        L += [f"script {SCRIPT_PEDAL + i} (void)  // pedal {i}: {PROMPTS[i]!r}", "{",
              f"    ACS_Execute({SCRIPT_CHAT}, 0, {i});", "}", ""]
    L += _status_source(context)
    return "\n".join(L)


def _choice_source(o_tags, lamp_tags) -> list[str]:
    """`choice()`: the symbol whose one-hot o[k] is 1; `show_choice(k)`: print and light it."""
    L = ["function int choice (void)  // act on the one-hot o: which symbol is set", "{",
         "    int k = -1;"]
    for k, t in enumerate(o_tags):
        L.append(f"    if (GetSectorLightLevel({t}) == 1) k = {k};  // o[{k}] is set")
    L += ["    return k;", "}", "",
          "function void show_choice (int k)  // the reply so far, the symbol's lamp lit", "{",
          "    if (k >= 0) {",
          "        reply[reply_len] = k; reply_len = reply_len + 1;",
          "        if (k > 0) reply_text = StrParam(s: reply_text, s: symbols[k]);",
          "    }"]
    for k, t in enumerate(lamp_tags):
        L.append(f"    if (k == {k}) Light_ChangeToValue({t}, {LAMP_ON}); "
                 f"else Light_ChangeToValue({t}, {LAMP_OFF});")
    L += ["    HudMessage(s: reply_text; HUDMSG_PLAIN, 1, CR_GOLD, 0.5, 0.8, 0.0);", "}", ""]
    return L


def _chat_source(done_tag: int, tics: int, c_index: int, n_inputs: int, context: int,
                 width: int, n_prompts: int) -> list[str]:
    """The chat run: script SCRIPT_CHAT (p), prompt p's constants or (p == n_prompts) the
    typed prompt copied into run_ids, then the bus's steps."""
    step = [f"        Delay({tics});",
            "        while (ack != seq_chat) Delay(1);  // the step's acknowledgement (the bus's)",
            "        k = choice(); steps[n_steps] = k; n_steps = n_steps + 1;"]
    return [
        f"script {SCRIPT_CHAT} (int p)  // one chat run on prompt p ({n_prompts}: the typed one)",
        "{",
        "    if (busy) terminate;",
        "    busy = 1; reply_len = 0; reply_text = \"\"; n_steps = 0;",
        "    if (seq_chat < 1000000) seq_chat = 1000000;  // apart from a runner's acks",
        "    int t, k;",
        f"    if (p < {n_prompts}) {{",
        "        run_len = prompt_len[p];",
        f"        for (t = 0; t < run_len; t++) run_ids[t] = prompt_ids[p * {width} + t];",
        "    } else {",
        "        for (t = 0; t < typed_len; t++) run_ids[t] = typed[t];  // the keys' symbols",
        f"        run_ids[typed_len] = {NEWLINE};  // the prompt's end",
        "        run_len = typed_len + 1;",
        "    }",
        f"    for (t = 0; t < {n_inputs}; t++) inputs[t] = 0;  // the noise: 0, greedy",
        "    for (t = 0; t < run_len; t++) {",
        f"        inputs[{c_index}] = run_ids[t];  // the prompt's character",
        "        seq_chat = seq_chat + 1;",
        f"        if (t == 0) ACS_Execute({SCRIPT_BEGIN}, 0);  // a new sequence: prev lights to their init",
        f"        ACS_Execute({SCRIPT_INFER}, 0, seq_chat);",
        *step,
        "    }",
        "    show_choice(k);  // the prompt's newline step chose the first character",
        f"    while (GetSectorLightLevel({done_tag}) != 1 && t < {context}) {{  // done: 0/1",
        "        seq_chat = seq_chat + 1;",
        f"        ACS_Execute({SCRIPT_FED}, 0, seq_chat);  // c = y, copied in the map",
        *step,
        "        show_choice(k);",
        "        t = t + 1;",
        "    }",
        "    chat_done = chat_done + 1;",
        "    busy = 0;",
        "}",
        "",
    ]


def _keys_source(context: int) -> list[str]:
    """The keys: type a symbol (refused past the context), DELETE, CLEAR, ASK; the typed
    prompt on the screen. They copy the pads' own numbers, never a light."""
    most = context - 2     # the prompt, its newline and a reply's first character
    msg = "HudMessage(s: {}; HUDMSG_PLAIN, 3, CR_RED, 0.5, 0.7, 3.0);"
    return [
        "function void show_typed (void)  // the prompt typed so far, a cursor after it", "{",
        "    typed_text = \"\";",
        "    for (int i = 0; i < typed_len; i++) typed_text = StrParam(s: typed_text, s: symbols[typed[i]]);",
        "    HudMessage(s: \"> \", s: typed_text, s: \"_\"; HUDMSG_PLAIN, 2, CR_WHITE, 0.5, 0.65, 0.0);",
        "}", "",
        f"script {SCRIPT_KEY} (int k)  // a key: type symbol k", "{",
        f"    if (typed_len >= {most}) {{",
        "        " + msg.format(f'"at most {most} characters: the model reads {context} '
                                f'with its reply"'),
        "        terminate;", "    }",
        "    typed[typed_len] = k; typed_len = typed_len + 1;",
        "    show_typed();", "}", "",
        f"script {SCRIPT_DELETE} (void)  // DELETE: the last symbol typed", "{",
        "    if (typed_len > 0) typed_len = typed_len - 1;",
        "    show_typed();", "}", "",
        f"script {SCRIPT_CLEAR} (void)  // CLEAR: the whole prompt", "{",
        "    typed_len = 0;", "    show_typed();", "}", "",
        f"script {SCRIPT_ASK} (void)  // ASK: a chat run on the typed prompt", "{",
        "    if (typed_len == 0) { " + msg.format('"type a question on the keys, then ASK"')
        + " terminate; }",
        "    if (busy) { " + msg.format('"the dolls are still answering"') + " terminate; }",
        f"    ACS_Execute({SCRIPT_CHAT}, 0, {len(PROMPTS)});", "}", "",
    ]


def _status_source(context: int) -> list[str]:
    """SCRIPT_STATUS (token, page): page 0 the runs done and the last reply, 1 the typed
    prompt and the last sequence number, 2 the last run's steps; for tests."""
    n = min(context, 56)
    L = [f"script {SCRIPT_STATUS} (int token, int page)  // for tests", "{",
         "    if (page == 0) { user1 = chat_done; user2 = reply_len; }",
         "    if (page == 1) { user1 = typed_len; user2 = seq_chat; }",
         "    if (page == 2) { user1 = n_steps; user2 = seq_chat; }"]
    for j in range(n):
        L.append(f"    if (page == 0) user{j + 3} = reply[{j}]; "
                 f"else if (page == 1) user{j + 3} = typed[{j}]; else user{j + 3} = steps[{j}];")
    L += ["    read_ack = token;", "}", ""]
    return L


def gzdoom_visit(info: dict, text: str, steps: int) -> list[str]:
    """A visitor in GZDoom as console commands (engine.gzdoom.play): onto each key of
    `text` and onto ASK (a warp from its aisle onto the pad and back: GZDoom has no Python
    player to walk), then the wait for a run of `steps` steps, then a picture (SHOT) from the
    start: the typed prompt and the reply on the screen, the keyboard and the letter wall
    ahead."""
    from engine.gzdoom import TAIL

    keys = info["chat"]["keys"]
    # No weapon in the picture; then the map's start. A move every 8 tics: with 2 between
    # them GZDoom typed every other key or so (its console runs ahead of the game and
    # warps landing in one tic entered no pad); with 6 it typed all.
    parts = ["r_drawplayersprites 0", f"wait {info['init_tics'] + 14}"]
    for label in list(text) + ["ASK"]:
        k = keys[label]
        for x, y in ((k["x"], k["aisle"]), (k["x"], k["y"]), (k["x"], k["aisle"])):
            parts += [f"warp {x:g} {y:g}", "wait 8"]
    vx, vy = info["gallery"]["spots"]["rest"]
    # The picture, from the start over the keyboard to the letter wall, waits for the
    # warp: the console runs ahead of the game (engine/gzdoom.py).
    return parts + [f"wait {steps * (info['inference_tics'] + 4) + TAIL}",
                    f"warp {vx:g} {vy:g}", "wait 40", "SHOT"]


def gzdoom_pedal(info: dict, i: int, steps: int) -> list[str]:
    """A visitor in GZDoom onto prompt pedal i and off it, then the wait for its run."""
    from engine.gzdoom import TAIL

    spots = info["gallery"]["spots"]
    parts = []
    for spot in ("rest", f"prompt{i}", "rest"):
        parts += [f"warp {spots[spot][0]:g} {spots[spot][1]:g}", "wait 8"]
    return parts + [f"wait {steps * (info['inference_tics'] + 4) + TAIL}"]


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
    """A visitor: warps onto a prompt pedal, or walks the keyboard typing a prompt and
    steps on ASK, waits for the chat run to end, reads the reply the map printed
    (SCRIPT_STATUS). `extra_args` go to the engine (a probe library and its log)."""

    what = "the chat machine"

    def __init__(self, wad: str, info: dict, spots: dict, render: bool = False,
                 extra_args: tuple[str, ...] = ()):
        super().__init__(wad, info, spots, render, buttons=BUTTONS, pose=True,
                         extra_args=extra_args)
        self.walker = Walker(self.engine)
        self.keys = info["chat"]["keys"]
        self.corridor = info["chat"]["corridor"]
        self.aisle: float | None = None     # the aisle the walker is in (None: south of all)

    def status(self, page: int = 0) -> list[int]:
        """USER1.. as SCRIPT_STATUS left them for `page` (module docstring)."""
        self.token = getattr(self, "token", 0) + 1
        self.engine.puke(SCRIPT_STATUS, self.token, page)
        self.walker.act(1)
        vals = self.engine.users()
        if self.engine.user(self.info["read_ack_var"]) != self.token:
            from engine.doom import EngineError
            raise EngineError("the chat status script did not run")
        return vals

    def warp(self, spot: str) -> None:
        super().warp(spot)
        self.aisle = None

    def typed(self) -> list[int]:
        """The symbol indices typed so far."""
        vals = self.status(1)
        return vals[2:2 + vals[0]]

    def press_key(self, label: str) -> None:
        """Walk onto the pad `label` (along the aisles, never over another pad) and back
        off it into its aisle."""
        k, w = self.keys[label], self.walker
        if self.aisle != k["aisle"]:
            x, y, _ = w.pose()
            w.walk_to(self.corridor, y if self.aisle is None else self.aisle)
            w.walk_to(self.corridor, k["aisle"])
            self.aisle = k["aisle"]
        w.walk_to(k["x"], k["aisle"])
        w.walk_to(k["x"], k["y"])
        w.walk_to(k["x"], k["aisle"])

    def type_text(self, text: str) -> None:
        """Type `text` on the keys, a pad per character (a symbol the keyboard has not got
        is refused before walking)."""
        bad = sorted({ch for ch in text if ch not in self.keys})
        if bad:
            raise ValueError(f"no key for {', '.join(map(repr, bad))}")
        for ch in text:
            self.press_key(ch)

    def ask(self, i: int, max_steps: int = 48) -> list[int]:
        """Step on prompt pedal i; the reply's symbol indices once the run has ended."""
        before = self.status()[0]
        self.warp("rest")
        self.warp(f"prompt{i}")
        self.warp("rest")
        return self.wait_reply(before, max_steps, f"prompt {i}")

    def ask_typed(self, max_steps: int = 48) -> list[int]:
        """Step on ASK (the typed prompt); the reply's symbol indices once the run ended."""
        before = self.status()[0]
        self.press_key("ASK")
        return self.wait_reply(before, max_steps, "the typed prompt")

    def wait_reply(self, before: int, max_steps: int, what: str) -> list[int]:
        from engine.doom import EngineError

        per = self.info["inference_tics"] + 2
        for _ in range(max_steps + 1):
            self.walker.act(per)
            vals = self.status()
            if vals[0] != before:
                return vals[2:2 + vals[1]]
        raise EngineError(f"the chat run on {what} did not end in {max_steps} steps")

    def steps(self) -> tuple[list[int], int]:
        """The last run's one-hot choice at every step (-1: none lit) and its last
        sequence number (the ack of its last step)."""
        vals = self.status(2)
        return vals[2:2 + vals[0]], vals[1]
