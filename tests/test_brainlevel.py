"""The brain level (issue 11): the argmax head, the observation, the glue's rules, and the
map itself in ViZDoom: a seeded paused episode with every decision exact and the demons
provably frozen while the dolls think, demons moving in live mode, the Gymnasium
environment (checker, and the same observations as the map for the same states)."""
from __future__ import annotations

import numpy as np
import pytest

from demos.brainlevel import arena, policy, spec


# -- pure Python -------------------------------------------------------------------------------
def _int_linear(rng, n_in, n_out, wmax):
    import torch

    m = torch.nn.Sequential(torch.nn.Linear(n_in, n_out)).to(torch.float64)
    with torch.no_grad():
        m[0].weight.copy_(torch.from_numpy(
            rng.integers(-wmax, wmax + 1, (n_out, n_in)).astype(float)))
        m[0].bias.copy_(torch.from_numpy(rng.integers(-1, 2, n_out).astype(float)))
    return m


@pytest.mark.parametrize("seed", range(4))
def test_argmax_head_is_the_first_argmax(seed):
    """win is the one-hot of the first maximal logit, ties included (small weights on
    binary inputs make many ties), against NumPy's argmax of the reference logits."""
    from dsl.parser import parse
    from dsl.reference import evaluate
    from interop.torch_import import to_dnet

    rng = np.random.default_rng(seed)
    text = to_dnet(_int_linear(rng, 6, 5, 1), (0, 1), name="t")
    logits_net = parse(text, "<t>")
    net = parse(policy.argmax_head(text, "o", 5), "<t+head>")
    x = rng.integers(0, 2, (300, 6))
    logits = evaluate(logits_net, x).last_outputs()
    want = logits.argmax(1)          # NumPy's argmax: the first maximum
    assert (policy.decide_many(net, x) == want).all()
    ties = sum((row == row.max()).sum() > 1 for row in logits)
    assert ties > 10                 # the test exercises tie-breaking


def test_encode_buckets():
    raw = spec.Raw(((1, 100, 0, 20), (0, 0, 0, 0), (3, -700, 10, 30), (2, 0, -900, 60)),
                   health=77, ammo=33)
    obs = spec.encode(raw).reshape(spec.TOKENS, spec.FEATURES).tolist()
    assert obs[0] == [1, 0, 0, 0, 1]           # zombieman, near, east, 20 hp
    assert obs[1] == [0, 0, 0, 0, 0]           # empty slot
    assert obs[2] == [1, 2, 2, 2, 1]           # shotgun guy, 700 away, west
    assert obs[3] == [1, 1, 3, 3, 3]           # imp, 900 away, south
    assert obs[4] == [1, 2, 3, 0, 0]           # marine: 77 // 26, 33 // 10
    assert spec.expert(spec.encode(raw)) == 0  # the nearest first


def test_episodes_are_seeded_and_packable():
    a, b = spec.episode(3), spec.episode(3)
    assert a == b and a != spec.episode(4)
    packed = spec.pack_episode(a)
    unpacked = [(packed[i // 4] >> (6 * (i % 4))) & 63 for i in range(spec.DEMONS)]
    assert unpacked == [d.kind * 16 + d.spot for d in a]


def test_glue_reads_only_the_one_hot():
    glue = arena.glue_source([1, 2, 3, 4, 5], spec.OBS_SIZE)
    assert arena.glue_violations(glue) == []
    assert arena.glue_violations("x = GetSectorLightLevel(7);")
    assert arena.glue_violations("if (user2 > user3) return 1;")
    assert arena.glue_violations("a = user1 + 1;")


@pytest.mark.parametrize("kind", ["transformer", "mlp"])
def test_checked_in_policy(kind):
    pol = policy.load(kind)
    assert [pol.net.nodes[o].name for o in pol.net.outputs] == [f"win[{k}]" for k in range(5)]
    assert pol.float_agreement > 0.95 and pol.int_agreement > 0.85
    rng = np.random.default_rng(7)
    x = spec.random_obs(rng, 400)
    agree = (policy.decide_many(pol.net, x) == [spec.expert(o) for o in x]).mean()
    assert abs(agree - pol.int_agreement) < 0.05


def test_default_policy_is_the_transformer_in_eight_levels():
    """The default policy is the transformer: attention with the integer softmax (4 heads),
    an RMSNorm and the MLP in a parallel block (they read the block's input h0, beside the
    attention), the head and the argmax. In the map: 8 dependency levels, each phase of
    one-door sub-lanes (input lanes too), and the compare neurons' planes move in 1 tic."""
    from mapgen.circuit import lower

    pol = policy.load()
    assert pol.kind == policy.POLICY == "transformer"
    names = {n.name.split("[")[0] for n in pol.net.nodes}
    assert {f"lam0_{g}_4" for g in range(4)} | {"logits", "win", "rhom0_4", "f0_4"} <= names
    net = pol.net

    def sources(prefix):
        nodes = [n for n in net.nodes if n.name.startswith(prefix)]
        assert nodes, prefix
        return {net.nodes[k].name.split("[")[0] for n in nodes for k in n.weights}

    # the MLP reads the norm y = u * rho of the block's input h0_4, nothing of the attention
    assert sources("f0_4[") == {"ym0_4"}
    assert sources("um0_4_r[") == {"h0_4"}
    c = lower(net, door_budget=policy.DOOR_BUDGET["transformer"])
    assert c.n_phases == 8
    assert all(len(ln.doors) <= 1 for ln in c.lanes)


# -- in the engine ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def brainwad(tmp_path_factory):
    from demos.brainlevel.demo import build_wad

    pol = policy.load()
    path = str(tmp_path_factory.mktemp("brain") / "brainlevel.wad")
    bm = build_wad(path, pol)
    return path, bm.compiled.manifest, pol.net


def test_paused_episode_exact_and_frozen(brainwad):
    from demos.brainlevel.episode import BrainRunner

    path, info, net = brainwad
    with BrainRunner(path, info) as r:
        res = r.episode(2, "paused", net=net)
    done = [d for d in res.decisions if d.done]
    assert len(done) >= 5
    assert res.exact == len(done)
    assert res.encoding_errors == 0
    for d in done:
        assert d.obs == spec.encode(d.raw).tolist()
        # frozen: between the observation and the action no demon moved, nobody was hurt
        assert (d.moved, d.hurt) == (0, 0), d
        assert d.think <= 70
        assert d.shots <= 1, d      # no burst held while frozen (at most the action's own)
    assert res.kills >= 1


def test_live_demons_move_while_the_dolls_think(brainwad):
    from demos.brainlevel.episode import BrainRunner

    path, info, net = brainwad
    with BrainRunner(path, info) as r:
        res = r.episode(0, "live", net=net)
    done = [d for d in res.decisions if d.done]
    assert done and res.exact == len(done)
    assert sum(d.moved > 0 for d in done) >= len(done) // 2
    # the action holds: a burst whose target outlived it goes on while the dolls think
    # (paused: at most the action's own first bullet, see test_paused_episode_exact...)
    assert max(d.shots for d in done) >= 2


def test_env_checker(brainwad):
    """gymnasium's checker, on the registered id (so it also renders an rgb_array env),
    with every warning an error."""
    import warnings

    import gymnasium
    from gymnasium.utils.env_checker import check_env

    import demos.brainlevel.env  # noqa: F401  (registers the id)

    env = gymnasium.make("VoodooNet/BrainLevel-v0", wad=brainwad[0])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
    finally:
        env.close()


def test_env_registered():
    import gymnasium

    import demos.brainlevel.env  # noqa: F401  (registers the id)

    assert "VoodooNet/BrainLevel-v0" in gymnasium.registry


def test_env_sees_what_the_map_sees(brainwad):
    """Same seed, same integer policy: the environment (Python encoding of the state read
    back) and the map in paused mode (its own encoding, written into the circuit's inputs)
    go through the same states with the same observations, decision by decision."""
    from demos.brainlevel.env import BrainLevelEnv
    from demos.brainlevel.episode import BrainRunner

    path, info, net = brainwad
    with BrainRunner(path, info) as r:
        res = r.episode(5, "paused", net=net)
    mapped = [d.obs for d in res.decisions if d.done]
    env = BrainLevelEnv(wad=path)
    try:
        obs, info_ = env.reset(seed=5)
        seen = []
        for _ in range(len(mapped)):
            seen.append(obs.tolist())
            assert info_["map_obs"] == obs.tolist()
            obs, _, terminated, _, info_ = env.step(policy.decide(net, obs))
            if terminated:
                break
    finally:
        env.close()
    assert len(seen) >= 5
    assert seen == mapped[:len(seen)]


@pytest.mark.parametrize("bad, says", [(["--episodes", "0"], "--episodes 0"),
                                       (["--first-seed", "-1"], "--first-seed -1"),
                                       (["--gif", "/no/such/dir/x.gif"], "--gif"),
                                       (["--live", "--paused"], "--live and --paused")])
def test_cli_rejects_bad_options(tmp_path, bad, says):
    import subprocess
    import sys

    from conftest import ROOT

    r = subprocess.run([sys.executable, f"{ROOT}/build.py", "brainlevel", *bad,
                        "-o", str(tmp_path / "b.wad")], capture_output=True, text=True)
    assert r.returncode != 0 and says in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "b.wad").exists()


def test_the_map_plays_by_itself(brainwad):
    """Nobody starts an episode: after 3 s the map plays baked seed 0 in paused mode, and
    its first decision is the reference's."""
    from demos.brainlevel.episode import BrainRunner

    path, info, net = brainwad
    u = arena.USERS
    with BrainRunner(path, info) as r:
        r.engine.game.set_seed(1)
        r.engine.game.new_episode()
        assert r._advance(100)
        assert r.engine.user(u["seq"]) == 0          # waiting for a runner
        for _ in range(300):  # until the first decision is carried out, tic by tic
            assert r._advance(1)
            vals = r.engine.users()
            if vals[u["seq"] - 1] and vals[u["action"] - 1]:
                break
    assert vals[u["seq"] - 1] == 1
    obs = vals[u["obs"] - 1:u["obs"] - 1 + spec.OBS_SIZE]
    assert vals[u["action"] - 1] == 8 * 1 + policy.decide(net, obs) + 1
    raw = spec.Raw.from_users(vals[u["raw"] - 1:u["raw"] - 1 + spec.RAW_SIZE])
    assert obs == spec.encode(raw).tolist()


def test_unknown_policy_kind_is_a_clear_error():
    from dsl.diagnostics import VoodooError

    with pytest.raises(VoodooError, match="choose 'mlp' or 'transformer'"):
        policy.build("lstm")


def test_builds_are_byte_identical(tmp_path, brainwad):
    from demos.brainlevel.demo import build_wad

    again = str(tmp_path / "again.wad")
    build_wad(again, policy.load())
    assert open(again, "rb").read() == open(brainwad[0], "rb").read()


def test_mlp_policy_plays_exact(tmp_path):
    """`--policy mlp`: the checked-in MLP policy in the map, a short paused episode: every
    decision the dolls make is the integer reference's, the demons frozen meanwhile."""
    from demos.brainlevel.demo import build_wad
    from demos.brainlevel.episode import BrainRunner

    pol = policy.load("mlp")
    path = str(tmp_path / "brain_mlp.wad")
    bm = build_wad(path, pol)
    assert len(bm.compiled.circuit.lanes) < 200   # (sub-lanes: mapgen/carry.py)
    with BrainRunner(path, bm.compiled.manifest) as r:
        res = r.episode(2, "paused", net=pol.net, max_tics=1500)
    done = [d for d in res.decisions if d.done]
    assert len(done) >= 3
    assert res.exact == len(done) and res.encoding_errors == 0
    for d in done:
        assert (d.moved, d.hurt) == (0, 0), d
