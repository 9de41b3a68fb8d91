"""Visitors: playing a walkable map in ViZDoom as a player would, and reading it back.

Owns the drivers tests and demos use to play the rooms of mapgen/room.py:

- `Walker`: the player's own moves, through the engine's buttons: turn to an angle,
  walk to a point (forward only, aiming every tic and letting go in time to coast to a
  stop there), press USE;
- `GalleryDriver`: the demos' galleries (museum, tic-tac-toe, the chat room): warps onto
  pedals, waits for the machine, takes pictures (with the walker's buttons and pose, a
  subclass walks too: demos/chat_map.ChatVisitor types on the chat room's keyboard);
- `ControlRoomDriver`: the control room of any compiled circuit (mapgen/controls.py) as a
  walking visitor: it walks the aisles to each control, steps on pads and presses
  switches, waits for the machine to finish, and reads every display back from its
  segments' light levels (mapgen/display.shown_value).
"""
from __future__ import annotations

import math

from engine.doom import EngineError

BUTTONS = ("MOVE_FORWARD", "TURN_LEFT_RIGHT_DELTA", "USE", "LOOK_UP_DOWN_DELTA")
FRICTION = 0.90625          # the player's speed keeps this much of itself every tic


def _wrap(a: float) -> float:
    return (a + 180.0) % 360.0 - 180.0


class Walker:
    """The player of an Engine made with buttons=BUTTONS and pose=True."""

    def __init__(self, engine):
        self.e = engine
        self.tics = 0

    def act(self, tics: int = 1, forward: float = 0.0, turn: float = 0.0, use: float = 0.0,
            look: float = 0.0) -> None:
        self.e.advance(tics, [forward, turn, use, look])
        self.tics += tics

    def pose(self) -> tuple[float, float, float]:
        return self.e.pose()

    def turn_to(self, angle: float) -> None:
        """Face `angle` (degrees, 90 = north): a delta turn lands exactly."""
        for _ in range(3):
            d = _wrap(angle - self.pose()[2])
            if abs(d) < 0.5:
                return
            self.act(1, turn=-d)   # positive deltas turn clockwise
        raise EngineError(f"the player did not turn to {angle} degrees")

    def walk_to(self, x: float, y: float, tol: float = 6.0, limit: int = 700) -> None:
        """Walk forward to (x, y), aiming every tic; let go when coasting will get there,
        then wait until standing still."""
        last = self.pose()
        for _ in range(limit):
            px, py, a = self.pose()
            speed = math.hypot(px - last[0], py - last[1])
            last = (px, py)
            dist = math.hypot(x - px, y - py)
            if dist < tol and speed < 0.2:
                return
            heading = math.degrees(math.atan2(y - py, x - px))
            turn = _wrap(heading - a) if dist > 12 else 0.0
            coast = speed * FRICTION / (1 - FRICTION)
            go = dist > coast + 2 and abs(turn) < 45
            self.act(1, forward=1.0 if go else 0.0, turn=-turn)
        raise EngineError(f"the player did not reach ({x:g}, {y:g}); at {self.pose()[:2]}")

    def use(self) -> None:
        self.act(1, use=1.0)
        self.act(2)

    def look(self, pitch: float) -> None:
        """Tilt the view by `pitch` degrees (positive: up)."""
        self.act(1, look=pitch)
        self.act(1)


class GalleryDriver:
    """Plays a gallery as a visitor: warps onto pedals, waits for the machine to answer.
    Pedals in `machine_pedals` start an inference; the map acknowledges each one."""

    machine_pedals: tuple[str, ...] = ()
    what = "the machine"

    def __init__(self, wad: str, info: dict, spots: dict, render: bool = False,
                 buttons: tuple[str, ...] = ("MOVE_FORWARD", "LOOK_UP_DOWN_DELTA"),
                 pose: bool = False, extra_args: tuple[str, ...] = ()):
        from engine.doom import Engine
        from engine.runner import MapRunner

        self.info = info
        self.spots = spots
        self.buttons = buttons
        self.engine = Engine(wad, resolution="RES_640X480" if render else "RES_160X120",
                             render=render, buttons=buttons, pose=pose, extra_args=extra_args)
        self.runner = MapRunner(wad, info, engine=self.engine)   # waits for the map's ready
        self.reads = 0

    def close(self):
        self.engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def warp(self, spot: str) -> None:
        x, y = self.spots[spot]
        self.engine.command(f"warp {x:g} {y:g}")
        self.engine.advance(2)

    def press(self, pedal: str) -> None:
        """Step onto a pedal from the rest spot (leaving it first, so it fires again)."""
        self.warp("rest")
        self.warp(pedal)
        if pedal in self.machine_pedals:
            self.reads += 1
            self.wait_machine()
        self.warp("rest")

    def wait_machine(self, already: int = 0) -> None:
        """Advance until the machine must have acknowledged the last run (`already` tics
        since its pedal was pressed have passed) and check that it has."""
        need = self.info["inference_tics"] + 2
        self.engine.advance(need - already)
        ack = self.engine.user(self.info["ack_var"])
        if ack != self.reads:
            raise EngineError(f"{self.what} did not finish run {self.reads} in "
                              f"{need} tics (ack {ack})")

    def shot(self, spot: str, path: str, pitch: float) -> None:
        """A PNG of the view from a spot, looking up (pitch > 0) or down."""
        from PIL import Image

        from mapgen.render import save_png

        look = self.buttons.index("LOOK_UP_DOWN_DELTA")
        tilt = [[pitch if k == look else 0.0 for k in range(len(self.buttons))]
                for pitch in (pitch, 0.0, -pitch)]
        self.warp(spot)
        self.engine.advance(1, tilt[0])
        self.engine.advance(3, tilt[1])
        save_png(Image.fromarray(self.engine.screen()), path)
        self.engine.advance(1, tilt[2])


class ControlRoomDriver:
    """A walking visitor in a compiled circuit's control room (mapgen/controls.py)."""

    def __init__(self, wad: str, info: dict, render: bool = False):
        from engine.doom import Engine
        from engine.runner import MapRunner
        from mapgen.display import Displays

        self.info = info
        self.room = info["controls"]
        self.controls = {c["name"]: c for c in self.room["controls"]}
        self.displays = Displays.from_json(self.room["displays"])
        self.engine = Engine(wad, resolution="RES_640X480" if render else "RES_160X120",
                             render=render, buttons=BUTTONS, pose=True)
        self.runner = MapRunner(wad, info, engine=self.engine)   # waits for the map's ready
        self.walker = Walker(self.engine)
        self.inputs = [i["start"] for i in self.room["inputs"]]
        self.aisle = self.room["start"][1]
        self.token = 0

    def close(self):
        self.engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- walking -----------------------------------------------------------------------------
    def go(self, name: str) -> dict:
        """Walk to where control `name` is used (onto it, for a pad): along the aisle, or
        by the corridor to another aisle first."""
        c = self.controls[name]
        w = self.walker
        if abs(c["aisle"] - self.aisle) > 1:
            x, _, _ = w.pose()
            w.walk_to(x, self.aisle)
            w.walk_to(self.room["corridor"], self.aisle)
            w.walk_to(self.room["corridor"], c["aisle"])
            self.aisle = c["aisle"]
        for x, y in c["approach"]:
            w.walk_to(x, y)
        return c

    def leave(self, c: dict) -> None:
        for x, y in reversed(c["approach"][:-1]):
            self.walker.walk_to(x, y)

    def use(self, name: str, times: int = 1) -> None:
        """Go to a control and use it `times` times: press a switch, or step on a pad (and
        off and on again)."""
        c = self.go(name)
        for t in range(times):
            if c["kind"] == "switch":
                self.walker.turn_to(c["face"])
                self.walker.use()
            elif t:
                self.walker.walk_to(*c["approach"][-2])
                self.walker.walk_to(*c["approach"][-1])
        self.leave(c)
        self._track(c, times)

    def _track(self, c: dict, times: int) -> None:
        """What the controls did to the inputs (checked against the machine by tests)."""
        for _ in range(times):
            if c["action"] in ("toggle", "dec", "inc"):
                k, i = c["input"], self.room["inputs"][c["input"]]
                v = self.inputs[k]
                self.inputs[k] = {"toggle": i["lo"] if v == i["hi"] else i["hi"],
                                  "dec": max(v - 1, i["lo"]),
                                  "inc": min(v + 1, i["hi"])}[c["action"]]
            elif c["action"] == "preset":
                group = c["name"].rsplit(" preset ", 1)[0]
                ks = [k for k, i in enumerate(self.room["inputs"]) if i["kind"] == "preset"
                      and i["name"].rsplit("[", 1)[0] == group]
                for k, v in zip(ks, self.room["presets"][c["preset"]]):
                    self.inputs[k] = v

    def set_input(self, k: int, value: int) -> None:
        """Set input k with its controls: its pad, or DEC / INC as often as it takes."""
        i = self.room["inputs"][k]
        if not i["lo"] <= value <= i["hi"]:
            raise ValueError(f"{i['name']} = {value} is outside {i['lo']}..{i['hi']}")
        if i["kind"] == "pad":
            if self.inputs[k] != value:
                self.use(i["name"])
        elif i["kind"] == "dial":
            diff = value - self.inputs[k]
            if diff:
                self.use(f"{i['name']} {'INC' if diff > 0 else 'DEC'}", abs(diff))
        else:
            raise ValueError(f"{i['name']} is set by presets, not one by one")

    # -- the machine ---------------------------------------------------------------------------
    def status(self) -> tuple[int, int, int, int]:
        """(runs started, runs asked for, AUTO, the machine's ack)."""
        self.token += 1
        self.engine.puke(self.room["status_script"], self.token)
        self.walker.act(1)
        u = self.engine.users()
        if u[self.info["read_ack_var"] - 1] != self.token:
            raise EngineError("the control room's status script did not run")
        return u[0], u[1], u[2], u[self.info["ack_var"] - 1]

    def wait_idle(self, limit_runs: int = 8) -> int:
        """Wait until every run asked for has been made and acknowledged; the runs so far."""
        step = self.info["inference_tics"] + 2
        for _ in range(limit_runs * 2 + 2):
            runs, wanted, _, ack = self.status()
            if runs == wanted and ack == (runs if runs else -1):  # -1: ready, never run
                return runs
            self.walker.act(step)
        raise EngineError(f"the control room did not settle (runs {runs}, asked {wanted}, "
                          f"ack {ack})")

    def lights(self) -> dict[str, int]:
        """Every light of the machine by node name (value lights)."""
        return {k.split(":", 1)[1]: v for k, v in self.runner.read_all().items()
                if k.startswith("value:")}

    def shown(self, lights: dict[str, int] | None = None) -> dict[str, int | None]:
        """What every number display shows (None: no number), by the node it shows."""
        from mapgen.display import shown_value

        lights = lights or self.lights()
        return {d.shows: shown_value(d, lights.__getitem__) for d in self.displays.numbers}

    def look_at(self, name: str) -> None:
        """Stand where display `name` is read, facing it (for pictures)."""
        x, y, aisle = self.room["looks"][name]
        w = self.walker
        w.walk_to(w.pose()[0], self.aisle)
        if abs(aisle - self.aisle) > 1:
            w.walk_to(self.room["corridor"], self.aisle)
            w.walk_to(self.room["corridor"], aisle)
            self.aisle = aisle
        w.walk_to(x, aisle)
        w.walk_to(x, y)
        w.turn_to(90.0)

    def picture(self, path: str, pitch: float = 32.0) -> None:
        """A PNG of the outputs' displays (in the ceiling) and the lane hall beyond
        the window, from the aisle in front of the middle output (needs render=True)."""
        from PIL import Image

        from mapgen.render import save_png

        outs = self.info["all_outputs"]
        x, _, aisle = self.room["looks"][outs[len(outs) // 2]]
        w = self.walker
        w.walk_to(w.pose()[0], self.aisle)
        if abs(aisle - self.aisle) > 1:
            w.walk_to(self.room["corridor"], self.aisle)
            w.walk_to(self.room["corridor"], aisle)
            self.aisle = aisle
        w.walk_to(x, aisle)
        w.walk_to(x, aisle - 40)  # a step back: the whole display in view
        w.turn_to(90.0)
        w.look(pitch)
        w.act(105)               # until any message printed on the way has gone
        save_png(Image.fromarray(self.engine.screen()), path)
        w.look(-pitch)


def step_reference(net, rows: list[list[int | None]]) -> dict[str, int]:
    """Every node's reference value after the last of `rows`, the steps of one sequence
    run so far (a fed-back input None after the first step). A netlist of a fixed number
    of steps is evaluated with its last row repeated: a step never depends on later ones."""
    from dsl.reference import evaluate

    padded = rows if net.open or net.steps == len(rows) else \
        rows + [rows[-1]] * (net.steps - len(rows))
    return evaluate(net, [padded]).named(0, step=len(rows) - 1)


def visit(wad: str, info: dict, net, picture: str | None = None, seed: int = 0) -> dict:
    """A visitor sets every input of a control room to a seeded value with its controls
    (a wide vector: its second preset), lets the machine run (presses RUN when AUTO is
    off: a network with state, whose first run is its sequence's first step) and reads
    every display; with `picture`, takes one of the outputs. Returns the inputs, what the
    displays show and what the reference says they should."""
    import random

    rng = random.Random(seed)
    with ControlRoomDriver(wad, info, render=picture is not None) as d:
        presets = [c["name"] for c in d.room["controls"] if c["action"] == "preset"]
        for k, i in enumerate(d.room["inputs"]):
            if i["kind"] in ("pad", "dial"):
                d.set_input(k, rng.randint(i["lo"], i["hi"]))
        for name in presets:
            if name.endswith(" preset 2"):
                d.use(name)
        if d.status()[2] == 0:
            d.use("RUN")
        d.wait_idle()
        shown = d.shown()
        want = step_reference(net, [list(d.inputs)])
        if picture:
            d.picture(picture)
        return {"inputs": list(d.inputs), "shown": shown,
                "reference": {k: want[k] for k in shown}, "tics": d.walker.tics}
