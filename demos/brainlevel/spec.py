"""The brain level's rules in plain Python: episodes, observation, actions, the expert.

Owns every number the arena, the policy, the Gymnasium environment and the runner must
agree on, and the two pure functions they share:

- `episode(seed)`: the seeded episode (which demons, in which order, at which spawn spot);
- `encode(raw)`: the integer observation of one game state, five tokens of five features
  (`arena.py` computes the same thing in ACS; the runner and tests/test_brainlevel.py check
  that both agree on every decision);
- `expert(obs)`: the scripted policy the network is trained to imitate.

Coordinates are map units with the marine at the arena's centre (0, 0).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

# -- the demons -----------------------------------------------------------------------------
# kind index -> (actor class in the game data ViZDoom ships, spawn health), in the order
# of the threat they pose to a marine at the centre (the expert's ranking, kind + 1)
KINDS = [("ZombieMan", 20), ("DoomImp", 60), ("ShotgunGuy", 30)]
SLOTS = 4                 # demons on the field at once; each has a token
DEMONS = 8                # demons per episode, appearing in seeded order as slots free up
SPAWN_RADII = (576, 896)  # spawn spots: 8 directions x these radii around the marine
SPOTS = [(int(round(r * math.cos(math.pi * k / 4))), int(round(r * math.sin(math.pi * k / 4))))
         for r in SPAWN_RADII for k in range(8)]
ARENA_HALF = 1152         # the arena is the square |x|, |y| <= ARENA_HALF

# -- the marine -----------------------------------------------------------------------------
MARINE_HEALTH = 100
START_AMMO = 50           # Doom's start: a pistol and 50 bullets
PISTOL_DAMAGE = (5, 15)   # 5 * (1..3), the pistol's bullet
FIRE_TICS = 14            # one pistol shot per FIRE_TICS, the pistol's own rate
BURST = 6                 # an action lasts BURST * FIRE_TICS: up to BURST shots at the
                          # chosen demon until it is dead; at an empty slot the burst goes
                          # straight ahead; "wait" holds fire as long
TIME_LIMIT_TICS = 60 * 35 # lost when the demons have had this much time (frozen tics excluded)

# -- observation: 5 tokens x 5 features, every feature 0..3 ------------------------------------
TOKENS = SLOTS + 1
FEATURES = 5
OBS_SIZE = TOKENS * FEATURES
OBS_HI = 3
DEMON_FEATURES = ("present", "kind", "distance", "direction", "health")
MARINE_FEATURES = ("marine", "health", "ammo", "-", "-")
DIST_EDGES = (320, 576, 832)  # distance buckets: < 320, < 576, < 832, beyond
HEALTH_STEP = 16          # a demon's health bucket: min(3, health // 16)
MARINE_STEP = 26          # the marine's health bucket: min(3, health // 26)
AMMO_STEP = 10            # ammo bucket: min(3, ammo // 10)

# -- actions ----------------------------------------------------------------------------------
ACTIONS = [f"fire at slot {k}" for k in range(SLOTS)] + ["wait"]
N_ACTIONS = len(ACTIONS)
WAIT = SLOTS


@dataclass(frozen=True)
class Demon:
    kind: int
    spot: int


def episode(seed: int) -> list[Demon]:
    """The seeded episode: DEMONS demons in order of appearance, each with a spawn spot.
    Kinds are drawn from a bag of 5 zombiemen, 4 imps and 3 shotgun guys."""
    rng = random.Random(f"brainlevel-{int(seed)}")
    kinds = [0] * 5 + [1] * 4 + [2] * 3
    rng.shuffle(kinds)
    return [Demon(k, rng.randrange(len(SPOTS))) for k in kinds[:DEMONS]]


def pack_episode(demons: list[Demon]) -> list[int]:
    """The episode as script arguments: 4 demons per int, 6 bits each (kind * 16 + spot)."""
    out = [0, 0, 0]
    for i in range(0, len(demons), 4):
        v = 0
        for j, d in enumerate(demons[i:i + 4]):
            v |= (d.kind * 16 + d.spot) << (6 * j)
        out[i // 4] = v
    return out


# -- the observation ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Raw:
    """One game state as the map reports it (USER globals): per slot (kind+1 or 0, dx, dy,
    health) relative to the marine, then the marine's health and ammo."""
    slots: tuple[tuple[int, int, int, int], ...]
    health: int
    ammo: int

    @classmethod
    def from_users(cls, vals: list[int]) -> "Raw":
        slots = tuple(tuple(vals[4 * k:4 * k + 4]) for k in range(SLOTS))
        return cls(slots, vals[4 * SLOTS], vals[4 * SLOTS + 1])


RAW_SIZE = 4 * SLOTS + 2


def distance_bucket(dx: int, dy: int) -> int:
    d2 = dx * dx + dy * dy
    return sum(d2 >= e * e for e in DIST_EDGES)


def direction_bucket(dx: int, dy: int) -> int:
    """0 east, 1 north, 2 west, 3 south: the axis the demon is furthest along."""
    if abs(dx) >= abs(dy):
        return 0 if dx >= 0 else 2
    return 1 if dy > 0 else 3


def encode(raw: Raw) -> np.ndarray:
    """The observation: int64 array of OBS_SIZE, token by token (see module docstring)."""
    obs = []
    for kind1, dx, dy, hp in raw.slots:
        if kind1 <= 0:
            obs += [0] * FEATURES
        else:
            obs += [1, kind1 - 1, distance_bucket(dx, dy), direction_bucket(dx, dy),
                    min(OBS_HI, max(hp, 0) // HEALTH_STEP)]
    obs += [1, min(OBS_HI, max(raw.health, 0) // MARINE_STEP),
            min(OBS_HI, max(raw.ammo, 0) // AMMO_STEP), 0, 0]
    return np.array(obs, dtype=np.int64)


def tokens(obs) -> np.ndarray:
    return np.asarray(obs).reshape(TOKENS, FEATURES)


# -- the expert -----------------------------------------------------------------------------------
def threat(tok) -> int:
    """Near first (8 per distance bucket), then by kind (shotgun guys hurt most), then the
    weakest: a linear score of the token's features."""
    present, kind, dist, _, hp = (int(v) for v in tok)
    if not present:
        return -1
    return 8 * (3 - dist) + 2 * (kind + 1) + (3 - hp)


def expert(obs) -> int:
    """Fire at the most threatening demon (near first, then by kind, then the weakest);
    wait when none is there. Ties go to the lowest slot."""
    t = tokens(obs)
    scores = [threat(t[k]) for k in range(SLOTS)]
    best = max(range(SLOTS), key=lambda k: (scores[k], -k))
    return best if scores[best] >= 0 else WAIT


def random_obs(rng: np.random.Generator, n: int) -> np.ndarray:
    """n observations drawn over the whole observation space (absent slots all zero)."""
    out = np.zeros((n, TOKENS, FEATURES), dtype=np.int64)
    present = rng.random((n, SLOTS)) < rng.uniform(0.2, 1.0, (n, 1))
    out[:, :SLOTS, 0] = present
    out[:, :SLOTS, 1] = rng.integers(0, len(KINDS), (n, SLOTS)) * present
    for f in (2, 3, 4):
        out[:, :SLOTS, f] = rng.integers(0, OBS_HI + 1, (n, SLOTS)) * present
    out[:, SLOTS, 0] = 1
    out[:, SLOTS, 1] = rng.integers(0, OBS_HI + 1, n)
    out[:, SLOTS, 2] = rng.integers(0, OBS_HI + 1, n)
    return out.reshape(n, OBS_SIZE)
