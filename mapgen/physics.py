"""Every engine fact the compiler relies on, in one place, each measured by a test.

The numbers come from ../shared/doom-physics.md and from our own runs; tests/test_physics.py
builds a small map for each one and checks it in ViZDoom. Change a number here only
together with its test.
"""
from __future__ import annotations

# --- the doll ---------------------------------------------------------------------------
DOLL_RADIUS = 16          # a player-class actor: a 32x32 box
DOLL_HEIGHT = 56          # headroom 56 passes, 55 blocks (test: door threshold)
MAX_STEP = 24             # a doll climbs a floor step of at most 24 units
# ...but at lane speed, a run of steps higher than 12 stops it dead every few steps (measured:
# 16 doors rising 12 each ride through at full speed; rising 13, the doll halts at the sixth
# and crawls on, far slower than the schedule allows). Lanes climb in steps of at most this.
MAX_RISE = 12

# --- limits ---------------------------------------------------------------------------
LIGHT_MIN, LIGHT_MAX = -32768, 32767     # sector light levels (ClampLight), exact ints
PLANE_MIN, PLANE_MAX = -32768, 32767     # plane heights in map units
COORD_MIN, COORD_MAX = -32768, 32767     # vertex coordinates
ACS_INT_MAX = 2**31 - 1
USER_VARS = 60                           # ViZDoom USER1..USER60 = ACS global 1..60
PUKE_ARGS = 4                            # `puke N a b c d`

# --- what one map holds (bench/map_limits.py; docs/physics.md, "Limits of one map") --------
# Every `puke` is queued as a network command for the next tic, 20 bytes with 4 arguments,
# in a buffer of about 14,000 bytes: 700 script starts in one tic run, 701 crash ViZDoom
# (SIGSEGV; without arguments 3,503 run, 3,504 crash). A step starts its input scripts (or
# a batch's queue scripts) and its beat or batch script in one tic.
MAX_SCRIPT_STARTS = 700
MAX_MAP_INPUTS = PUKE_ARGS * (MAX_SCRIPT_STARTS - 1)
# Lines bordering one sector: 32,767 load, 32,768 crash ViZDoom while it loads the map (a
# 16-bit count; GZDoom loads 40,000). The hall of lights borders every light tile with 4.
MAX_SECTOR_LINES = 32_767
MAX_HALL_LIGHTS = MAX_SECTOR_LINES // 4 - 16
# Dolls: 32,000 load (20 ms of engine time per idle tic); the compiler allows what loads.
MAX_DOLLS = 32_000
# What the tile planner gives one map: an idle tic costs about 0.17 ms per 1,000 dolls up
# to 4,000 (measured: 1,000 0.26 ms, 4,000 0.67 ms) and several times that beyond (8,000:
# 5.9 ms), so a tile stays in the cheap range.
TILE_DOLLS = 4000
# The engine's tag hash (FTagManager): 256 buckets by tag % 256, each a chain walked to its
# end to find a tag's sectors. Door tags and value lights take the first COLD_BUCKETS
# (circuit.new_tag).
TAG_BUCKETS = 256
COLD_BUCKETS = 32
MAX_TAG = 65535


def cold(tag: int) -> bool:
    """Whether a tag hashes into one of the cold buckets (doors and value lights)."""
    return tag % TAG_BUCKETS < COLD_BUCKETS


MAX_SECTORS = 262_144      # 262,144 closed sectors load (38 s); the budget of checks
# Linedefs: 200,000 in rows of 1,000 loaded in 83 s without nodes; with nodes built ahead
# (mapgen/nodes.py) the 391,469 of the chat map load in 4.3 s of engine CPU. A compiled map
# may hold MAX_LINES; the tile planner fills a map to TILE_LINES, leaving the rest for the
# sub-lanes mapgen/carry.py adds.
MAX_LINES = 600_000
TILE_LINES = 400_000
# GZDoom (g4.14.2, hw_vertexbuilder.cpp CreateVBO) copies the floor and the ceiling of every
# sector, as the vertices of its GL subsectors (each vertex once per sector), into one
# vertex buffer of FFlatVertexBuffer::BUFFER_SIZE = 2,000,000 at load: a map needing more
# crashes it there (a memcpy past the buffer, measured on the CNN hub's MAP02: 2,301,788
# before weighted lines reached the walls). The rest of the buffer takes the vertices each
# frame draws (walls, 4 each), so a map keeps GZDOOM_FRAME of it free: the budget of checks
# (mapgen/nodes.gl_flat_vertices counts a built map exactly, checks.flat_vertices estimates).
GZDOOM_BUFFER = 2_000_000
GZDOOM_RESERVED = 20            # FFlatVertexBuffer::NUM_RESERVED, before the map's own
GZDOOM_FRAME = 100_000
GZDOOM_FLAT_VERTICES = GZDOOM_BUFFER - GZDOOM_FRAME
# Generated ACS goes through our ACS compiler, whose source limit this is (acs/__init__.py).
# The planner estimates a map's ACS from its counts (mapgen/tiles.acs_bound): a statement
# with its comment takes about ACS_LINE_CHARS characters besides a node's name, a plain one
# (the batch script's) ACS_PLAIN_CHARS; the planner fills a tile to TILE_ACS_CHARS.
MAX_ACS_CHARS = 4 * 1024 * 1024
ACS_LINE_CHARS = 80
ACS_PLAIN_CHARS = 64
TILE_ACS_CHARS = MAX_ACS_CHARS * 9 // 10

# --- plane movers ------------------------------------------------------------------------
# Ceiling_MoveToValue's speed is in 1/8 unit per tic. The engine adds speed * FRACUNIT/8 to
# the plane's fixed-point height, so speed * 8192 + |height| * 65536 must stay below 2**31
# or the move wraps around (measured: a move to 1000 at speed 262136 went to -32766).
# A move of at most speed/8 units lands exactly in the tic it starts.
PLANE_SPEED_LIMIT = 2**18


def plane_move_wraps(speed: int, height: int) -> bool:
    """Whether a plane move at `speed` near |height| overflows the fixed-point height."""
    return speed * 8192 + abs(height) * 65536 >= 2**31


def plane_speed(span: int, max_height: int) -> tuple[int, int]:
    """(speed, tics) for moves of up to `span` units on a plane within +-max_height."""
    # Heights beyond the plane range are reported by checks.check_planes; give them the
    # slowest mover rather than fail here.
    ceiling = max(8, PLANE_SPEED_LIMIT - 8 * (max_height + 1) - 64)
    want = 8 * max(span, 1)
    speed = min(want, ceiling)
    tics = -(-max(span, 1) * 8 // speed)
    return speed, tics

# --- lanes -----------------------------------------------------------------------------
MAX_DOORS = 1000          # a lane of more doors cannot fit the map's 65536 units anyway
LANE_WIDTH = 48           # corridor width: the 32-unit doll plus 8 units each side
LANE_GAP = 16             # void between neighbouring lanes
DOOR_DEPTH = 16           # a door sector, along the lane
LINE_LEAD = 4             # from a door's far edge to its first weighted line
LINE_SPACING = 2          # between weighted lines (1 was measured exact as well)
# From the last weighted line of a landing to the next door: a doll that is stopped by the
# next door has its centre 16 units short of it, so it must already have crossed every
# line of the landing; and a doll inside a door must never also touch a higher floor
# beyond it (measured: a door followed at once by a step is judged against the step).
LANDING_CLEAR = 40
# A door's ceiling at map start, above its floor (every inference writes it before its doll
# rides, so the computation never sees it): a door sector whose ceiling is at its floor is
# closed, and GZDoom's OpenGL renderer clips everything behind a closed sector like a solid
# wall, so a lane hall seen from above before the first inference showed sky where the
# floor behind its doors should be (the brain level's first decision, issue 24).
DOOR_START_OPENING = 8
SPAWN_LENGTH = 64         # a conveyor strip where the doll spawns and is named
PAD_LENGTH = 64           # where a doll waits between rides: ordinary friction, so a parked
                          # doll has no velocity and costs the engine almost nothing
END_LENGTH = 64           # after the last door: the doll stops against the end wall
# A new doll spawns against the spawn strip's west wall and rides over its naming line; on a
# gliding lane the strip is a closet closed to the pad, so the doll then rests with its box
# against the closet's east side, centre DOLL_RADIUS short of it (a stop point: the naming
# line keeps STOP_CLEARANCE from it and from the spawn point).
SPAWN_OFFSET = DOLL_RADIUS                        # doll spawn point from the strip's start
TID_LINE_OFFSET = SPAWN_OFFSET + DOLL_RADIUS     # the Thing_ChangeTID line (STOP_CLEARANCE on)
# Where a doll is parked: its whole box on the pad. A box that still touches the spawn
# strip is carried by it (measured: a doll parked 8 units over the strip crept into its lane).
START_OFFSET = SPAWN_LENGTH + PAD_LENGTH // 2
HEADROOM_EXTRA = 16       # static ceilings sit DOLL_HEIGHT + this above their floor
# Where a blocked doll comes to rest is engine-dependent: the engine splits a tic's move into
# substeps of at most radius - 1 units (15 at 64 units/tic: 5 substeps of 12.8) and a blocked
# substep ends short of the wall by however far that engine's slide code gets. Measured: a
# doll at 64 units/tic stopped against the same blocker at x = 1009.6 in GZDoom and 1005.6 in
# ViZDoom. So a doll's centre stops anywhere in [contact - MOVE_SUBSTEP, contact], contact
# being DOLL_RADIUS before the face; no line may lie within STOP_CLEARANCE of a contact
# point (checks.check_stop_clearance), or one engine would count it and another not.
MOVE_SUBSTEP = DOLL_RADIUS - 1
STOP_CLEARANCE = MOVE_SUBSTEP + 1

# --- how a doll rides: gliding on frictionless floors ------------------------------------------
# A doll is released with DOLL_SPEED along its lane (SetActorVelocity) and keeps it: every
# sector of a lane past its pad has friction 1.0, so the engine's per-tic friction multiplies
# the doll's velocity by exactly 1 (Sector_SetFriction with amount 200 gives friction
# 0x1EB8*200/0x80 + 0xD001 clamped to FRACUNIT; the sector's FRICTION_MASK special bit makes
# the engine use it). Nothing ticks for a lane while its doll waits: a Scroll_Floor conveyor
# makes a scroller thinker per tagged sector that runs every tic whether anyone stands on it
# (measured: the chat map's 85,924 conveyor sectors idled at 14.0 ms a tic, 0.55 ms without
# them; docs/physics.md "What a tic costs").
FRICTION_SPECIAL = 0x0800     # a sector special bit: the sector's own friction applies
NO_FRICTION = 200             # Sector_SetFriction amount: friction exactly 1.0
# Only the spawn strips carry (a new doll has no TID yet, so ACS cannot give it a velocity):
# Scroll_Floor with scrollbits 4 takes direction and speed from its control line, length / 32
# units per tic. The OPEN script stops them once every doll is named (their scrollers then
# return at once every tic).
DOLL_SPEED = 112          # units per tic along a lane
# A gliding doll that meets a closed door (or its lane's end wall) bounces back west at half
# its speed: the engine's ice (P_HitSlideLine: friction above the normal 0.90625). A moving
# doll costs the engine about 20 us a tic (8 substeps of collision checks; measured: 200
# gliding dolls, bench/tic_cost.py), a resting one about 0.25 us, so every portal between two
# sectors of a gliding lane (past the pad) carries Thing_Stop(0) for a doll crossing it from
# the east: a bounced doll rests from the first portal it crosses until it is parked.
# (Weighted lines count only eastward, so the way back counts nothing either way.)
SCROLL_LINE_LENGTH = DOLL_SPEED * 32
# A doll climbs the floor under its whole move of one tic at once: steps that rise more
# than MAX_STEP within DOLL_SPEED units stop it (measured at 112 units per tic: 32-unit
# stairs of 12 halt it on a ramp, 56-unit ones do not; tests/test_physics.py). So every
# flat stretch of a lane is at least DOLL_SPEED * MAX_RISE / MAX_STEP long: a ramp's
# stairs, and a door with its landing.
RAMP_STEP_LENGTH = -(-DOLL_SPEED * MAX_RISE // MAX_STEP)   # one stair of a ramp
assert DOOR_DEPTH + LINE_LEAD + LANDING_CLEAR >= RAMP_STEP_LENGTH

# Every moving plane plays its sector's sound sequence, and the engine looks for a sector's
# running sequence by walking the list of all of them (s_sndseq.cpp: SN_CheckSequence), once
# when a move starts and once when it stops: n door moves started in one tic cost about
# n * n / 2 list steps. Door sectors name a sequence that does not exist, so their moves
# start none (FindSequence fails, nothing is created or searched). Measured on the trained
# MNIST map (1,871 door moves per inference): 31 -> 18 ms of engine CPU per inference.
SILENT_SEQUENCE = "VoodooNetSilent"

# --- specials (../shared/reference/specials.tsv) -------------------------------------------
SPECIAL = {
    "Light_RaiseByValue": 110,
    "Light_LowerByValue": 111,
    "Light_ChangeToValue": 112,
    "Ceiling_MoveToValue": 47,
    "Scroll_Floor": 223,
    "Sector_SetFriction": 219,
    "Thing_ChangeTID": 176,
    "Thing_Stop": 19,
}
