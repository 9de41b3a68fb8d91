"""The brain level as a Gymnasium environment, `VoodooNet/BrainLevel-v0`.

    import gymnasium, demos.brainlevel.env   # registers VoodooNet/BrainLevel-v0
    env = gymnasium.make("VoodooNet/BrainLevel-v0")
    obs, info = env.reset(seed=0)

It plays the very map `build.py brainlevel` builds, in the map's "python" mode: at each
decision the map freezes the demons and waits; the environment reads the state back,
encodes it with `spec.encode` (and checks that the map's own encoding, written into the
circuit's inputs, is the same), hands the observation to the agent and sends its action
to the map, which carries it out as it would the circuit's. So an agent trained here
plays exactly the arena the map's policy plays.

- observation: `Box(0, 3, (25,), int64)`, five tokens of five features (spec.py);
- action: `Discrete(5)`: fire a burst at demon slot 0..3, or wait;
- reward: +1 per kill, -0.01 per point of damage taken, +5 for winning;
- terminated when the episode is won or lost (marine dead, or the time limit);
- `reset(seed=s)` plays seeded episode s (demon kinds, spots, order; the engine's random
  numbers too): the same seed and actions give the same game.
"""
from __future__ import annotations

import os
import tempfile

import gymnasium
import numpy as np
from gymnasium import spaces

from . import arena, spec

ENV_ID = "VoodooNet/BrainLevel-v0"
REWARD_KILL, REWARD_WIN, REWARD_DAMAGE = 1.0, 5.0, -0.01


class BrainLevelEnv(gymnasium.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 35}

    def __init__(self, wad: str | None = None, render_mode: str | None = None):
        self.observation_space = spaces.Box(0, spec.OBS_HI, (spec.OBS_SIZE,), np.int64)
        self.action_space = spaces.Discrete(spec.N_ACTIONS)
        self.render_mode = render_mode
        self._tmp = None
        if wad is None:
            wad = self._build_wad()
        self.wad = wad
        self._runner = None
        self._last = None
        self._obs = None
        self._seq = 0

    def _build_wad(self) -> str:
        """Build the map once into a temporary directory (a few seconds)."""
        from . import policy
        from .demo import build_wad

        import shutil
        import weakref

        self._tmp = tempfile.mkdtemp(prefix="voodoonet-brainlevel-")
        # A script may end without close() (the README's does): the directory goes when
        # the env is collected or the interpreter exits, all the same.
        self._rm_tmp = weakref.finalize(self, shutil.rmtree, self._tmp, True)
        path = os.path.join(self._tmp, "brainlevel.wad")
        build_wad(path, policy.load())
        return path

    def _engine(self):
        if self._runner is None:
            from mapgen.compile import load_wad

            from .episode import BrainRunner

            info = load_wad(self.wad).infos[0]
            self._runner = BrainRunner(self.wad, info, render=self.render_mode is not None)
        return self._runner

    # -- the Gymnasium API -------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        episode = int(seed) if seed is not None else int(self.np_random.integers(2**31 - 2))
        r = self._engine()
        r._start(episode, "python")
        self._seq = 0
        self._last = None
        self._episode = episode
        obs, _, terminated, info = self._wait()
        if terminated:  # cannot happen: the first demons appear before the first decision
            raise RuntimeError("the brain level ended before its first decision")
        return obs, info

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        before = self._last
        self._engine().engine.puke(arena.SCRIPT_ACTION, self._seq, int(action))
        obs, vals, terminated, info = self._wait()
        u = arena.USERS
        kills = vals[u["kills"] - 1] - before[u["kills"] - 1]
        hurt = (before[u["health"] - 1] - (vals[u["health"] - 1] if info["alive"] else 0))
        reward = REWARD_KILL * kills + REWARD_DAMAGE * max(hurt, 0)
        if info["outcome"] == "won":
            reward += REWARD_WIN
        return obs, float(reward), terminated, False, info

    def render(self):
        if self.render_mode == "rgb_array" and self._runner is not None:
            return self._runner.engine.screen().copy()
        return None

    def close(self):
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        if self._tmp is not None:
            self._rm_tmp()
            self._tmp = None

    # -- the map's side ---------------------------------------------------------------------------
    def _wait(self):
        """Advance until the map asks for the next decision or the episode ends."""
        r = self._engine()
        u = arena.USERS
        alive = True
        while True:
            alive = r._advance(1)
            if not alive:
                vals = list(self._last)
                state = "dead"
                break
            vals = r.engine.users()
            self._last = vals
            if vals[u["state"] - 1]:
                state = arena.STATES[vals[u["state"] - 1]]
                break
            if vals[u["seq"] - 1] > self._seq:
                self._seq = vals[u["seq"] - 1]
                state = "running"
                break
        raw = spec.Raw.from_users(vals[u["raw"] - 1:u["raw"] - 1 + spec.RAW_SIZE])
        obs = spec.encode(raw)
        mapped = vals[u["obs"] - 1:u["obs"] - 1 + spec.OBS_SIZE]
        if state == "running" and mapped != obs.tolist():
            raise RuntimeError(f"the map encoded {mapped}, spec.encode gives {obs.tolist()}")
        self._obs = obs
        info = {"outcome": state, "alive": alive, "kills": vals[u["kills"] - 1],
                "episode": self._episode, "decision": self._seq, "map_obs": mapped}
        return obs, vals, state != "running", info


gymnasium.register(id=ENV_ID, entry_point="demos.brainlevel.env:BrainLevelEnv")
