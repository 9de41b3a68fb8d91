"""A real Ray cluster on this machine: a head and two worker nodes, each started with
`ray start` by the test (a process tree of its own, with its own resources: one CPU and a
resource naming it), joined by address as a remote cluster is, the project's code shipped
to them as a job's working directory. Tiles stream over actors on both nodes and every
output is exact; then an engine is killed mid-run, and then a worker node leaves mid-run:
no inference is lost, wrong or counted twice.

engine/localcluster.py starts and stops the cluster (token authentication off, a
temporary directory and free ports of its own, ended by ending its `ray start` processes):
nothing else on the machine is touched.
"""
import os
import signal

import numpy as np
import pytest

from conftest import ROOT
from dsl import load
from dsl.reference import evaluate
from engine.localcluster import local_cluster, stop_node, wait_nodes
from test_stream import _game_processes


@pytest.fixture
def cluster_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    # the nodes' temporary files (the actors' and their engines' directories) where the
    # test can see what is left of them
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    with local_cluster(nodes=2, cpus=1, logs=str(tmp_path)) as c:
        yield c


def _two_tiles(tmp_path):
    from mapgen.compile import write_wad
    from mapgen.tiles import compile_tiles, plan_tiles

    net = load(os.path.join(ROOT, "circuits", "mlp3.dnet"))
    tiles = plan_tiles(net, n_tiles=2)
    maps = compile_tiles(tiles, "mlp3")
    wad = str(tmp_path / "mlp3.wad")
    write_wad(wad, maps, net, tiles)
    return net, tiles, [m.manifest for m in maps], wad


def test_ray_cluster_streams_exact_through_a_killed_engine_and_a_lost_node(
        tmp_path, cluster_env, monkeypatch):
    import engine.tiled as T
    from engine.cluster import cluster, run_ray

    address, nodes = cluster_env
    net, tiles, infos, wad = _two_tiles(tmp_path)
    want = {}

    def inputs(n, seed):
        X = np.random.default_rng(seed).integers(0, 4, size=(n, 4)).tolist()
        want[seed] = evaluate(net, X).last_outputs().tolist()
        return X

    monkeypatch.setattr(T, "START_GRACE", 10.0)   # a replacement with no CPU left: 10 s
    with cluster(address) as ray:
        node_of = wait_nodes(ray, 2)

        # 1. both tiles streamed, one actor on each worker node (each stage waits for its
        # own engine however long a loaded machine takes to start it, instead of the other
        # stage's engine taking its chunks after START_GRACE)
        seen = []
        X = inputs(16, 1)
        got, _ = run_ray(ray, wad, infos, tiles, net, X, 2, chunk=2, start_grace=600.0,
                         watch=lambda e, w, t: seen.append((e, w.node, t)))
        assert got == want[1]
        assert {node_of[n] for e, n, _ in seen if e == "ready"} == {0, 1}

        # 2. the game process of the second stage's engine killed while it has a chunk
        events, killed = [], []

        def kill_engine(event, w, task):  # once the second stage's engine has a chunk
            events.append((event, task))
            if event == "submit" and task[1] == 1 and not killed:
                killed.append(_game_processes(w.pid)[0])
                os.kill(killed[0], signal.SIGKILL)

        X = inputs(16, 2)
        got, _ = run_ray(ray, wad, infos, tiles, net, X, 2, chunk=2, watch=kill_engine)
        assert got == want[2]
        assert killed and any(e == "failed" and t[1] == 1 for e, t in events if t)
        done = [t for e, t in events if e == "done"]
        assert sorted(set(done)) == sorted((c, s) for c in range(8) for s in (0, 1))

        # 3. the worker node of the second stage leaves mid-run: its chunk runs again on
        # the node that is left, whose engine then serves both tiles
        events, dropped = [], []

        def drop_node(event, w, task):  # while the second stage's engine has a chunk
            events.append((event, task))
            if event == "submit" and task[1] == 1 and not dropped:
                dropped.append(w.node)
                stop_node(nodes[node_of[w.node]])

        X = inputs(16, 3)
        got, _ = run_ray(ray, wad, infos, tiles, net, X, 2, chunk=2, watch=drop_node)
        assert got == want[3]
        assert any(e == "failed" for e, _ in events)
        assert dropped and not [nd for nd in ray.nodes()
                                if nd["Alive"] and nd["NodeID"] == dropped[0]]
        # the actors killed (the engine's, the lost node's) left their directories; the
        # run removed them at its end
        assert [d for d in os.listdir(tmp_path / "tmp") if d.startswith("voodoonet-")] == []
