"""Constructed programs in the engine: a sample of inputs for every graph and .dnet
operation, every output and every intermediate light equal to the reference."""
import itertools
import random

from test_engine_maps import edge_and_random_inputs, run_exact, run_sequences_exact
from test_graph import DNET_OPS, two_operand_graph

from dsl.graph import Graph
from dsl.parser import parse


def test_graph_operations_in_engine(tmp_path):
    g, _ = two_operand_graph()
    net = g.build()
    run_exact(tmp_path, net, edge_and_random_inputs(net, 10, 3) + [[2, 2, 1], [-3, 5, 0]])


def test_logic_and_argmax_in_engine(tmp_path):
    g = Graph("logic")
    p, q, r = g.input("p", 0, 1), g.input("q", 0, 1), g.input("r", 0, 1)
    u, v = g.input("u", 0, 2), g.input("v", -1, 1)
    for name, val in {"and": g.and_(p, q, r), "or": g.or_(p, q), "not": g.not_(q),
                      "xor": g.xor(p, q, r), "eq": g.equals([p, u, v], [1, 1, 0])}.items():
        g.output(val, name)
    g.output(g.argmax([u, v, p + q], gate=r), "hot")
    net = g.build()
    sample = random.Random(5).sample(list(itertools.product(range(2), range(2), range(2),
                                                            range(3), range(-1, 2))), 10)
    run_exact(tmp_path, net, [list(x) for x in sample] + [[1, 0, 1, 1, 0]])


def test_dnet_operations_in_engine(tmp_path):
    net = parse(DNET_OPS, "ops.dnet")
    run_exact(tmp_path, net, edge_and_random_inputs(net, 8, 7))


def test_delay_in_engine(tmp_path):
    """delay(x, 1) and delay(x, 2) over whole sequences: the latches' membranes carry the
    past from one step to the next, and a new sequence starts them afresh."""
    g = Graph("delay", steps=4)
    x = g.input("x", 0, 2)
    g.output(g.delay(x, 1), "past1")
    g.output(g.delay(x, 2), "past2")
    net = g.build()
    seqs = [[[2], [0], [1], [2]], [[1], [1], [0], [0]], [[0], [2], [2], [1]]]
    last = run_sequences_exact(tmp_path, net, seqs, "delay.wad")
    assert last == [[s[2][0], s[1][0]] for s in seqs]
