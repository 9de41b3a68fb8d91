"""The trained transformer (circuits/transformer.dnet) in ViZDoom: 100 held-out sequences,
every output and every intermediate light read back and compared with the reference (==),
compiled with staircases split into sub-lanes of one door (the bench's configuration)."""
import os

import pytest

from conftest import ROOT
from dsl import load
from dsl.lower import lower_products
from engine.runner import MapRunner, compare, reference_labels
from mapgen.compile import compile_netlist, write_wad
from models.seqtask import held_out

N = 100
CHUNKS = 4


@pytest.fixture(scope="module")
def trained():
    net = load(os.path.join(ROOT, "circuits", "transformer.dnet"))
    x, y = held_out(N)
    return net, x.reshape(N, -1).tolist(), y.tolist()


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_trained_transformer_exact_in_engine(tmp_path, trained, chunk):
    net, xs, ys = trained
    cm = compile_netlist(net, door_budget=1)
    assert len(cm.schedule.phases) == 6   # inputs + the five levels of the layer
    assert sum(ph.copy_tics + ph.run_tics for ph in cm.schedule.phases[1:]) <= 40
    path = os.path.join(str(tmp_path), "transformer.wad")
    write_wad(path, [cm], net)
    low = lower_products(net)
    part = range(chunk * N // CHUNKS, (chunk + 1) * N // CHUNKS)
    right = 0
    with MapRunner(path, cm.manifest) as runner:
        for k in part:
            c = compare(runner, net, low, xs[k], debug=True)
            assert c.exact, f"sequence {xs[k]}: {c.first_divergence or (c.engine, c.reference)}"
            right += c.engine.index(max(c.engine)) == ys[k]
        # The debug read-back covers every node of the lowered netlist (not a subset).
        assert set(runner.read_all()) == set(reference_labels(net, low, xs[part[0]]))
    assert right >= 0.95 * len(part)


@pytest.mark.parametrize("budget", [1, 3])
def test_split_lanes_exact_in_engine(tmp_path, budget):
    """Sub-lanes in ViZDoom on other netlists too: hand-built softmax and RMSNorm and random
    networks with long, far-apart staircases; every light read back; same WAD twice."""
    from dsl.random_net import mlp
    from test_engine_maps import edge_and_random_inputs, wide_net

    nets = [load(os.path.join(ROOT, "circuits", f)) for f in ("softmax.dnet", "rmsnorm.dnet")]
    nets += [wide_net(budget), mlp(budget, [3, 5, 2], in_range=(0, 15), weight=5,
                                   gates=("relu", "lut"))]
    for k, net in enumerate(nets):
        cm = compile_netlist(net, door_budget=budget)
        assert max(len(ln.doors) for ln in cm.circuit.lanes
                   if ln.source[0] in ("light", "input")) <= budget
        path = os.path.join(str(tmp_path), f"n{k}.wad")
        write_wad(path, [cm], net)
        again = os.path.join(str(tmp_path), "again.wad")
        write_wad(again, [compile_netlist(net, door_budget=budget)], net)
        with open(path, "rb") as a, open(again, "rb") as b:
            assert a.read() == b.read()
        low = lower_products(net)
        with MapRunner(path, cm.manifest) as runner:
            for x in edge_and_random_inputs(net, 2, k):
                c = compare(runner, net, low, x, debug=True)
                assert c.exact, f"{net.name} {x}: {c.first_divergence or (c.engine, c.reference)}"


@pytest.mark.parametrize("norm,mlp,attn", [("rms", 3, 0), ("layer", 2, 4)])
def test_norms_and_mlp_exact_in_engine(tmp_path, norm, mlp, attn):
    """RMSNorm, LayerNorm (centring, squares, reciprocal square root, products, folded gain
    and bias), the ReLU MLP and the requantised attention output, in the map."""
    import torch

    from interop import from_torch
    from models.transformer import Transformer, TransformerConfig, flat_inputs

    cfg = TransformerConfig(tokens=3, d_model=4, heads=1, in_hi=7, classes=3, norm=norm,
                            mlp=mlp, attn_max=attn, qk=3, s_qkv=8)
    model = Transformer(cfg, seed=4)
    gen = torch.Generator().manual_seed(5)
    model.calibrate(torch.randint(0, 8, (64, 3, 1), generator=gen))
    net = from_torch(model, name=f"tf_{norm}")
    cm = compile_netlist(net, door_budget=2)
    path = os.path.join(str(tmp_path), "t.wad")
    write_wad(path, [cm], net)
    low = lower_products(net)
    x = torch.randint(0, 8, (6, 3, 1), generator=gen)
    want = model(x, mode="int").tolist()
    with MapRunner(path, cm.manifest) as runner:
        for xs, w in zip(flat_inputs(x).tolist(), want):
            c = compare(runner, net, low, xs, debug=True)
            assert c.exact and c.engine == w, c.first_divergence or (c.engine, c.reference, w)
