"""The brain level's map: the arena, the circuit hall and the ACS glue between them, in one
UDMF map.

- the **arena**: a square room, the marine (the player, thing type 1, placed last) at its
  centre; demons of the game data ViZDoom ships (ZombieMan, ShotgunGuy, DoomImp) spawn at
  the seeded spots of `spec.SPOTS`, in the seeded order of `spec.episode`, up to
  `spec.SLOTS` at a time; five **panels** in the floor (and five more in the hall) light up
  with the action the circuit chose;
- the **circuit hall**: the policy network compiled by mapgen (lanes as trenches cut into
  one floor, as in the museum), its lights in a hall of their own;
- the **galleries**: two security cameras, one on a raised, walled-off balcony over the
  arena and one over the lane hall. The player is the marine, so a visitor watches through
  these cameras (ChangeCamera): the arena while the marine acts, the hall while the dolls
  think;
- the **glue** (ACS, `glue_source`): per decision it freezes the demons (paused mode: the
  `PowerTimeFreezer` powerup given to the marine freezes every actor that is not a player;
  voodoo dolls are the player's and keep riding), writes the observation into the
  circuit's `inputs` (and USER globals for the runner), starts the machine's inference
  script, waits for its acknowledgement, reads the one-hot action the machine's bus copied
  to USER1..USER5, lights the panels, carries the action out (aim at the slot's demon and
  fire one pistol bullet with `LineAttack`, or wait) and thaws the demons. The glue never
  reads a light, and reads the outputs only as a one-hot (`glue_violations` checks both).

USER globals (ViZDoom's USER1..60 = ACS global 1..60) are laid out in `USERS`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from mapgen import physics as P
from mapgen.circuit import lower
from mapgen.compile import CompiledMap, compile_acs
from mapgen.layout import conveyor_tag_for, emit_lane, inset_sector, place_lanes
from mapgen.program import SCRIPT_INFER, manifest
from mapgen.room import finish_hall
from mapgen.udmf import MapModel, Sector, Thing

from . import spec

# -- script numbers, thing ids, modes ---------------------------------------------------------
SCRIPT_AUTOPLAY = 500     # OPEN: plays the baked episodes when nobody drives the map
SCRIPT_ENTER = 501        # ENTER: the marine gets his tid, pistol and bullets
SCRIPT_EPISODE = 510      # (a, b, c, mode): one episode, demons packed by spec.pack_episode
SCRIPT_ACTION = 511       # (seq, action): a Python brain's answer (modes PYTHON)
SCRIPT_CAMERA = 512       # (which): 0 arena camera, 1 hall camera (for pictures)
MARINE = 30000
CAM_ARENA, CAM_HALL = 30001, 30002
SLOT_TID0 = 20000
CAM_ARENA_Z, CAM_ARENA_PITCH = 300, 30   # height over the gallery floor; degrees down
CAM_HALL_Z, CAM_HALL_PITCH = 900, 40
MODES = {"paused": 0, "live": 1, "python": 2, "python_live": 3}
BAKED_EPISODES = 20       # what the map plays by itself: seeds 0..19, paused

# USER globals (1-based, as ACS `global int N`), see the module docstring.
USERS = {
    "onehot": 1,          # 1..5: the machine's outputs (win[0..4])
    "obs": 6,             # 6..30: the observation written into the circuit's inputs
    "raw": 31,            # 31..48: spec.Raw, the state the observation encodes
    "seq": 49,            # decisions made so far in this episode
    "action": 50,         # 8 * seq + action + 1 once decision `seq` is carried out
                          # (action -1: the outputs were not a one-hot)
    "state": 51,          # 0 running, 1 won, 2 lost (marine dead), 3 lost (time)
    "kills": 52,
    "health": 53,         # the marine's health now
    "demon_tics": 54,     # tics the demons have had (frozen tics not counted)
    "moved": 55,          # during the last decision: summed |dx|+|dy| of the demons...
    "hurt": 56,           # ...and health the marine lost, from observation to action
    "think": 57,          # tics from the decision's start to its action
    "shots": 58,          # bullets fired
}
STATES = {0: "running", 1: "won", 2: "dead", 3: "time"}


@dataclass
class BrainMap:
    compiled: CompiledMap
    net: object
    panel_tags: list[int]


def build(net, title: str = "Brain level", acc: str = "internal",
          door_budget: int | None = None) -> BrainMap:
    """The map; `door_budget` splits long staircases into sub-lanes (policy.DOOR_BUDGET)."""
    circuit = lower(net) if door_budget is None else lower(net, door_budget=door_budget)
    if [circuit.net.nodes[o].name for o in circuit.net.outputs] != [
            f"win[{k}]" for k in range(spec.N_ACTIONS)]:
        raise AssertionError("the policy network must end in the one-hot win[0..4]")
    m = MapModel()
    conveyor = conveyor_tag_for(circuit)
    panel_tags = [conveyor + 1 + k for k in range(spec.N_ACTIONS)]

    arena = _arena(m, panel_tags)
    # -- the circuit hall, east of the arena: every lane a trench in one floor ------------------
    LX, LY = spec.ARENA_HALF + 1024.0, -spec.ARENA_HALF + 0.0
    geoms = place_lanes(circuit, LX, LY)
    r_floor = max(s.floor for g in geoms for s in g.segments) + 32
    r_ceil = r_floor + 1024           # sky: room for the camera above the lanes
    rx0, ry0 = LX - 96, LY - 480
    rx1 = max(g.segments[-1].x1 for g in geoms) + 96
    ry1 = max(g.y0 for g in geoms) + P.LANE_WIDTH + 352   # the panels beyond the lanes
    hall = m.rect_sector(rx0, ry0, rx1, ry1, Sector(
        r_floor, r_ceil, 176, floor_tex="FLOOR7_1", ceil_tex="F_SKY1",
        comment="circuit hall: every lane is a trench in this floor"), tex="MARBLE1")
    for g in geoms:
        emit_lane(m, g, conveyor, room=hall, ceiling=r_ceil)
    hx = (rx0 + rx1) / 2
    for k, tag in enumerate(panel_tags):
        x = hx - 2.5 * 160 + 160 * k
        inset_sector(m, hall, (x + 24, ry1 - 208, x + 136, ry1 - 96), Sector(
            r_floor, r_ceil, 64, tag=tag, floor_tex="FLAT2", ceil_tex="F_SKY1",
            comment=f"panel: {spec.ACTIONS[k]}"))
    m.things.append(Thing(hx, ry0 + 24, 9025, angle=90, id=CAM_HALL, z=CAM_HALL_Z,
                          args=(CAM_HALL_PITCH,), comment="hall camera: the dolls think"))

    # Every light to the hall of lights; the marine (the player) is the last start, at 0, 0.
    layout, sched, machine = finish_hall(m, circuit, geoms, (rx0, ry0, rx1, ry1), {}, conveyor,
                                         set(), (0.0, 0.0), title)
    glue = glue_source(panel_tags, len(circuit.net.inputs))
    bad = glue_violations(glue)
    if bad:
        raise AssertionError(f"brain glue ACS reads a neuron: {bad[0]}")
    source = machine + "\n" + glue
    behavior = compile_acs(source, "brainlevel.acs", acc)
    info = manifest(layout, sched, title)
    info["brainlevel"] = {"users": USERS, "episode_script": SCRIPT_EPISODE,
                          "action_script": SCRIPT_ACTION, "camera_script": SCRIPT_CAMERA,
                          "modes": MODES, "arena": arena}
    cm = CompiledMap("MAP01", title, circuit, layout, sched, m.textmap(), source, behavior, info)
    return BrainMap(cm, net, panel_tags)


def _arena(m: MapModel, panel_tags: list[int]) -> dict:
    """The arena and its gallery; returns a few coordinates for the manifest."""
    h = spec.ARENA_HALF
    arena = m.sector(Sector(0, 512, 192, floor_tex="FLOOR4_8", ceil_tex="F_SKY1",
                            comment="the arena"))
    # Walls clockwise (inside on the right); the south side's middle is the gallery window.
    for a, b in [((-h, -h), (-h, h)), ((-h, h), (h, h)), ((h, h), (h, -h)), ((h, -h), (512, -h)),
                 ((-512, -h), (-h, -h))]:
        m.wall(a, b, arena)
    # The panels: one floor tile per action in front of the gallery.
    for k, tag in enumerate(panel_tags):
        x = -2.5 * 160 + 160 * k
        inset_sector(m, arena, (x + 24, -640, x + 136, -528), Sector(
            0, 512, 64, tag=tag, floor_tex="FLAT2", ceil_tex="F_SKY1",
            comment=f"panel: {spec.ACTIONS[k]}"))
    # The gallery: a walled balcony 192 above the arena floor, south of it. Its edge is a
    # window onto the arena; the step of 192 stops bullets fired across the arena floor
    # and nothing can climb it.
    g_floor, gy0 = 192, -h - 512
    gallery = m.sector(Sector(g_floor, 512, 160, floor_tex="FLAT19", ceil_tex="F_SKY1",
                              comment="gallery: the visitor's camera"))
    m.portal((512, -h), (-512, -h), arena, gallery, tex="MARBLE1", flags=("blocking",),
             comment="the gallery's window onto the arena")
    for a, b in [((-512, gy0), (-512, -h)), ((512, -h), (512, gy0)), ((512, gy0), (-512, gy0))]:
        m.wall(a, b, gallery, tex="MARBLE1")
    m.things.append(Thing(0, -h - 24, 9025, angle=90, id=CAM_ARENA, z=CAM_ARENA_Z,
                          args=(CAM_ARENA_PITCH,), comment="gallery camera: the marine fights"))
    return {"half": h, "spots": spec.SPOTS}


# ----------------------------------------------------------------------------------- ACS
def _kind_function() -> list[str]:
    out = ["function str kind_class(int kind)", "{"]
    for k, (cls, _) in enumerate(spec.KINDS):
        out.append(f'    if (kind == {k}) return "{cls}";')
    out += ['    return "ZombieMan";', "}", ""]
    return out


def glue_source(panel_tags: list[int], n_inputs: int) -> str:
    """The arena's ACS: episodes, observation, the bus calls into the machine, actions."""
    assert n_inputs == spec.OBS_SIZE
    L = _glue_header() + _glue_state() + _glue_observe() + _glue_act(panel_tags)
    L += _glue_episode() + _glue_scripts()
    return "\n".join(L)


def _glue_header() -> list[str]:
    """Map variables: the baked episodes, the spawn spots, the state of an episode."""
    S = spec.SLOTS
    baked = ", ".join("{" + ", ".join(str(v) for v in spec.pack_episode(spec.episode(s)))
                      + "}" for s in range(BAKED_EPISODES))
    spots_x = ", ".join(str(x) for x, _ in spec.SPOTS)
    spots_y = ", ".join(str(y) for _, y in spec.SPOTS)
    L = [
        "// ---------------------------------------------------------------------------------",
        "// The arena. These scripts encode the game state into the circuit's inputs, start",
        "// the machine, and carry out the action its one-hot output names. They never read",
        "// a light and never compare the network's values: the argmax is in the circuit.",
        f"int baked[{BAKED_EPISODES}][3] = {{{baked}}};",
        f"int spot_x[{len(spec.SPOTS)}] = {{{spots_x}}};",
        f"int spot_y[{len(spec.SPOTS)}] = {{{spots_y}}};",
        f"int order[{spec.DEMONS}];   // kind * 16 + spot of each demon, in order of appearance",
        f"int slot_kind[{S}];        // kind + 1 of the demon in each slot, 0 if empty",
        f"int x0[{S}]; int y0[{S}];",
        f"int obs[{spec.OBS_SIZE}];",
        "int spawned; int alive; int state; int started; int seq; int mode;",
        "int ext_seq; int ext_action; int demon_tics; int kills; int shots; int infers;",
        "",
    ]
    return L


def _glue_state() -> list[str]:
    """Episode bookkeeping: demon classes, the report to USER globals, deaths, spawning."""
    u = USERS
    S = spec.SLOTS
    L = _kind_function()
    L += [
        "function void report(void)",
        "{",
        f"    user{u['state']} = state; user{u['kills']} = kills; user{u['shots']} = shots;",
        f"    user{u['health']} = GetActorProperty({MARINE}, APROP_Health);",
        f"    user{u['demon_tics']} = demon_tics;",
        "}",
        "",
        "function void check_slots(void)  // dead demons free their slot",
        "{",
        f"    for (int k = 0; k < {S}; k++)",
        "    {",
        f"        if (slot_kind[k] && GetActorProperty({SLOT_TID0} + k, APROP_Health) <= 0)",
        f"        {{ Thing_ChangeTID({SLOT_TID0} + k, 0); slot_kind[k] = 0; kills++; alive--; }}",
        "    }",
        f"    if (GetActorProperty({MARINE}, APROP_Health) <= 0) state = 2;",
        f"    else if (spawned == {spec.DEMONS} && alive == 0) state = 1;",
        f"    else if (demon_tics >= {spec.TIME_LIMIT_TICS}) state = 3;",
        "    report();",
        "}",
        "",
        "function void fill_slots(void)  // the next demons appear in free slots, in order",
        "{",
        f"    for (int k = 0; k < {S} && spawned < {spec.DEMONS}; k++)",
        "    {",
        "        if (slot_kind[k]) continue;",
        "        int d = order[spawned]; int kind = d / 16; int spot = d % 16;",
        "        int x = spot_x[spot] << 16; int y = spot_y[spot] << 16;",
        "        int face = VectorAngle(-spot_x[spot], -spot_y[spot]) >> 8;",
        f"        if (Spawn(kind_class(kind), x, y, 0, {SLOT_TID0} + k, face))",
        '        { Spawn("TeleportFog", x, y, 0, 0, 0); slot_kind[k] = kind + 1; spawned++; alive++; }',
        "    }",
        "}",
        "",
    ]
    return L


def _glue_observe() -> list[str]:
    """The observation: game state -> obs[], the circuit's inputs[] and USER globals."""
    u = USERS
    S = spec.SLOTS
    L = [
        "function int bucket(int v, int step)",
        "{",
        "    if (v < 0) return 0;",
        f"    if (v / step > {spec.OBS_HI}) return {spec.OBS_HI};",
        "    return v / step;",
        "}",
        "",
        "function void observe(void)  // the game state -> raw USER globals, obs[], inputs[]",
        "{",
        f"    int mx = GetActorX({MARINE}) >> 16; int my = GetActorY({MARINE}) >> 16;",
        f"    for (int k = 0; k < {S}; k++)",
        "    {",
        f"        int base = {spec.FEATURES} * k;",
        "        for (int f = 0; f < 5; f++) obs[base + f] = 0;",
        "        int dx = 0; int dy = 0; int hp = 0;",
        "        if (slot_kind[k])",
        "        {",
        f"            dx = (GetActorX({SLOT_TID0} + k) >> 16) - mx;",
        f"            dy = (GetActorY({SLOT_TID0} + k) >> 16) - my;",
        f"            hp = GetActorProperty({SLOT_TID0} + k, APROP_Health);",
        "            int d2 = dx * dx + dy * dy; int db = 0;",
    ]
    for e in spec.DIST_EDGES:
        L.append(f"            if (d2 >= {e * e}) db++;")
    L += [
        "            int dir;",
        "            int ax = dx; if (ax < 0) ax = -ax;",
        "            int ay = dy; if (ay < 0) ay = -ay;",
        "            if (ax >= ay) { if (dx >= 0) dir = 0; else dir = 2; }",
        "            else { if (dy > 0) dir = 1; else dir = 3; }",
        "            obs[base] = 1; obs[base + 1] = slot_kind[k] - 1; obs[base + 2] = db;",
        f"            obs[base + 3] = dir; obs[base + 4] = bucket(hp, {spec.HEALTH_STEP});",
        "        }",
        "        x0[k] = dx + mx; y0[k] = dy + my;",
    ]
    # raw USER globals: kind+1, dx, dy, health per slot
    L += [f"        if (k == {k}) {{ user{u['raw'] + 4 * k} = slot_kind[k]; "
          f"user{u['raw'] + 4 * k + 1} = dx; user{u['raw'] + 4 * k + 2} = dy; "
          f"user{u['raw'] + 4 * k + 3} = hp; }}" for k in range(S)]
    L += [
        "    }",
        f"    int health = GetActorProperty({MARINE}, APROP_Health);",
        f"    int ammo = CheckActorInventory({MARINE}, \"Clip\");",
        f"    user{u['raw'] + 4 * S} = health; user{u['raw'] + 4 * S + 1} = ammo;",
        f"    obs[{spec.FEATURES * S}] = 1; obs[{spec.FEATURES * S + 1}] = bucket(health, {spec.MARINE_STEP});",
        f"    obs[{spec.FEATURES * S + 2}] = bucket(ammo, {spec.AMMO_STEP});",
        f"    obs[{spec.FEATURES * S + 3}] = 0; obs[{spec.FEATURES * S + 4}] = 0;",
    ]
    L += [f"    inputs[{i}] = obs[{i}]; user{u['obs'] + i} = obs[{i}];"
          for i in range(spec.OBS_SIZE)]
    L += ["}", ""]
    return L


def _glue_act(panel_tags: list[int]) -> list[str]:
    """Reading the one-hot decision and carrying an action out."""
    lo, hi = spec.PISTOL_DAMAGE
    u = USERS
    S, NA = spec.SLOTS, spec.N_ACTIONS
    L = [
        "function int decision(void)  // the circuit's one-hot, as the machine's bus read it",
        "{",
    ]
    L += [f"    if (user{u['onehot'] + k} == 1) return {k};" for k in range(NA)]
    L += ["    return -1;", "}", ""]
    L += [
        "function int moved(void)  // how far the demons moved since the observation",
        "{",
        "    int total = 0;",
        f"    for (int k = 0; k < {S}; k++)",
        "    {",
        "        if (!slot_kind[k]) continue;",
        f"        int dx = (GetActorX({SLOT_TID0} + k) >> 16) - x0[k];",
        f"        int dy = (GetActorY({SLOT_TID0} + k) >> 16) - y0[k];",
        "        if (dx < 0) dx = -dx; if (dy < 0) dy = -dy;",
        "        total += dx + dy;",
        "    }",
        "    return total;",
        "}",
        "",
        "function void panels(int a)  // light the chosen action's panels",
        "{",
    ]
    L += [f"    if (a == {k}) Light_ChangeToValue({t}, 255); else Light_ChangeToValue({t}, 64);"
          for k, t in enumerate(panel_tags)]
    L += [
        "}",
        "",
        "function void hold(int k, int t)  // live, while the brain thinks: the last burst",
        "{                                  // goes on at its target while it is alive",
        f"    if (k >= 0 && slot_kind[k] && t % {spec.FIRE_TICS} == 0) fire(k);",
        "}",
        "",
        "function void fire(int a)  // one pistol bullet at slot a's demon (or ahead if none)",
        "{",
        f"    if (a < 0 || a >= {spec.WAIT}) return;",
        f"    if (CheckActorInventory({MARINE}, \"Clip\") <= 0) return;",
        f"    int angle = GetActorAngle({MARINE});",
        "    if (slot_kind[a])",
        f"        angle = VectorAngle(GetActorX({SLOT_TID0} + a) - GetActorX({MARINE}), "
        f"GetActorY({SLOT_TID0} + a) - GetActorY({MARINE}));",
        f"    SetActorAngle({MARINE}, angle);",
        "    TakeInventory(\"Clip\", 1);",
        "    shots++;",
        f"    LineAttack({MARINE}, angle, 0, {lo} * Random(1, {hi // lo}), \"BulletPuff\", "
        "\"None\", 4096.0, 0);",
        f"    PlaySound({MARINE}, \"weapons/pistol\", 1);",
        "}",
        "",
    ]
    return L


def _glue_episode() -> list[str]:
    """One episode: per decision freeze, observe, think (the machine or Python), act."""
    return _episode_start() + _episode_think() + _episode_act() + [
        "    if (frozen) TakeInventory(\"PowerTimeFreezer\", 1);",
        "    report();",
        "}",
        "",
    ]


# The episode script is one namespace for acc (as for every script): each loop variable
# has its own name, none a script argument's (`--acc external` compiles it).
def _episode_start() -> list[str]:
    """The episode script's head, its reset, and each decision up to the freeze."""
    S = spec.SLOTS
    return [
        f"script {SCRIPT_EPISODE} (int a, int b, int c, int m)",
        "{",
        f"    SetActivator({MARINE});",
        f"    int frozen = m == {MODES['paused']} || m == {MODES['python']};",
        "    started = 1; mode = m; state = 0; seq = 0; spawned = 0; alive = 0; kills = 0;",
        "    shots = 0; demon_tics = 0; ext_seq = 0;",
        f"    for (int k = 0; k < {S}; k++) slot_kind[k] = 0;",
        f"    for (int i = 0; i < {spec.DEMONS}; i++)",
        "    {",
        "        int p = c; if (i < 4) p = a; else if (i < 8) p = b;",
        "        order[i] = (p >> (6 * (i % 4))) & 63;",
        "    }",
        "    report();",
        "    int held = -1;  // live: the last burst's target, still alive (the action holds)",
        "    while (state == 0)",
        "    {",
        "        fill_slots();",
        "        int t0 = Timer();",
        "        // The freeze starts and ends on even tics (the powerup toggles the level's",
        "        // freeze only on even tics): every mode then gives the demons the same tics.",
        "        if (frozen && Timer() % 2) { Delay(1); demon_tics++; check_slots(); }",
        "        if (frozen) GiveInventory(\"PowerTimeFreezer\", 1);",
        "        // Delay only in the script itself: a Delay inside a function crashes ViZDoom",
        "        for (int fz = 0; fz < 2 * frozen && state == 0; fz++) { Delay(1); demon_tics++; check_slots(); }",
        "        if (state) break;",
    ]


def _episode_think() -> list[str]:
    """Observe, then wait for the machine's (or a Python brain's) decision; in live
    mode the last burst holds meanwhile."""
    u = USERS
    return [
        "        observe();",
        f"        int h0 = GetActorProperty({MARINE}, APROP_Health);",
        "        seq++;",
        f"        user{u['seq']} = seq;",
        "        int act_k;",
        f"        if (mode >= {MODES['python']})",
        "        {",
        "            for (int tp = 0; ext_seq != seq; tp++) { if (!frozen) hold(held, tp); Delay(1); if (!frozen) { demon_tics++; check_slots(); } }",
        "            act_k = ext_action;",
        "        }",
        "        else",
        "        {",
        f"            ChangeCamera({CAM_HALL}, 1, 0);",
        "            infers++;  // never reset: the machine acknowledges each inference by it",
        f"            ACS_Execute({SCRIPT_INFER}, 0, infers);",
        "            for (int tm = 0; ack != infers; tm++) { if (!frozen) hold(held, tm); Delay(1); if (!frozen) { demon_tics++; check_slots(); } }",
        "            act_k = decision();",
        f"            ChangeCamera({CAM_ARENA}, 1, 0);",
        "        }",
    ]


def _episode_act() -> list[str]:
    """Report, show and carry out the decision: a burst at the chosen slot."""
    u = USERS
    return [
        f"        user{u['moved']} = moved();",
        f"        user{u['hurt']} = h0 - GetActorProperty({MARINE}, APROP_Health);",
        f"        user{u['think']} = Timer() - t0;",
        "        if (state) break;",
        "        panels(act_k);",
        f"        user{u['action']} = 8 * seq + act_k + 1;",
        "        if (frozen && Timer() % 2) Delay(1);",
        "        if (frozen) TakeInventory(\"PowerTimeFreezer\", 1);",
        f"        // a burst: up to {spec.BURST} shots at the chosen demon, until it is dead",
        "        // (at an empty slot: a burst straight ahead; wait: no shots, as long)",
        "        int target = act_k < " + str(spec.WAIT) + " && slot_kind[act_k];",
        f"        for (int shot = 0; shot < {spec.BURST} && state == 0; shot++)",
        "        {",
        "            if (target && !slot_kind[act_k]) break;",
        "            fire(act_k);",
        f"            for (int j = 0; j < {spec.FIRE_TICS} && state == 0; j++) {{ Delay(1); demon_tics++; check_slots(); }}",
        "        }",
        "        check_slots();",
        "        held = -1;",
        "        if (target && slot_kind[act_k]) held = act_k;",
        "    }",
    ]


def _glue_scripts() -> list[str]:
    """The small scripts: a Python brain's action, cameras, the marine, autoplay."""
    L = [
        f"script {SCRIPT_ACTION} (int s, int a)  // a Python brain's action for decision s",
        "{",
        "    ext_action = a; ext_seq = s;",
        "}",
        "",
        f"script {SCRIPT_CAMERA} (int which)",
        "{",
        f"    if (which) ChangeCamera({CAM_HALL}, 1, 0); else ChangeCamera({CAM_ARENA}, 1, 0);",
        "}",
        "",
        f"script {SCRIPT_ENTER} ENTER",
        "{",
        f"    Thing_ChangeTID(0, {MARINE});",
        f"    TakeInventory(\"Clip\", 999); GiveInventory(\"Clip\", {spec.START_AMMO});",
        "    SetPlayerProperty(0, 1, PROP_TOTALLYFROZEN);  // the brain moves him, not the keyboard",
        f"    ChangeCamera({CAM_ARENA}, 1, 0);",
        "}",
        "",
        f"script {SCRIPT_AUTOPLAY} OPEN  // nobody drives the map: play the baked episodes",
        "{",
        "    Delay(105);",
        "    if (started) terminate;",
        f"    for (int e = 0; e < {BAKED_EPISODES}; e++)",
        "    {",
        f"        ACS_Execute({SCRIPT_EPISODE}, 0, baked[e][0], baked[e][1], baked[e][2]);",
        "        Delay(2);",
        "        while (state == 0) Delay(1);",
        "        if (state == 1) Print(s:\"Episode \", d:e, s:\": won, \", d:kills, s:\" kills\");",
        "        else terminate;",
        "        Delay(70);",
        f"        SetActorProperty({MARINE}, APROP_Health, {spec.MARINE_HEALTH});",
        f"        TakeInventory(\"Clip\", 999); GiveInventory(\"Clip\", {spec.START_AMMO});",
        "    }",
        "}",
        "",
    ]
    return L


def glue_violations(source: str) -> list[str]:
    """Glue statements that touch the network other than by reading its one-hot output:
    any light read, and any use of USER1..5 but `if (userK == 1) return K-1;`."""
    bad = []
    first, last = USERS["onehot"], USERS["onehot"] + spec.N_ACTIONS - 1
    for line in source.splitlines():
        code = line.split("//", 1)[0]
        if re.search(r"GetSector(LightLevel|FloorZ|CeilingZ)", code):
            bad.append(line.strip())
        for mm in re.finditer(r"\buser(\d+)\b", code):
            k = int(mm.group(1))
            if first <= k <= last and code.strip() != f"if (user{k} == 1) return {k - first};":
                bad.append(line.strip())
    return bad
