"""The PyTorch importer (interop/torch_import.py) against real torch models.

The reference outputs of every imported netlist are compared, exactly, with torch's own
forward pass in float64 (exact for these integer magnitudes) followed by the integer
requantisation floor(y / s) and clamp to 0..L after each ReLU.
"""
import numpy as np
import pytest

import torch  # a pinned requirement: its absence must fail, not skip
from torch import nn  # noqa: E402

from interop import from_torch  # noqa: E402
from dsl.diagnostics import VoodooError  # noqa: E402
from dsl.ir import Identity, Relu  # noqa: E402
from dsl.parser import parse_file  # noqa: E402
from dsl.reference import evaluate  # noqa: E402
from interop.torch_import import to_dnet  # noqa: E402


def integer_model(sizes, seed, wmax=7, bmax=20, dtype=torch.float64, relu_last=False):
    gen = torch.Generator().manual_seed(seed)
    layers = []
    for k, (a, b) in enumerate(zip(sizes, sizes[1:])):
        lin = nn.Linear(a, b).to(dtype)
        with torch.no_grad():
            lin.weight.copy_(torch.randint(-wmax, wmax + 1, (b, a), generator=gen).to(dtype))
            lin.bias.copy_(torch.randint(-bmax, bmax + 1, (b,), generator=gen).to(dtype))
        layers.append(lin)
        if k < len(sizes) - 2 or relu_last:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def torch_integer_forward(model, x, scales, clamps):
    """torch's forward pass, with the integer requant and clamp after every ReLU."""
    y = torch.as_tensor(x, dtype=torch.float64)
    k = 0
    with torch.no_grad():
        for m in model:
            if isinstance(m, nn.ReLU):
                y = torch.floor(y / scales[k]).clamp(min=0)
                if clamps[k] is not None:
                    y = y.clamp(max=clamps[k])
                k += 1
            else:
                dtype = next(m.parameters(), y).dtype  # pools have no parameters
                y = m(y.to(dtype)).to(torch.float64)
    assert torch.equal(y, torch.round(y))
    return y.numpy().astype(np.int64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_imported_mlp_equals_torch(seed):
    model = integer_model([9, 7, 5, 4], seed)
    scales, clamps = [3, 2], [7, None]
    net = from_torch(model, input_range=(-2, 3), scales=scales, clamps=clamps, name="t")
    hidden = [net.nodes[i].gate for i in net.groups["h1"]] + \
             [net.nodes[i].gate for i in net.groups["h2"]]
    assert all(isinstance(g, Relu) for g in hidden)
    assert all(isinstance(net.nodes[i].gate, Identity) for i in net.outputs)
    x = np.random.default_rng(seed).integers(-2, 4, (300, 9))
    ours = evaluate(net, x).last_outputs().astype(np.int64)
    theirs = torch_integer_forward(model, x, scales, clamps)
    assert ours.shape == (300, 4)
    assert np.array_equal(ours, theirs)
    # The clamp and the divisor matter on these inputs: without them the outputs differ.
    assert not np.array_equal(ours, torch_integer_forward(model, x, [1, 1], [None, None]))


def test_float32_integer_weights_and_a_leading_flatten():
    model = integer_model([12, 6, 3], 5, dtype=torch.float32)
    model = nn.Sequential(nn.Flatten(), *model)
    net = from_torch(model, (0, 3), scales=4, clamps=5)
    x = np.random.default_rng(5).integers(0, 4, (100, 12))
    assert np.array_equal(evaluate(net, x).last_outputs().astype(np.int64),
                          torch_integer_forward(model[1:], x, [4], [5]))


def test_text_round_trip(tmp_path):
    model = integer_model([4, 3, 2], 7)
    text = to_dnet(model, (0, 1), [2], [3], "rt", comment="made by a test\nsecond line")
    assert text.startswith("# made by a test\n# second line\nnetwork rt\n")
    path = tmp_path / "rt.dnet"
    path.write_text(text)
    a = parse_file(str(path))
    b = from_torch(model, (0, 1), [2], [3], "rt")
    x = [[i >> k & 1 for k in range(4)] for i in range(16)]
    assert np.array_equal(evaluate(a, x).last_outputs(), evaluate(b, x).last_outputs())


def test_float_weights_are_rejected():
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 2))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.5, 6.0]]))
        model[0].bias.zero_()
        model[2].weight.fill_(1.0)
        model[2].bias.zero_()
    with pytest.raises(VoodooError) as e:
        from_torch(model, (0, 3))
    text = str(e.value)
    assert "layer 0 (Linear 3->2) weight is not integer" in text
    assert "weight[1, 1] = 0.5" in text and "quantise" in text
    with torch.no_grad():
        model[0].weight.round_()
        model[2].bias.fill_(0.25)
    with pytest.raises(VoodooError, match=r"layer 2 \(Linear 2->2\) bias is not integer"):
        from_torch(model, (0, 3))
    with torch.no_grad():
        model[2].bias.fill_(float("nan"))
    with pytest.raises(VoodooError, match="NaN"):
        from_torch(model, (0, 3))


@pytest.mark.parametrize("layer, name", [(nn.Dropout(0.1), "Dropout"),
                                         (nn.Conv1d(1, 1, 1), "Conv1d"),
                                         (nn.Sigmoid(), "Sigmoid"),
                                         (nn.BatchNorm1d(3), "BatchNorm1d")])
def test_unsupported_layers_are_rejected(layer, name):
    model = nn.Sequential(nn.Linear(3, 3), layer, nn.Linear(3, 2))
    with pytest.raises(VoodooError) as e:
        from_torch(model)
    assert f"layer 1 ({name}) is not supported" in str(e.value)


def test_other_mistakes():
    lin = integer_model([3, 2], 0)
    with pytest.raises(VoodooError, match="expected an nn.Sequential"):
        from_torch(lin[0])
    with pytest.raises(VoodooError, match=r"layer 0 \(ReLU\) does not follow a Linear"):
        from_torch(nn.Sequential(nn.ReLU(), *lin))
    with pytest.raises(VoodooError, match="no Linear layer"):
        from_torch(nn.Sequential())
    two = integer_model([3, 3, 3, 2], 0)
    with pytest.raises(VoodooError, match="scales has 1 entries but the model has 2 ReLU"):
        from_torch(two, scales=[2])
    with pytest.raises(VoodooError, match="must be >= 1"):
        from_torch(two, scales=[2, 0])
    with pytest.raises(VoodooError, match="input_range"):
        from_torch(two, input_range=(3, 1))
    bad = nn.Sequential(nn.Linear(3, 4), nn.Linear(5, 2))
    with torch.no_grad():
        for p in bad.parameters():
            p.zero_()
    with pytest.raises(VoodooError, match="takes 5 inputs but the layer before it gives 4"):
        from_torch(bad)
    big = integer_model([3, 2], 0)
    with torch.no_grad():
        big[0].weight[1, 2] = 40000
    with pytest.raises(VoodooError, match=r"weight\[1, 2\] = 40000 is out of range"):
        from_torch(big)


def test_identity_hidden_layer_and_relu_outputs():
    """A Linear without a ReLU is an identity layer; a final ReLU gates the outputs."""
    model = integer_model([5, 4, 3], 3, relu_last=True)
    model = nn.Sequential(model[0], *integer_model([4, 4], 9), model[1], model[2], model[3])
    # [Linear 5->4, Linear 4->4, ReLU, Linear 4->3, ReLU]
    net = from_torch(model, (0, 2), scales=[2, 3], clamps=[4, 6])
    assert isinstance(net.nodes[net.groups["h1"][0]].gate, Identity)
    assert isinstance(net.nodes[net.outputs[0]].gate, Relu)
    x = np.random.default_rng(3).integers(0, 3, (200, 5))
    assert np.array_equal(evaluate(net, x).last_outputs().astype(np.int64),
                          torch_integer_forward(model, x, [2, 3], [4, 6]))


def integer_cnn(seed, dtype=torch.float64):
    """Conv -> ReLU -> sum pool -> Conv -> ReLU -> MaxPool -> Flatten -> Linear, integer."""
    gen = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, stride=2, padding=1), nn.ReLU(),
                          nn.AvgPool2d(2, stride=1, divisor_override=1),
                          nn.Conv2d(3, 4, (2, 3), padding=(0, 1)), nn.ReLU(),
                          nn.MaxPool2d(2, padding=1), nn.Flatten(), nn.Linear(4 * 1 * 2, 5))
    model = model.to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randint(-5, 6, p.shape, generator=gen).to(dtype))
    return model


@pytest.mark.parametrize("seed", [0, 1])
def test_imported_cnn_equals_torch(seed):
    """Conv2d, AvgPool2d (a sum), MaxPool2d, Flatten, Linear and ReLU: the netlist's
    outputs equal torch's forward pass with the integer requant after each ReLU."""
    model = integer_cnn(seed)
    scales, clamps = [3, 4], [7, 9]
    net = from_torch(model, (0, 3), scales, clamps, "cnn", input_shape=(2, 6, 6))
    assert [r.conv.kind for r in net.convs] == ["conv", "avgpool", "conv"]
    x = np.random.default_rng(seed).integers(0, 4, (300, 72))
    ours = evaluate(net, x).last_outputs().astype(np.int64)
    theirs = torch_integer_forward(model, x.reshape(-1, 2, 6, 6), scales, clamps)
    assert ours.shape == (300, 5)
    assert np.array_equal(ours, theirs)


def test_cnn_import_mistakes():
    model = integer_cnn(0)
    with pytest.raises(VoodooError, match=r"layer 0 \(Conv2d\) reads an image(.|\n)*input_shape"):
        from_torch(model, (0, 3), [3, 4])
    with pytest.raises(VoodooError, match="takes 2 channels but the layer before it gives 1"):
        from_torch(model, (0, 3), [3, 4], input_shape=(1, 6, 6))
    plain = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                          nn.Linear(2, 2))
    with torch.no_grad():
        for p in plain.parameters():
            p.fill_(1.0)
    with pytest.raises(VoodooError, match=r"layer 2 \(AvgPool2d\) divides by its window"):
        from_torch(plain, (0, 1), 2, input_shape=(1, 4, 4))
    late = nn.Sequential(nn.Linear(4, 4), nn.Conv2d(1, 1, 1))
    with torch.no_grad():
        for p in late.parameters():
            p.fill_(1.0)
    with pytest.raises(VoodooError, match="reads an image but the layer before it gives a flat"):
        from_torch(late, (0, 1))
    relu_after_max = nn.Sequential(nn.Conv2d(1, 1, 1), nn.MaxPool2d(2), nn.ReLU())
    with pytest.raises(VoodooError, match=r"layer 2 \(ReLU\) does not follow"):
        from_torch(relu_after_max, (0, 1), input_shape=(1, 4, 4))
    dil = nn.Sequential(nn.Conv2d(1, 1, 3, dilation=2))
    with pytest.raises(VoodooError, match="dilation"):
        from_torch(dil, (0, 1), input_shape=(1, 8, 8))
