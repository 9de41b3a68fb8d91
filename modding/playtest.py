"""Playing an embedded circuit: flip its inputs the way a player would (stepping onto a
wired pad) or through the panel's scripts, wait for the machine, and compare every light
it holds, and every sector it drives, with the integer reference.

Used by the tests and the docs on scenarios shipped with ViZDoom (engine/scenario.py), so
the circuit is checked while the scenario runs with its own configuration.
"""
from __future__ import annotations

from dsl.diagnostics import VoodooError


class PanelDriver:
    def __init__(self, scenario, info: dict, net):
        self.s = scenario
        self.info = info
        self.e = info["embed"]
        self.net = net
        names = [net.nodes[i].name for i in net.inputs]
        self.index = {n: k for k, n in enumerate(names)}
        self.x = [lo for lo, _ in net.input_ranges()]
        self.token = 0

    def status(self) -> list[int]:
        self.token += 1
        self.s.puke(self.e["status_script"], self.token)
        self.s.act((), 1)
        u = self.s.users()
        if u[58] != self.token:
            raise VoodooError("the panel's status script did not run")
        return u

    def settle(self, play=None) -> int:
        """Advance (playing `play(tics)` if given) until the panel is idle after a finished
        inference; returns the number of inferences run so far."""
        step = self.info["inference_tics"] + 2
        last = None
        for _ in range(20):
            play(step) if play else self.s.act((), step)
            u = self.status()
            if u[57] == 0 and u[56] == last:
                return u[56]
            last = u[56]
        raise VoodooError("the panel did not settle")

    def toggle(self, name: str, via: str = "pad") -> None:
        k = self.index[name]
        lo, hi = self.net.input_ranges()[k]
        if via == "pad":
            x, y = self.e["spots"][name]
            self.s.command(f"warp {x} {y}")
            self.s.act((), 2)
        else:
            self.s.puke(self.e["toggle_script"], k)
        self.x[k] = hi if self.x[k] == lo else lo

    def leave(self, spot) -> None:
        """Warp off the pads (so stepping on one again counts as entering it)."""
        self.s.command(f"warp {spot[0]} {spot[1]}")
        self.s.act((), 2)

    def read_all(self) -> dict[str, int]:
        out = {}
        for b in self.info["read_batches"]:
            self.token += 1
            self.s.puke(b["script"], self.token)
            self.s.act((), 1)
            u = self.s.users()
            if u[58] != self.token:
                raise VoodooError(f"read script {b['script']} did not run")
            out.update(zip(b["labels"], u))
        return out

    def check(self) -> tuple[bool, dict, dict]:
        """(every light equals the reference, engine values, reference values) for the
        inputs as they are now; the panel's own view of the inputs must agree too."""
        from dsl.lower import lower_products
        from engine.runner import reference_labels

        got = self.read_all()
        want = reference_labels(self.net, lower_products(self.net), self.x)
        status = self.status()
        inputs_ok = status[:len(self.x)] == self.x
        return inputs_ok and all(got[k] == want[k] for k in got), got, want

    def driven(self) -> list[int]:
        """The light level of each output's driven sectors (status USER29..)."""
        u = self.status()
        return u[28:28 + len(self.e["outputs"])]


def my_way_home_pictures(wad: str, path: str) -> list[int]:
    """The worked example of docs/modding.md: in the embedded my_way_home, the lamp room
    (sector 0) with fewer than two pedal rooms entered, then after a second one; one PNG,
    the two views side by side. Returns the lamp levels seen (checked against the machine)."""
    import os

    import numpy as np
    from PIL import Image

    import vizdoom

    from engine.scenario import Scenario
    from mapgen.compile import load_wad
    from mapgen.render import save_png

    loaded = load_wad(wad)
    cfg = os.path.join(os.path.dirname(vizdoom.__file__), "scenarios", "my_way_home.cfg")
    shots, lamps = [], []
    with Scenario(cfg, wad, seed=3, resolution="RES_640X480") as s:
        d = PanelDriver(s, loaded.infos[0], loaded.net)
        d.settle()
        for name in ("s[0]", "s[1]"):
            d.leave((240, -176))
            d.toggle(name, via="pad")
            d.settle()
            ok, got, want = d.check()
            if not ok:
                raise VoodooError(f"the embedded circuit differs from the reference: {got}")
            lamps.append(d.driven()[0])
            s.command("warp 300 -176")
            s.act((), 2)
            while abs(s.var("ANGLE") - 180) > 4:
                s.act(("TURN_LEFT",), 1)
            s.act((), 2)
            shots.append(np.asarray(s.screen()))
    save_png(Image.fromarray(np.concatenate(shots, axis=1)), path)
    return lamps
