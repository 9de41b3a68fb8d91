"""A ViZDoom scenario run with its own configuration file, on its WAD or on another one.

Owns playing someone else's scenario as they configured it (buttons, rewards, timeouts,
skill, start time), headless, so that a WAD with a circuit embedded (modding/embed.py) can
be played next to the original and compared: same actions and seed in, same rewards, kills
and ending out. The USER1..60 variables are added so the embedded circuit can be read too.
"""
from __future__ import annotations

import os
import shutil
import tempfile

from engine.doom import N_USER_VARS, EngineError, start_game


class Scenario:
    def __init__(self, cfg: str, wad: str | None = None, seed: int = 0, render: bool = False,
                 sectors: bool = False, resolution: str | None = None):
        import vizdoom as vzd

        self._vzd = vzd
        game = vzd.DoomGame()
        # The cfg names its WAD relative to itself.
        here = os.getcwd()
        os.chdir(os.path.dirname(os.path.abspath(cfg)))
        try:
            game.load_config(os.path.basename(cfg))
        finally:
            os.chdir(here)
        if wad is None:
            wad = os.path.join(os.path.dirname(os.path.abspath(cfg)),
                               os.path.basename(game.get_doom_scenario_path()))
        game.set_doom_scenario_path(os.path.abspath(wad))
        game.set_doom_game_path(os.path.join(os.path.dirname(vzd.__file__), "freedoom2.wad"))
        game.set_window_visible(False)
        game.set_sound_enabled(False)
        game.set_render_messages(render)
        game.set_seed(seed)
        game.set_sectors_info_enabled(sectors)
        if resolution:   # pictures for people; the cfg's own resolution otherwise
            game.set_screen_resolution(getattr(vzd.ScreenResolution, resolution))
            game.set_screen_format(vzd.ScreenFormat.RGB24)
        self.n_own_vars = game.get_available_game_variables_size()
        for i in range(1, N_USER_VARS + 1):
            game.add_available_game_variable(getattr(vzd.GameVariable, f"USER{i}"))
        game.add_game_args("+sv_cheats 1")
        self._cfgdir = tempfile.mkdtemp(prefix="voodoonet-scn-")
        start_game(game, self._cfgdir, f"{wad}: the scenario {cfg} could not start")
        self.game = game
        self.buttons = [str(b).split(".")[-1] for b in game.get_available_buttons()]

    def close(self) -> None:
        try:
            self.game.close()
        finally:
            shutil.rmtree(self._cfgdir, ignore_errors=True)

    def __enter__(self) -> "Scenario":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def act(self, pressed: tuple[str, ...] = (), tics: int = 1) -> float:
        """Hold the named buttons for `tics` tics; the reward they earned."""
        action = [1.0 if b in pressed else 0.0 for b in self.buttons]
        return self.game.make_action(action, tics)

    def finished(self) -> bool:
        return self.game.is_episode_finished()

    def total_reward(self) -> float:
        return self.game.get_total_reward()

    def var(self, name: str) -> int:
        return int(self.game.get_game_variable(getattr(self._vzd.GameVariable, name)))

    def user(self, i: int) -> int:
        return self.var(f"USER{i}")

    def users(self) -> list[int]:
        return [self.user(i) for i in range(1, N_USER_VARS + 1)]

    def command(self, text: str) -> None:
        self.game.send_game_command(text)

    def puke(self, script: int, *args: int) -> None:
        self.command(" ".join(["puke", str(script), *map(str, args)]))

    def sector(self, i: int) -> tuple[float, float]:
        """(floor, ceiling) height of sector i (needs sectors=True)."""
        state = self.game.get_state()
        if state is None or state.sectors is None:
            raise EngineError("sector info is not enabled (sectors=True)")
        s = state.sectors[i]
        return s.floor_height, s.ceiling_height

    def screen(self):
        state = self.game.get_state()
        if state is None:
            raise EngineError("no frame: the episode is not running")
        return state.screen_buffer
