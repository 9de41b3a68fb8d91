"""Tic-tac-toe: O never loses (every reachable position, in the exact reference), the
network is the rules, and two full games in the engine equal the reference at every move."""
import pytest

from dsl.graph import Graph
from dsl.reference import evaluate
from mapgen.compile import write_wad
from demos.tictactoe import (PAD_OFF, PAD_ON, TicTacToeDriver, build, play_game, table_size,
                             ui_violations)
from demos.tictactoe_policy import (all_positions, full, policy_graph, positions_to_answer,
                                    rule_reply, winner)


@pytest.fixture(scope="module")
def net():
    return policy_graph().build()


def replies(net, positions) -> list[int]:
    """O's cell (or -1) for each (x, o), from the reference."""
    if not positions:
        return []
    k = [net.nodes[o].name for o in net.outputs].index("move")
    out = evaluate(net, [list(x) + list(o) for x, o in positions]).last_outputs()
    return [int(v) - 1 for v in out[:, k]]


def test_o_never_loses_from_any_reachable_position(net):
    """Every game X can play against the network: X tries every free cell at every turn,
    O answers by the network's reference evaluation. No X win, every reply legal."""
    frontier, answered, finished = {((0,) * 9, (0,) * 9)}, 0, {"O": 0, "draw": 0}
    while frontier:
        to_answer = []
        for x, o in frontier:
            for m in range(9):
                if x[m] or o[m]:
                    continue
                x2 = x[:m] + (1,) + x[m + 1:]
                assert winner(x2, o) != "X", f"X wins with {x2} against O {o}"
                if full(x2, o):
                    finished["draw"] += 1
                else:
                    to_answer.append((x2, o))
        to_answer = sorted(set(to_answer))
        answered += len(to_answer)
        frontier = set()
        for (x, o), r in zip(to_answer, replies(net, to_answer)):
            assert 0 <= r < 9 and not x[r] and not o[r], (x, o, r)
            o2 = o[:r] + (1,) + o[r + 1:]
            if winner(x, o2) == "O":
                finished["O"] += 1
            elif full(x, o2):
                finished["draw"] += 1
            else:
                frontier.add((x, o2))
    assert answered == len(positions_to_answer()) == 292
    assert finished["O"] > 0 and finished["draw"] > 0


def test_the_network_is_the_rules_on_every_legal_position(net):
    positions = all_positions()
    assert len(positions) == 2097
    assert replies(net, positions) == [rule_reply(x, o) for x, o in positions]


def test_result_outputs(net):
    names = [net.nodes[o].name for o in net.outputs]
    cases = [((1, 1, 0, 0, 0, 0, 0, 0, 1), (0, 0, 0, 1, 1, 0, 0, 0, 0), 6, 1, 0),  # O wins at 5
             ((1, 0, 1, 1, 0, 0, 0, 1, 1), (0, 1, 0, 0, 1, 1, 1, 0, 0), 0, 0, 1),  # full: draw
             ((1, 0, 0, 0, 0, 0, 0, 0, 0), (0,) * 9, 5, 0, 0)]                     # centre
    out = evaluate(net, [list(x) + list(o) for x, o, *_ in cases]).last_outputs().tolist()
    for (x, o, move, owin, draw), row in zip(cases, out):
        got = dict(zip(names, row))
        assert (got["move"], got["owin"], got["draw"]) == (move, owin, draw)
        assert [got[f"onext[{i}]"] for i in range(9)] == [
            o[i] + int(i == move - 1) for i in range(9)]


def test_lookup_table_size_is_what_a_built_table_has():
    positions = all_positions()[:40]
    g = Graph("table")
    x, o = g.inputs("x", 9, 0, 1), g.inputs("o", 9, 0, 1)
    outs = [0] * 9
    for px, po in positions:
        r = rule_reply(px, po)
        outs[r] = outs[r] + g.equals(x + o, list(px) + list(po))
    g.output(outs, "reply")
    table = g.build()
    from mapgen.circuit import lower
    assert table_size(positions) == (len(table.nodes), table.n_connections,
                                     len(lower(table).lanes))


@pytest.fixture(scope="module")
def game_map(tmp_path_factory):
    t = build()
    path = str(tmp_path_factory.mktemp("ttt") / "tictactoe.wad")
    write_wad(path, [t.compiled])
    with TicTacToeDriver(path, t.compiled.manifest) as d:
        yield t, d


def test_map_budget(game_map):
    t, _ = game_map
    assert t.compiled.manifest["inference_tics"] <= 70
    controls = t.compiled.acs.split("// The visitor's controls.")[1]
    assert ui_violations(controls, t.pad_tags, t.onext_tags) == []
    assert ui_violations(f"user1 = GetSectorLightLevel({t.display_tags[0]});",
                         t.pad_tags, t.onext_tags) != []
    assert ui_violations(f"inputs[9] = GetSectorLightLevel({t.onext_tags[0]}) + 1;",
                         t.pad_tags, t.onext_tags) != []


def test_a_visitor_walks_onto_a_pad(game_map):
    """The real player, walking forward from between MOVE and the board, steps on pad 7
    (the bottom middle cell) and places an X there, and only there."""
    t, d = game_map
    d.new_game()
    d.warp("approach")
    for _ in range(14):
        d.engine.advance(1, [1.0, 0.0])      # MOVE_FORWARD, facing north
    d.engine.advance(10, [0.0, 0.0])
    assert d.pads() == [PAD_ON if i == 7 else PAD_OFF for i in range(9)]
    d.new_game()
    assert d.pads() == [PAD_OFF] * 9


@pytest.mark.parametrize("games", ["0", "1001", "99999999"])
def test_bad_game_count_is_a_message(tmp_path, games):
    """--games is bounded (issue 25 item 17: 99,999,999 ran until killed), checked before
    the map is built."""
    import os
    import subprocess
    import sys

    from conftest import ROOT
    r = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "tictactoe", "--games",
                        games, "-o", str(tmp_path / "t.wad")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and r.stderr == f"--games {games}: choose 1..1000 games\n", r.stderr
    assert not (tmp_path / "t.wad").exists()


@pytest.mark.parametrize("strategy,seed", [("trap", 0), ("greedy", 3)])
def test_full_games_in_engine(game_map, strategy, seed):
    t, d = game_map
    g = play_game(d, t.net, strategy, seed)
    assert g.exact == g.replies >= 3
    assert g.result in ("O wins", "draw")
    assert d.pads() == [PAD_ON if v else PAD_OFF for v in g.x]   # the pads show X's marks


def test_the_map_is_deterministic(tmp_path):
    a, b = tmp_path / "a.wad", tmp_path / "b.wad"
    for path in (a, b):
        t = build()
        write_wad(str(path), [t.compiled], t.net)
    assert a.read_bytes() == b.read_bytes()


def test_checked_in_netlist_is_the_graphs_dnet():
    """circuits/tictactoe.dnet is what to_dnet() writes (regenerate it with
    `python -c "from demos.tictactoe_policy import policy_graph; print(policy_graph().to_dnet(), end='')" > circuits/tictactoe.dnet`)."""
    import os

    from conftest import ROOT
    with open(os.path.join(ROOT, "circuits", "tictactoe.dnet")) as f:
        assert f.read() == policy_graph().to_dnet()
