"""The ViZDoom engine, headless: start a WAD, advance tics, talk to ACS, read values back.

This module owns every call into `vizdoom`. Nothing else in the project imports it, so that
`build.py --help` and the pure-Python passes never load the engine. Values come back from
ACS through the USER1..USER60 game variables (ACS `global int 1..60`), and plane heights
through ViZDoom's sector list.

ViZDoom runs the game inside the calling process, and a damaged map can crash it (SIGSEGV),
writing `vizdoom-crash.log` and `_vizdoom/` into the current directory. So `Engine` runs the
game (`LocalEngine`) in a child process of its own, in a temporary directory that is
removed afterwards, and forwards every call over a pipe: a crash becomes an EngineError.

Owns the one way an engine ends. The child leads a process group of its own, which the
game process ViZDoom starts (`vizdoom`) joins: `Engine.close` ends the engine politely when
nothing is in flight, and otherwise (a call interrupted by a signal, an exception
unwinding, the grace spent) kills the whole group at once, whatever state the game is
in, and removes the shared memory ViZDoom leaves in /dev/shm. Ctrl-C in a terminal
reaches the command alone (the child is in another group): the command decides, and
closes its engines as it unwinds (`end_all` for those only threads hold). If the command
itself is killed, a watcher process beside each engine (`_watch`: it holds no game, so
nothing keeps it waiting) sees the pipe from the command close without a word and kills
the engine's group.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from dsl.diagnostics import VoodooError

N_USER_VARS = 60


class EngineError(VoodooError):
    """The engine could not start, crashed, or did not do what the protocol expects (a map
    that does not answer: a damaged or mismatched WAD). A user-facing error, exit 1."""


@dataclass(frozen=True)
class SectorState:
    floor: float
    ceiling: float


def start_game(game, cfgdir: str, failed: str) -> None:
    """Start a configured DoomGame whose config goes in `cfgdir` (made just before). An
    interrupt (Ctrl-C, or SIGTERM made one by build.py) most often lands here, in the
    second the game takes to start: the game is closed and the directory removed before it
    goes on; a game that cannot start is an EngineError starting with `failed`."""
    import shutil

    try:
        game.set_doom_config_path(os.path.join(cfgdir, "_vizdoom.ini"))
        game.init()
    except BaseException as e:
        try:
            game.close()
        except Exception:
            pass
        finally:
            shutil.rmtree(cfgdir, ignore_errors=True)
        if isinstance(e, Exception):  # vizdoom raises its own exception types
            raise EngineError(f"{failed}: {e}") from None
        raise


class LocalEngine:
    """One headless ViZDoom instance running one map of a WAD, in this process (see
    `Engine` for the same in a child process, which is what everything else uses).

    Use as a context manager. `advance(n)` runs n tics; `puke(n, *args)` starts ACS script n
    (it runs during the next tic advanced); `user(i)` reads ACS `global int i` (1..60).
    """

    def __init__(self, wad: str, map_name: str = "MAP01", *, sectors: bool = False,
                 resolution: str = "RES_160X120", render: bool = False,
                 extra_args: tuple[str, ...] = (), buttons: tuple[str, ...] = (),
                 pose: bool = False):
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
        # Every state update copies the frame: in grey a third of the bytes (measured: a
        # one-tic step 150 instead of 200 us of CPU). Colour only where frames are wanted.
        game.set_screen_format(vzd.ScreenFormat.RGB24 if render else vzd.ScreenFormat.GRAY8)
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
        # With `pose`, the player's position and angle follow the USER globals (`pose()`).
        game.set_available_game_variables(
            [getattr(vzd.GameVariable, f"USER{i}") for i in range(1, N_USER_VARS + 1)]
            + ([vzd.GameVariable.POSITION_X, vzd.GameVariable.POSITION_Y,
                vzd.GameVariable.ANGLE] if pose else []))
        # ViZDoom writes its config next to the current directory unless told otherwise.
        game.add_game_args("+sv_cheats 1 +vid_forcesurface 0")
        for a in extra_args:
            game.add_game_args(a)
        self.game = game
        self._buttons = 0
        self._cfgdir = tempfile.mkdtemp(prefix="voodoonet-vzd-")
        import shutil
        import weakref

        # removed by close(), or when the engine is collected or the interpreter exits
        self._rm_cfg = weakref.finalize(self, shutil.rmtree, self._cfgdir, True)
        start_game(game, self._cfgdir, f"{wad}: the engine could not start {map_name}")

    # -- lifetime -------------------------------------------------------------------------
    def close(self) -> None:
        try:
            self.game.close()
        finally:
            self._rm_cfg()

    def __enter__(self) -> "LocalEngine":
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

    def step(self, calls: list[tuple], tics: int) -> list[int]:
        """`puke_many(calls)`, `advance(tics)`, then `users()`: one bus step of a map in one
        call, so that the Engine proxy makes one round trip per step instead of three."""
        self.puke_many(calls)
        self.advance(tics)
        return self.users()

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
            return [int(v) for v in state.game_variables[:N_USER_VARS]]
        return [self.user(i) for i in range(1, N_USER_VARS + 1)]

    def pose(self) -> tuple[float, float, float]:
        """The player's x, y and angle (degrees, 0 = east, 90 = north) after the last tic
        (needs pose=True)."""
        state = self.game.get_state()
        if state is None or state.game_variables is None \
                or len(state.game_variables) < N_USER_VARS + 3:
            raise EngineError("the player's pose is not enabled for this engine (pose=True)")
        x, y, a = state.game_variables[N_USER_VARS:N_USER_VARS + 3]
        return float(x), float(y), float(a)

    # -- map state -----------------------------------------------------------------------------
    def sectors(self) -> list[SectorState]:
        """Floor and ceiling height of every sector ViZDoom reports (needs sectors=True)."""
        state = self.game.get_state()
        if state is None or state.sectors is None:
            raise EngineError("sector info is not enabled for this engine (sectors=True)")
        return [SectorState(s.floor_height, s.ceiling_height) for s in state.sectors]

    def screen(self):
        """The last rendered frame as an HxWx3 uint8 array (grey unless render=True)."""
        state = self.game.get_state()
        if state is None:
            raise EngineError("no frame: the episode is not running")
        frame = state.screen_buffer
        return frame if frame.ndim == 3 else frame[:, :, None].repeat(3, axis=2)


# ------------------------------------------------------------------------ the engine process
_METHODS = ("advance", "change_map", "tic", "command", "puke_many", "step", "puke", "user", "users",
            "pose", "sectors", "screen")
_START_TIMEOUT = 120.0
# Seconds the child has to report its game's death itself, once the game process is gone.
GAME_GRACE = 10.0
_LIVE: set = set()   # the engines of this process not closed yet (`end_all`)


def end_all() -> None:
    """Kill every engine of this process not closed yet, at once (the shutdown path for
    engines that threads hold: engine/tiled.stream_sequence when interrupted)."""
    for engine in list(_LIVE):
        engine.close(grace=0.0)


class Engine:
    """A `LocalEngine` in a child process: the same methods, each call forwarded over a
    pipe. Use as a context manager; `close()` ends the child and removes its directory."""

    def __init__(self, wad: str, map_name: str = "MAP01", **kw):
        import subprocess
        import sys

        self.wad = os.path.abspath(wad)
        self.map_name = map_name
        self._dir = tempfile.mkdtemp(prefix="voodoonet-engine-")
        self._proc = None
        self._game: int | None = None   # the child's `vizdoom` game process, once it runs
        self._instance: str | None = None   # the game's ViZDoom instance id (/dev/shm)
        self._busy = False   # a call is in flight: the pipe's protocol is mid-message
        self._watcher = None   # (process, pipe) of `_watch`
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        down_r, down_w = os.pipe()   # parent -> child
        up_r, up_w = os.pipe()       # child -> parent
        try:
            with open(os.path.join(self._dir, "engine.log"), "wb") as log:
                # Everything the child leaves (config, crash log, _vizdoom/) is in _dir.
                env = {**os.environ, "TMPDIR": self._dir, "PYTHONPATH": root + os.pathsep
                       + os.environ.get("PYTHONPATH", "")}
                self._proc = subprocess.Popen(
                    [sys.executable, "-c", "from engine.doom import _serve; _serve()",
                     str(down_r), str(up_w)], cwd=self._dir, env=env, pass_fds=(down_r, up_w),
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    start_new_session=True)   # its group: the child and its game
        except BaseException:
            for fd in (down_r, down_w, up_r, up_w):
                os.close(fd)
            self._cleanup()
            raise
        os.close(down_r)
        os.close(up_w)
        try:
            self._watcher = _start_watcher(self._proc.pid, self._dir, env)
        except BaseException:
            os.close(down_w)
            os.close(up_r)
            _end_group(self._proc, None)
            self._cleanup()
            raise
        self._down = os.fdopen(down_w, "wb")
        self._up = os.fdopen(up_r, "rb")
        _LIVE.add(self)
        try:
            self._call("__init__", (self.wad, map_name), kw)
            self._game = _game_of(self._proc.pid)
            self._instance = _instance_of(self._game)
            if self._instance:   # what to clean up even once the game is gone
                os.write(self._watcher[1], f"game {self._instance}\n".encode())
        except BaseException:
            self.close()
            raise

    def _call(self, method: str, args=(), kw=None):
        import pickle

        if self._proc is None:
            raise EngineError(f"{self.wad}: the engine was closed")
        self._busy = True   # until the reply is read: an interrupt leaves it set
        try:
            pickle.dump((method, args, kw or {}), self._down, protocol=pickle.HIGHEST_PROTOCOL)
            self._down.flush()
            self._await_reply()
            status, value = pickle.load(self._up)
        except (EOFError, OSError, ValueError, AttributeError, pickle.UnpicklingError):
            # the child is gone, or another thread closed this engine (end_all)
            raise EngineError(self._died()) from None
        self._busy = False
        if status == "ok":
            return value
        raise EngineError(value)

    def _await_reply(self) -> None:
        """Wait until the child answers (or exits). ViZDoom learns that its game process
        died only from a thread of its own that waits on it, and once it was never told: a
        Ray actor's engine, its game killed mid-chunk under a loaded machine, left the run
        waiting for 25 minutes. So a game process that is gone while we wait ends the call
        here, GAME_GRACE seconds after, if the child has not reported it by then."""
        import select
        import time

        gone, proc = None, self._proc
        while not select.select([self._up], [], [], 1.0)[0]:
            if proc.poll() is not None or self._game is None:
                continue   # an exited child: the read reports it; no game yet: __init__
            if _running(self._game):
                continue
            gone = gone or time.monotonic()
            if time.monotonic() - gone > GAME_GRACE:
                _end_group(proc, self._instance)
                raise EngineError(f"{self.wad}: the engine's game process died while "
                                  f"running {self.map_name}, and the engine did not notice "
                                  f"in {GAME_GRACE:.0f} s; the engine was ended")

    def _died(self) -> str:
        """What to say when the child stopped answering: its exit, and the log's last line."""
        import signal

        proc = self._proc
        if proc is None:
            return f"{self.wad}: the engine was closed while running {self.map_name}"
        try:
            code = proc.wait(timeout=5)
        except Exception:
            _end_group(proc, self._instance)
            code = proc.wait()
        how = (f"was killed by {signal.Signals(-code).name}" if code < 0 and
               -code in signal.valid_signals() else f"exited with status {code}")
        return (f"{self.wad}: the engine {how} while running {self.map_name}; the WAD's "
                "map may be damaged (rebuild it with `python build.py compile`)")

    def close(self, grace: float = 10.0) -> None:
        """End the child and its game and remove its directory: politely (the game closes
        itself, up to `grace` seconds) when no call is in flight and no exception is
        unwinding; otherwise, or when the grace is spent, by killing the child's process
        group, whatever state it is in."""
        import sys

        proc, self._proc = self._proc, None
        _LIVE.discard(self)
        try:
            if proc is not None and proc.poll() is None and grace > 0 and not self._busy \
                    and sys.exc_info()[0] is None:
                try:
                    import pickle

                    pickle.dump(("close", (), {}), self._down)
                    self._down.flush()
                    proc.wait(timeout=grace)
                except Exception:
                    pass
        finally:  # a second signal that interrupts the wait must not leave anything behind
            if proc is not None:
                _end_group(proc, self._instance)
                _stop_watcher(self._watcher)
            for f in ("_down", "_up"):
                try:
                    getattr(self, f).close()
                except Exception:
                    pass
            self._cleanup()

    def _cleanup(self) -> None:
        import shutil

        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # an engine nobody closed still must not outlive us
        if getattr(self, "_proc", None) is not None:
            self.close()

    def change_map(self, map_name: str) -> None:
        self._call("change_map", (map_name,))
        self.map_name = map_name


def _forward(name: str):
    def method(self, *args, **kw):
        return self._call(name, args, kw)

    method.__name__ = name
    method.__doc__ = getattr(LocalEngine, name).__doc__
    return method


for _name in _METHODS:
    if _name not in Engine.__dict__:
        setattr(Engine, _name, _forward(_name))


def _children(pid: int) -> list[int]:
    pids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return pids


def _end_group(proc, instance: str | None) -> None:
    """SIGKILL the engine child's process group (the child and its game), reap the child,
    and remove the shared memory and queues the game leaves in /dev/shm when killed."""
    import signal

    # a game still starting is not known to the Engine yet: its id is in its command line
    instances = {instance} | {_instance_of(g) for g in _children(proc.pid)}
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass   # ended already (a polite close), group and all
    proc.wait()
    for i in instances:
        _remove_shm(i)


def _start_watcher(child: int, folder: str, env: dict):
    """A process that kills the engine's group if this process dies without closing the
    engine (`_watch`): (the process, the pipe's end it waits on)."""
    import subprocess
    import sys

    r, w = os.pipe()
    try:
        watcher = subprocess.Popen(
            [sys.executable, "-c", "from engine.doom import _watch; _watch()", str(child),
             folder], stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
            env=env, start_new_session=True)
    except BaseException:
        os.close(w)
        raise
    finally:
        os.close(r)
    return watcher, w


def _stop_watcher(watch) -> None:
    """The engine is ended: its watcher is told so, and exits without a kill."""
    if watch is None:
        return
    watcher, w = watch
    try:
        os.write(w, b"closed")
    except OSError:
        pass
    finally:
        os.close(w)
    watcher.wait()


def _watch() -> None:
    """The watcher of an engine child (argv: its pid, its directory): waits until the pipe
    from the command that started it ends (told on the way its game's instance id). Ended
    without the word "closed" (the command died, or was killed before it could close the
    engine) it kills the child's process group, the game with it, and removes what they
    leave (/dev/shm, the directory)."""
    import shutil
    import signal
    import sys

    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)   # only the pipe says when
    child, folder = int(sys.argv[1]), sys.argv[2]
    said = sys.stdin.buffer.read()
    if said.endswith(b"closed"):
        return
    instances = [_instance_of(g) for g in _children(child)] + [
        line[5:].decode() for line in said.splitlines() if line.startswith(b"game ")]
    try:
        os.killpg(child, signal.SIGKILL)
    except OSError:
        pass
    for instance in instances:
        _remove_shm(instance)
    shutil.rmtree(folder, ignore_errors=True)


def _instance_of(game: int | None) -> str | None:
    """The ViZDoom instance id of a game process (its +viz_instance_id argument)."""
    try:
        with open(f"/proc/{game}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
        return args[args.index(b"+viz_instance_id") + 1].decode()
    except (OSError, ValueError, IndexError, TypeError, UnicodeDecodeError):
        return None


def _remove_shm(instance: str | None) -> None:
    """A killed game's shared memory (10 MB) and message queues, named by its instance id;
    a game that closed itself removed them already."""
    import re

    if not instance or not re.fullmatch(r"[A-Za-z0-9]+", instance):
        return
    for kind in ("SM", "MQCtr", "MQDoom"):
        try:
            os.unlink(f"/dev/shm/ViZDoom{kind}{instance}")
        except OSError:
            pass


def _game_of(pid: int) -> int | None:
    """The `vizdoom` game process that process `pid` started (Linux), or None."""
    for child in _children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if os.path.basename(f.read().split(b"\0")[0]) == b"vizdoom":
                    return child
        except OSError:
            continue
    return None


def _running(pid: int) -> bool:
    """Whether process `pid` exists and has not exited (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _die_with_parent() -> None:
    """Linux: SIGTERM this process when its parent exits, however the parent ends; the
    handler kills the game's own `vizdoom` process first (it would not notice) and removes
    what it leaves. It runs only between the calls into ViZDoom, some of which keep the
    interpreter while they wait on a game that does not answer: the watcher (`_watch`)
    does not depend on it."""
    import ctypes
    import signal

    def die(*_):
        games = _children(os.getpid())
        instances = [_instance_of(g) for g in games]
        _kill_children()
        for instance in instances:
            _remove_shm(instance)
        _remove_own_dir()
        os._exit(1)

    signal.signal(signal.SIGTERM, die)
    signal.signal(signal.SIGHUP, die)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent is already gone
        _remove_own_dir()
        os._exit(1)


def _remove_own_dir() -> None:
    """The child runs inside its engine directory: when its parent is killed it cannot
    clean up after us, so the child removes the directory itself on its way out."""
    import shutil

    here = os.getcwd()
    if os.path.basename(here).startswith("voodoonet-engine-"):
        shutil.rmtree(here, ignore_errors=True)


def _kill_children() -> None:
    """SIGKILL every child of this process (ViZDoom runs the game as `vizdoom`)."""
    import signal

    for pid in set(_children(os.getpid())):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _serve() -> None:
    """The child's loop: one LocalEngine, calls in, results out, until "close" or EOF."""
    import pickle
    import signal
    import sys

    _die_with_parent()
    # The parent decides when we end (we are in a process group of our own: this is for
    # a Ctrl-C sent to the group by hand).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    down = os.fdopen(int(sys.argv[1]), "rb")
    up = os.fdopen(int(sys.argv[2]), "wb")
    engine = None
    while True:
        try:
            method, args, kw = pickle.load(down)
        except EOFError:  # the parent is gone without closing us
            break
        if method == "close":
            break
        try:
            if method == "__init__":
                engine = LocalEngine(*args, **kw)
                result = None
            else:
                result = getattr(engine, method)(*args, **kw)
            reply = ("ok", result)
        except Exception as e:  # every failure goes back to the caller as an EngineError
            reply = ("err", str(e) if isinstance(e, EngineError) else f"{type(e).__name__}: {e}")
        pickle.dump(reply, up, protocol=pickle.HIGHEST_PROTOCOL)
        up.flush()
    if engine is not None:
        engine.close()
    # The parent removes the directory too, but it may be interrupted between our exit and
    # its removal (a signal to a worker that is closing us): whoever is last, it goes.
    _remove_own_dir()
