"""Tiled runs: every sample through the maps of a tiled WAD (MAP01, MAP02, ...), in
parallel engine processes. Python carries values between tiles by name only."""
from __future__ import annotations

from dsl.ir import Netlist

from engine.doom import Engine
from engine.runner import MapRunner

_WORKER: dict = {}


def _tile_worker_init(wad: str, infos: list[dict], tile_io: list[tuple[list, list]],
                      pipeline: bool = True) -> None:
    import signal
    import sys
    from multiprocessing.util import Finalize

    # Ctrl-C reaches every process of the terminal's group: the parent alone decides and
    # terminates the pool (SIGTERM), which here becomes a normal exit that runs the
    # finalizer below, so the engine and its directory go too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    engine = Engine(wad, "MAP01")
    _WORKER.update(wad=wad, infos=infos, io=tile_io, engine=engine, pipeline=pipeline,
                   runners={})
    # Close the engine when the worker exits, or its process outlives us.
    Finalize(engine, engine.close, exitpriority=10)


def _tile_worker_run(chunk: list[tuple[int, dict]]) -> list[tuple[int, dict, int]]:
    w = _WORKER
    return run_chunk(w["engine"], w["wad"], w["infos"], w["io"], chunk, w["pipeline"],
                     w["runners"])


def run_chunk(engine: Engine, wad: str, infos: list[dict], io, chunk: list[tuple[int, dict]],
              pipeline: bool = True, runners: dict | None = None
              ) -> list[tuple[int, dict, int]]:
    """Samples through every tile in order, in one engine (pipelined when the maps allow).
    Returns each sample's values by name and the engine tics spent on it (a pipelined
    run's tics shared out evenly). Also what engine/cluster.py's Ray actors run.
    `runners`: the caller's runner of the map its engine is on, kept from chunk to chunk
    ({} with an engine just started); without it each tile's map is loaded again."""
    tics = 0
    for k, info in enumerate(infos):
        runner = _runner_on(engine, wad, info, f"MAP{k + 1:02d}", runners)
        ins, outs = io[k]
        before = runner.tics
        got = runner.infer_many([[values[n] for n in ins] for _, values in chunk], pipeline)
        for (_, values), g in zip(chunk, got):
            values.update(zip(outs, g))
        tics += runner.tics - before
    share = [tics // len(chunk) + (j < tics % len(chunk)) for j in range(len(chunk))]
    return [(idx, values, t) for (idx, values), t in zip(chunk, share)]


def _runner_on(engine: Engine, wad: str, info: dict, name: str, runners: dict | None
               ) -> MapRunner:
    """A runner of map `name` in `engine`. Loading a map again costs as much as many
    inferences (the trained MNIST map: 0.74 s), so a one-map WAD is loaded once per engine:
    the runner that drove the map last is reused (every infer_many leaves the map as it
    found it: dolls parked, lights reset by the next inference), and an engine just started
    on the map needs no reload."""
    if runners is None:
        engine.change_map(name)
        return MapRunner(wad, info, name, engine=engine)
    if name in runners and engine.map_name == name:
        return runners[name]
    if runners or engine.map_name != name:  # the map was driven already, or is another one
        engine.change_map(name)
    runners.clear()  # the other maps' runners went with their maps
    runners[name] = MapRunner(wad, info, name, engine=engine)
    return runners[name]


def run_tiled(wad: str, infos: list[dict], tiles, net: Netlist, X, workers: int = 2,
              chunk: int = 20, progress=None, pipeline: bool = True
              ) -> tuple[list[list[int]], int]:
    """Every sample of X through the tiles of `wad` (MAP01..), in `workers` engine processes.
    Returns the outputs in order and the total engine tics. `progress(n)` is called as
    samples finish. Python only looks values up by name between tiles."""
    import multiprocessing as mp

    names_in = [net.nodes[i].name for i in net.inputs]
    names_out = [net.nodes[o].name for o in net.outputs]
    io = [(t.inputs, t.outputs) for t in tiles]
    work = [(i, dict(zip(names_in, map(int, x)))) for i, x in enumerate(X)]
    chunks = [work[i:i + chunk] for i in range(0, len(work), chunk)]
    results: dict[int, list[int]] = {}
    total_tics = 0
    ctx = mp.get_context("spawn")
    pool = ctx.Pool(workers, initializer=_tile_worker_init, initargs=(wad, infos, io, pipeline))
    try:
        for done in pool.imap_unordered(_tile_worker_run, chunks):
            for idx, values, tics in done:
                results[idx] = [values[n] for n in names_out]
                total_tics += tics
            if progress:
                progress(len(done))
        pool.close()   # workers exit normally and close their engines
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
    return [results[i] for i in range(len(X))], total_tics


def run_sequence(wad: str, infos: list[dict], tiles, net: Netlist, seq: list):
    """One run of a multi-step netlist through the maps of a tiled WAD, step by step
    (mapgen/tiles.carry_sequence): an engine per map, each keeping its map loaded and its
    own state (membranes, prev doors) from step to step. Every output and every value that
    crosses maps is compared with the reference at every step; the first one that differs
    is named with its step."""
    from dsl.sequence import reference_run
    from engine.runner import Comparison
    from mapgen.tiles import carry_sequence

    runners: list[MapRunner] = []
    try:
        for k, info in enumerate(infos):
            runners.append(MapRunner(wad, info, f"MAP{k + 1:02d}"))
        steps = carry_sequence(tiles, seq, net,
                               lambda k, ins, t, fed: runners[k].infer(ins, first=t == 0, fed=fed),
                               [set(info.get("feedback") or []) for info in infos])
    finally:
        for r in runners:
            r.close()
    res, _ = reference_run(net, seq)
    out = []
    for t, values in enumerate(steps):
        ref = {n.name: int(res.value[0, t, n.id]) for n in net.nodes}
        wrong = next((n.name for n in net.nodes if values.get(n.name) is not None
                      and values[n.name] != ref[n.name]), None)
        out.append(Comparison([ref[net.nodes[i].name] for i in net.inputs],
                              [values[net.nodes[o].name] for o in net.outputs],
                              [ref[net.nodes[o].name] for o in net.outputs],
                              None if wrong is None else f"step {t}: {wrong} engine "
                              f"{values[wrong]} reference {ref[wrong]}"))
    return out
