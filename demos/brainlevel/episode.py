"""Running the brain level in ViZDoom: seeded episodes in every mode, every decision checked.

Owns `BrainRunner`, which drives one engine through episodes:

- **paused** / **live**: the map decides (the dolls compute the policy); the runner only
  starts the episode, then reads every decision back: the observation the map wrote into
  the circuit's inputs, the raw state it encoded, and the action it carried out. It checks
  that the observation equals `spec.encode` of that raw state and that the action equals
  the integer reference decision (`policy.decide`) on that observation;
- **python**: a Python brain (the same integer policy, the expert, or a random policy)
  answers each observation with zero thinking time (the demons stay frozen meanwhile);

and `EpisodeResult`, one row of the table `build.py brainlevel` prints.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import arena, spec

CHUNK = 8          # tics advanced between looks: decisions are at least 16 tics apart
MAX_TICS = 20_000  # a runaway episode is a bug, not a long game


@dataclass
class Decision:
    seq: int
    obs: list[int]
    raw: spec.Raw
    action: int = -1
    reference: int = -1
    think: int = 0
    moved: int = 0
    hurt: int = 0
    # Bullets fired between the runner's look at the observation and its look at the
    # action (each within CHUNK < FIRE_TICS tics of it, so the action's own burst adds at
    # most its first bullet): in live mode also the last burst held while the dolls think.
    shots: int = 0
    done: bool = False       # carried out (not cut short by the marine's death)

    @property
    def exact(self) -> bool:
        return self.done and self.action == self.reference


@dataclass
class EpisodeResult:
    seed: int
    brain: str                       # "paused", "live", "python", "random", "expert"
    outcome: str = "running"         # won, dead, time
    kills: int = 0
    damage: int = 0
    tics: int = 0                    # game tics from the episode's start to its end
    demon_tics: int = 0
    shots: int = 0
    decisions: list[Decision] = field(default_factory=list)
    encoding_errors: int = 0

    @property
    def won(self) -> bool:
        return self.outcome == "won"

    @property
    def exact(self) -> int:
        return sum(d.exact for d in self.decisions)


class BrainRunner:
    def __init__(self, wad: str, info: dict, render: bool = False, seed: int = 0):
        # In this process: the episode plays the marine through the game itself (actions,
        # game variables, screens), which the child-process Engine does not forward.
        from engine.doom import LocalEngine as Engine

        self.info = info
        self.bl = info["brainlevel"]
        self.users = self.bl["users"]
        self.engine = Engine(wad, resolution="RES_320X240" if render else "RES_160X120",
                             render=render)
        self.render = render

    def close(self) -> None:
        self.engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _advance(self, n: int) -> bool:
        """n tics; False once the episode has ended (the marine died)."""
        g = self.engine.game
        if g.is_episode_finished():
            return False
        g.set_action([])
        g.advance_action(n, True)
        return not g.is_episode_finished()

    def _start(self, seed: int, mode: str) -> None:
        from engine.doom import EngineError

        g = self.engine.game
        # Every episode a new game with the engine's random numbers seeded from the episode:
        # the same seed plays the same game.
        g.set_seed(seed + 1)
        g.new_episode()
        self._advance(self.info["init_tics"] + 2)
        if self.engine.user(self.info["ack_var"]) != -1:
            raise EngineError("the brain level did not report ready")
        a, b, c = spec.pack_episode(spec.episode(seed))
        self.engine.puke(self.bl["episode_script"], a, b, c, self.bl["modes"][mode])

    def episode(self, seed: int, mode: str, net=None, brain=None, label: str | None = None,
                frames: list | None = None, frame_every: int = 2, delay: int = 0,
                max_tics: int = MAX_TICS) -> EpisodeResult:
        """One seeded episode. mode paused/live: the map decides and `net` (the policy
        netlist) is the reference; mode python: `brain(obs) -> action` decides (with
        python_live, `delay` tics late while the demons act)."""
        u = self.users
        res = EpisodeResult(seed, label or mode)
        self._start(seed, mode)
        t0 = self.engine.tic()
        last = None
        pending: dict[int, Decision] = {}
        step = frame_every if frames is not None else 1 if delay else CHUNK
        due: list = []
        alive = True
        while alive and self.engine.tic() - t0 < max_tics:
            alive = self._advance(step)
            if not alive:
                break
            vals = last = self.engine.users()
            if frames is not None:
                frames.append(self.engine.screen().copy())
            seq = vals[u["seq"] - 1]
            if seq and (not res.decisions or res.decisions[-1].seq < seq):
                d = self._observed(res, vals, mode, net, brain)
                if mode.startswith("python"):
                    due.append((self.engine.tic() + delay, seq, d.action))
                pending[seq] = d
            while due and due[0][0] <= self.engine.tic():
                self.engine.puke(self.bl["action_script"], *due.pop(0)[1:])
            done = vals[u["action"] - 1]
            if done // 8 in pending:
                self._carried_out(pending.pop(done // 8), vals, done % 8 - 1, mode)
            if vals[u["state"] - 1]:
                break
        res.tics = self.engine.tic() - t0
        self._finish(res, last, alive, max_tics)
        return res

    def _observed(self, res: EpisodeResult, vals, mode: str, net, brain) -> Decision:
        """A new decision: its observation and raw state read back, the encoding checked,
        the reference (or the Python brain's) action."""
        from .policy import decide

        u = self.users
        raw = spec.Raw.from_users(vals[u["raw"] - 1:u["raw"] - 1 + spec.RAW_SIZE])
        obs = vals[u["obs"] - 1:u["obs"] - 1 + spec.OBS_SIZE]
        d = Decision(vals[u["seq"] - 1], obs, raw, shots=-vals[u["shots"] - 1])
        if obs != spec.encode(raw).tolist():
            res.encoding_errors += 1
        if mode.startswith("python"):
            d.action = d.reference = int(brain(np.array(obs)))
        else:
            d.reference = decide(net, obs)
        res.decisions.append(d)
        return d

    def _carried_out(self, d: Decision, vals, action: int, mode: str) -> None:
        u = self.users
        if not mode.startswith("python"):
            d.action = action          # what the map did: the circuit's one-hot
        d.think, d.moved, d.hurt = (vals[u[k] - 1] for k in ("think", "moved", "hurt"))
        d.shots += vals[u["shots"] - 1]
        d.done = True

    def _finish(self, res: EpisodeResult, last, alive: bool, max_tics: int) -> None:
        u = self.users
        if last is not None:
            res.kills = last[u["kills"] - 1]
            res.shots = last[u["shots"] - 1]
            res.demon_tics = last[u["demon_tics"] - 1]
            res.outcome = arena.STATES[last[u["state"] - 1]]
            res.damage = spec.MARINE_HEALTH - last[u["health"] - 1]
        if not alive:
            res.outcome, res.damage = "dead", spec.MARINE_HEALTH
        elif res.outcome == "running" and max_tics == MAX_TICS:
            res.outcome = "stuck"
