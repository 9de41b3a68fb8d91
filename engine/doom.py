"""The ViZDoom engine, headless: start a WAD, advance tics, talk to ACS, read values back.

This module owns every call into `vizdoom`. Nothing else in the project imports it, so that
`build.py --help` and the pure-Python passes never load the engine. Values come back from
ACS through the USER1..USER60 game variables (ACS `global int 1..60`), and plane heights
through ViZDoom's sector list.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

N_USER_VARS = 60


class EngineError(RuntimeError):
    """The engine could not start, or died, or did not do what the protocol expects."""


@dataclass(frozen=True)
class SectorState:
    floor: float
    ceiling: float


class Engine:
    """One headless ViZDoom instance running one map of a WAD.

    Use as a context manager. `advance(n)` runs n tics; `puke(n, *args)` starts ACS script n
    (it runs during the next tic advanced); `user(i)` reads ACS `global int i` (1..60).
    """

    def __init__(self, wad: str, map_name: str = "MAP01", *, sectors: bool = False,
                 resolution: str = "RES_160X120", render: bool = False,
                 extra_args: tuple[str, ...] = (), buttons: tuple[str, ...] = ()):
        import vizdoom as vzd  # lazy: the engine is a heavy import

        self._vzd = vzd
        self.wad = os.path.abspath(wad)
        self.map_name = map_name
        game = vzd.DoomGame()
        game.set_doom_game_path(os.path.join(os.path.dirname(vzd.__file__), "freedoom2.wad"))
        game.set_doom_scenario_path(self.wad)
        game.set_doom_map(map_name)
        game.set_window_visible(False)
        game.set_sound_enabled(False)
        game.set_screen_resolution(getattr(vzd.ScreenResolution, resolution))
        game.set_screen_format(vzd.ScreenFormat.RGB24)
        # A rendered view shows messages (Print) but no HUD or weapon: screenshots are of
        # the map.
        game.set_render_hud(False)
        game.set_render_weapon(False)
        game.set_render_crosshair(False)
        game.set_render_decals(False)
        game.set_render_particles(False)
        game.set_render_messages(render)
        game.set_sectors_info_enabled(sectors)
        game.set_episode_timeout(0)
        game.set_mode(vzd.Mode.PLAYER)
        # Buttons let a test drive the marine as a player would (MOVE_FORWARD, TURN_LEFT...).
        game.set_available_buttons([getattr(vzd.Button, b) for b in buttons])
        self.buttons = list(buttons)
        game.set_available_game_variables(
            [getattr(vzd.GameVariable, f"USER{i}") for i in range(1, N_USER_VARS + 1)])
        # ViZDoom writes its config next to the current directory unless told otherwise.
        self._cfgdir = tempfile.mkdtemp(prefix="voodoonet-vzd-")
        game.set_doom_config_path(os.path.join(self._cfgdir, "_vizdoom.ini"))
        game.add_game_args("+sv_cheats 1 +vid_forcesurface 0")
        for a in extra_args:
            game.add_game_args(a)
        self.game = game
        self._buttons = 0
        try:
            game.init()
        except Exception as e:  # vizdoom raises its own exception types
            raise EngineError(f"{wad}: the engine could not start {map_name}: {e}") from None

    # -- lifetime -------------------------------------------------------------------------
    def close(self) -> None:
        try:
            self.game.close()
        finally:
            import shutil
            shutil.rmtree(self._cfgdir, ignore_errors=True)

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- time -------------------------------------------------------------------------------
    def advance(self, tics: int = 1, action: list[float] | None = None) -> None:
        """Run `tics` game tics (the marine does nothing unless an action is given)."""
        if tics <= 0:
            return
        if action is None:
            action = [0.0] * self.game.get_available_buttons_size()
        self.game.set_action(action)
        # update_state=True: user(), users() and sectors() read the state of the last tic;
        # with False they kept returning the values of the previous update.
        self.game.advance_action(tics, True)
        if self.game.is_episode_finished():
            raise EngineError(f"{self.wad}: the episode ended (map exited or the player died)")

    def change_map(self, map_name: str) -> None:
        """Start a new game on another map of the same WAD (a few ms, versus ~0.25 s for a
        new engine). ACS globals, world and map variables start from zero again."""
        self.game.set_doom_map(map_name)
        self.game.new_episode()
        self.map_name = map_name

    def tic(self) -> int:
        return int(self.game.get_episode_time())

    # -- ACS ---------------------------------------------------------------------------------
    def command(self, text: str) -> None:
        if len(text) > 128:
            raise EngineError(f"console command longer than 128 characters: {text[:40]}...")
        self.game.send_game_command(text)

    def puke_many(self, calls: list[tuple]) -> None:
        """Start several different scripts in the next tic, chained with ';' into as few
        console commands as fit (a script already started this tic is not started twice)."""
        line = ""
        for script, *args in calls:
            cmd = " ".join(["puke", str(int(script)), *(str(int(a)) for a in args)])
            if line and len(line) + 1 + len(cmd) > 128:
                self.command(line)
                line = ""
            line = f"{line};{cmd}" if line else cmd
        if line:
            self.command(line)

    def puke(self, script: int, *args: int) -> None:
        """Start ACS script `script` with up to 4 int args; it runs during the next tic."""
        if len(args) > 4:
            raise EngineError("puke takes at most 4 script arguments")
        self.command(" ".join(["puke", str(int(script)), *(str(int(a)) for a in args)]))

    def user(self, i: int) -> int:
        """ACS `global int i` (1..60), read after the last tic advanced."""
        if not 1 <= i <= N_USER_VARS:
            raise EngineError(f"USER{i} does not exist (1..{N_USER_VARS})")
        return int(self.game.get_game_variable(getattr(self._vzd.GameVariable, f"USER{i}")))

    def users(self) -> list[int]:
        """All 60 globals at once (index 0 is USER1)."""
        state = self.game.get_state()
        if state is not None and state.game_variables is not None:
            return [int(v) for v in state.game_variables]
        return [self.user(i) for i in range(1, N_USER_VARS + 1)]

    # -- map state -----------------------------------------------------------------------------
    def sectors(self) -> list[SectorState]:
        """Floor and ceiling height of every sector ViZDoom reports (needs sectors=True)."""
        state = self.game.get_state()
        if state is None or state.sectors is None:
            raise EngineError("sector info is not enabled for this engine (sectors=True)")
        return [SectorState(s.floor_height, s.ceiling_height) for s in state.sectors]

    def screen(self):
        """The last rendered frame as an HxWx3 uint8 array."""
        state = self.game.get_state()
        if state is None:
            raise EngineError("no frame: the episode is not running")
        return state.screen_buffer
