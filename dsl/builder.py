"""The netlist builder: the one place a `Netlist` is validated and made.

Every front end (the .dnet parser, the JSON loader, the PyTorch importer, generators in
tests) builds a `Netlist` through `NetBuilder`, so every check lives here once: unknown or
duplicate names, shapes, weight limits, gate parameters, cycles, missing outputs. The
builder collects every problem with its source position and raises them together, then
computes every node's range (dsl/ranges.py) before handing the netlist out.
"""
from __future__ import annotations

from .diagnostics import Collector, Pos, did_you_mean
from .ir import (GATE_NAMES, INT_LIMIT, MAX_STEPS, WEIGHT_LIMIT, Gate, Identity, Input, Lut,
                 Netlist, Node, Prev, Product, Range, Relu, Spike, Step, canonical_name,
                 element_name, prev_depth, prev_name)
from .ranges import analyse

MAX_HINTS = 50

# Too large for any map plan, told before anything is elaborated. Every input and every
# gated neuron is a lane of at least one doll in some map, and every map of a plan is in one
# WAD, whose directory addresses lumps with signed 32-bit offsets (at most 2 GiB). A lane
# costs that WAD at least MIN_LANE_WAD_BYTES (its sectors, lines and things in TEXTMAP
# alone: 6,055 bytes measured for the smallest lane, an input of 0..1;
# tests/test_map_limits.py checks the bound against the compiler).
MAX_WAD_BYTES = 2**31 - 1
MIN_LANE_WAD_BYTES = 4096

# -------------------------------------------------------------------------------- builder
class NetBuilder:
    """Builds a Netlist from declarations, collecting every problem with its position."""

    def __init__(self, source: str = "<netlist>"):
        self.source = source
        self.diag = Collector()
        self._output_set: set[int] = set()
        self._hints = 0  # did-you-mean searches so far (each costs a scan of the names)
        self.name = ""
        self.steps = 1
        self.open = False
        self._steps_pos: Pos | None = None   # where `steps` was written, if it was
        # Recurrence: init values of prev(x) by x's node id; feedback (input, node, Pos);
        # the done node.
        self.inits: dict[int, tuple[int, Pos]] = {}
        self.feedback: list[tuple[int, int, Pos]] = []
        self.done: tuple[int, Pos] | None = None
        self.macro_prev_ranges: dict[int, tuple[int, int]] = {}  # set by macros.expand
        self.nodes: list[Node] = []
        self.groups: dict[str, list[int]] = {}
        self.group_pos: dict[str, Pos] = {}
        self.scalar: dict[str, bool] = {}
        self.inputs: list[int] = []
        self.outputs: list[tuple[int, Pos]] = []
        # product node id -> (operand a, operand b, Pos, element index or None)
        self._pending_products: dict[int, tuple[object, object, Pos, int | None]] = {}
        # Operations written as gates (select, equals, ...): lowered by dsl/macros.py.
        self._pending_macros: list[tuple[int, str, list, Pos]] = []
        self._op_results: set[int] = set()  # operations' and maxpools' nodes: no lines, bias
        self._prev_refs: set[int] = set()   # prev nodes a reference named (init needs one)
        self._prev_groups: set[str] = set()  # the hidden vectors of prev(...)
        self._macro_deps: dict[int, list[int]] = {}
        self.convs: list = []  # dsl/conv.ConvLines of every conv / avgpool written

    # -- helpers --------------------------------------------------------------------------
    def error(self, pos: Pos, message: str, hint: str = "") -> None:
        self.diag.error(pos, message, hint)

    def _suggest(self, name: str) -> str:
        """A did-you-mean hint for the first MAX_HINTS unknown names: thousands of unknown
        names must not each scan every declared name."""
        if self._hints >= MAX_HINTS:
            return ""
        self._hints += 1
        return did_you_mean(name, self.groups)

    def _known(self, group: str) -> bool:
        """Is `group` declared? prev(h)'s hidden vector h.prev (and h.prev2 of prev(h.prev),
        ir.prev_name) is made here on first use, one prev node per element of the vector
        it reads (h must be declared by then): a chain of them, without recursion."""
        group = canonical_name(group)
        if group in self.groups:
            return True
        base, depth = prev_depth(group)
        if not depth or base not in self.groups:
            return False
        have = depth - 1
        while have and prev_name(base, have) not in self.groups:
            have -= 1
        for d in range(have + 1, depth + 1):
            self._prev_vector(prev_name(base, d - 1), prev_name(base, d))
        return True

    def _prev_vector(self, of: str, group: str) -> None:
        ids = []
        for k, src in enumerate(self.groups[of]):
            index = None if self.scalar[of] else k
            node = Node(len(self.nodes), element_name(group, index), group, index, Prev(src),
                        self.group_pos[of])
            self.nodes.append(node)
            ids.append(node.id)
        self.groups[group] = ids
        self._prev_groups.add(group)
        self.group_pos[group] = self.group_pos[of]
        self.scalar[group] = self.scalar[of]

    def _unknown(self, group: str, pos: Pos) -> None:
        base = prev_depth(group)[0]  # prev(q) of an unknown q names q
        self.error(pos, f"unknown name '{base}'", self._suggest(base)
                   or "declare it with 'input' or 'neuron' first")

    def _int(self, value: int, pos: Pos, what: str, limit: int = INT_LIMIT) -> int:
        if abs(value) > limit:
            self.error(pos, f"{what} {_short(value)} is out of range",
                       f"use a value within -{limit}..{limit}")
            return max(-limit, min(limit, value))
        return value

    # -- size, before elaboration -----------------------------------------------------------
    def refuse_oversized(self, lanes: int, inputs: int, pos: Pos) -> None:
        """Stop at once (raise) when the declarations alone need more lanes (`lanes`: the
        declared inputs and gated neurons, `inputs` of them inputs) than any tile plan can
        write: elaborating a million elements takes minutes and gigabytes, this a glance."""
        need = lanes * MIN_LANE_WAD_BYTES
        if need <= MAX_WAD_BYTES:
            return
        self.error(pos, f"the network declares {lanes:,} lanes ({inputs:,} inputs and "
                        f"{lanes - inputs:,} gated neurons, each a doll's lane in some map): any "
                        f"plan of maps for it needs at least {need / 2**30:.1f} GiB of WAD, "
                        f"more than a WAD holds ({MAX_WAD_BYTES / 2**30:.0f} GiB)",
                   f"at most {MAX_WAD_BYTES // MIN_LANE_WAD_BYTES:,} inputs and gated "
                   "neurons fit in any plan; use fewer or smaller vectors")
        self.diag.check()

    # -- declarations -----------------------------------------------------------------------
    def declare(self, name: str, size: int | None, gate: Gate, pos: Pos) -> list[int]:
        if name in self.groups:
            self.error(pos, f"'{name}' is already declared at {self.group_pos[name]}",
                       "give each input and neuron vector its own name")
            return []
        if size is not None and not 1 <= size <= 1_000_000:
            self.error(pos, f"vector '{name}' has size {_short(size)}",
                       "a vector holds 1..1000000 elements")
            return []
        ids = []
        for i in range(1 if size is None else size):
            index = None if size is None else i
            node = Node(len(self.nodes), element_name(name, index), name, index, gate, pos)
            self.nodes.append(node)
            ids.append(node.id)
        self.groups[name] = ids
        self.group_pos[name] = pos
        self.scalar[name] = size is None
        if isinstance(gate, Input):
            self.inputs.extend(ids)
        return ids

    def declare_input(self, name: str, size: int | None, lo: int, hi: int, pos: Pos) -> None:
        lo = self._int(lo, pos, "input bound")
        hi = self._int(hi, pos, "input bound")
        if lo > hi:
            self.error(pos, f"input range {lo}..{hi} is empty", f"write it as {hi}..{lo}")
            lo, hi = hi, lo
        self.declare(name, size, Input(lo, hi), pos)

    def declare_product(self, name: str, a, b, pos: Pos, size: int | None = None) -> list[int]:
        """a, b: operand references resolved once everything is declared: a node id, or
        (group, selector, Pos) with selector None (a scalar or a whole vector), an index, or
        ("slice", start, stop). A product vector (size N) multiplies element-wise; an
        operand of one element is used for every element (a scalar times a vector)."""
        ids = self.declare(name, size, Identity(), pos)
        for k, nid in enumerate(ids):
            self._pending_products[nid] = (a, b, pos, None if size is None else k)
        return ids

    def declare_pairs(self, name: str, pairs: list[tuple[int, int]], pos: Pos) -> list[int]:
        """A product vector whose operands are already resolved: element i = a_i * b_i."""
        ids = self.declare(name, len(pairs), Identity(), pos)
        for k, (nid, (a, b)) in enumerate(zip(ids, pairs)):
            self._pending_products[nid] = (a, b, pos, k)
        return ids

    def _width(self, spec) -> int:
        """How many elements a product operand names (1 if unknown: reported elsewhere)."""
        if isinstance(spec, int) or not self._known(spec[0]):
            return 1
        n = len(self.groups[canonical_name(spec[0])])
        if isinstance(spec[1], tuple):
            return (n if spec[1][2] is None else spec[1][2]) - (spec[1][1] or 0)
        return 1 if spec[1] is not None else n

    def _operand(self, spec, k: int | None, size: int | None, quiet: bool) -> int | None:
        """Element k of a product operand (see declare_product); errors once, at k 0."""
        if isinstance(spec, int):
            return spec
        group, sel, pos = spec
        group = canonical_name(group)
        loud = not quiet and not k
        if not self._known(group):
            if loud:
                self.resolve(group, None, pos)
            return None
        ids = self.groups[group]
        if isinstance(sel, tuple):
            lo = 0 if sel[1] is None else sel[1]
            hi = len(ids) if sel[2] is None else sel[2]
            if not 0 <= lo < hi <= len(ids):
                if loud:
                    self.resolve_vector(group, lo, hi, pos)
                return None
            ids = self._named(group, ids[lo:hi])
        elif sel is not None or k is None:
            return self.resolve_quiet(group, sel, pos) if quiet else \
                (self.resolve(group, sel, pos) if loud else self.resolve_quiet(group, sel, pos))
        if len(ids) == 1:
            return self._named(group, ids)[0]
        if k is None or len(ids) != size:
            if loud:
                self.error(pos, f"product operand '{group}' has {len(ids)} elements but the "
                                f"product has {1 if size is None else size}",
                           "operands are one element (used for every element) or a vector "
                           "of the product's size")
            return None
        return self._named(group, ids[k:k + 1])[0]

    def declare_macro(self, name: str, kind: str, args: list, pos: Pos, decl_pos: Pos) -> None:
        """An operation such as select(c, a, b); args as make_gate receives them."""
        ids = self.declare(name, None, Identity(), decl_pos)
        if ids:
            self._pending_macros.append((ids[0], kind, args, pos))
            self._op_results.add(ids[0])

    # -- convolutions and pools (dsl/conv.py) -------------------------------------------------
    def add_conv(self, conv, src: list[int], dst: list[int], pos: Pos) -> None:
        """The lines of a conv or avgpool between two resolved vectors (or slices)."""
        from .conv import ConvLines, lines_of

        for i, j, w in lines_of(conv):
            self.add_line(src[i], dst[j], w, pos)
        s, d = self.nodes[src[0]], self.nodes[dst[0]]
        self.convs.append(ConvLines(conv, s.group, s.index or 0, d.group, d.index or 0))

    def declare_maxpool(self, name: str, size: int | None, pos: Pos) -> list[int]:
        """The result vector of a maxpool; its windows come later (set_maxpool), once every
        name is declared. Like any operation's result it takes no lines and no bias."""
        ids = self.declare(name, size, Identity(), pos)
        self._op_results.update(ids)
        return ids

    def set_maxpool(self, ids: list[int], conv, src: list[int], pos: Pos) -> None:
        """Element k of `ids` becomes max(window k of src): the max operation, lowered with
        the other operations when the netlist is built."""
        from .conv import windows

        for nid, win in zip(ids, windows(conv)):
            args = [(None, (self.nodes[src[i]].group, self.nodes[src[i]].index), pos)
                    for i, _ in win]
            self._pending_macros.append((nid, "max", args, pos))

    # -- references ---------------------------------------------------------------------------
    def resolve(self, group: str, index: int | None, pos: Pos) -> int | None:
        """One node from `name` or `name[i]`."""
        group = canonical_name(group)
        if not self._known(group):
            self._unknown(group, pos)
            return None
        ids = self.groups[group]
        if index is None:
            if len(ids) != 1 or not self.scalar[group]:
                self.error(pos, f"'{group}' is a vector of {len(ids)}; this needs one element",
                           f"write {group}[0] .. {group}[{len(ids) - 1}]")
                return None
            return self._named(group, ids)[0]
        if self.scalar[group]:
            self.error(pos, f"'{group}' is a scalar and cannot be indexed", f"write {group}")
            return None
        if not 0 <= index < len(ids):
            self.error(pos, f"index {_short(index)} is out of range for '{group}' "
                            f"(size {len(ids)})", f"use 0..{len(ids) - 1}")
            return None
        return self._named(group, ids[index:index + 1])[0]

    def _named(self, group: str, ids: list[int]) -> list[int]:
        """ids, noted as read when they are prev nodes (what `init` needs)."""
        if group in self._prev_groups:
            self._prev_refs.update(ids)
        return ids

    def resolve_vector(self, group: str, start: int | None, stop: int | None, pos: Pos,
                       single: bool = False) -> list[int] | None:
        """Several nodes from `name`, `name[i]` (single=True) or `name[a:b]`."""
        group = canonical_name(group)
        if not self._known(group):
            self._unknown(group, pos)
            return None
        ids = self.groups[group]
        if single:
            one = self.resolve(group, start, pos)
            return None if one is None else [one]
        lo = 0 if start is None else start
        hi = len(ids) if stop is None else stop
        if not (0 <= lo < hi <= len(ids)):
            self.error(pos, f"slice {group}[{_short(lo)}:{_short(hi)}] is out of range "
                            f"or empty (size {len(ids)})", f"use {group}[a:b] with 0 <= a < b <= {len(ids)}")
            return None
        return self._named(group, ids[lo:hi])

    # -- lines and biases ---------------------------------------------------------------------
    def _target_ok(self, dst: int, pos: Pos) -> bool:
        node = self.nodes[dst]
        if isinstance(node.gate, Input):
            self.error(pos, f"lines cannot end at input '{node.name}'",
                       "inputs get their value from outside; connect to a neuron")
            return False
        if isinstance(node.gate, Prev):
            self.error(pos, f"lines cannot end at '{node.name}', a previous step's value",
                       "prev(x) reads x as it was; add lines to x itself")
            return False
        if dst in self._pending_products:
            self.error(pos, f"lines cannot end at product '{node.name}'",
                       "a product multiplies its two operands; add lines to a neuron that reads it")
            return False
        if dst in self._op_results:
            self.error(pos, f"lines cannot end at '{node.name}', an operation's result",
                       "an operation takes its operands as arguments; add lines to a neuron "
                       "that reads it")
            return False
        return True

    def add_line(self, src: int, dst: int, weight: int, pos: Pos) -> None:
        if abs(weight) > WEIGHT_LIMIT:
            self._int(weight, pos, "weight", WEIGHT_LIMIT)
            return
        if not self._target_ok(dst, pos):
            return
        node = self.nodes[dst]
        if src in node.weights:
            self.error(pos, f"a line from '{self.nodes[src].name}' to '{node.name}' already "
                            f"exists (written at {node.line_pos[src]})",
                       "write each connection once; put the sum of the weights on one line")
            return
        if weight != 0:
            node.weights[src] = weight
            node.line_pos[src] = pos

    def add_bias(self, dst: int, bias: int, pos: Pos) -> None:
        bias = self._int(bias, pos, "bias")
        if self._target_ok(dst, pos):
            self.nodes[dst].bias += bias

    def add_output(self, node: int, pos: Pos) -> None:
        if node in self._output_set:  # a set: `output x` of a 80,000-vector is linear
            self.error(pos, f"'{self.nodes[node].name}' is listed as an output twice",
                       "name each output once")
            return
        self.outputs.append((node, pos))
        self._output_set.add(node)

    def set_steps(self, steps: int, pos: Pos) -> None:
        if self._steps_twice(pos):
            return
        if not 1 <= steps <= MAX_STEPS:
            self.error(pos, f"steps {_short(steps)} is out of range",
                       f"use 1..{MAX_STEPS}, or 'steps open' for a run of any length")
            return
        self.steps = steps

    def set_open(self, pos: Pos) -> None:
        """`steps open`: a run of any length (at most MAX_STEPS); ranges hold at every step."""
        if not self._steps_twice(pos):
            self.open, self.steps = True, MAX_STEPS

    def _steps_twice(self, pos: Pos) -> bool:
        if self._steps_pos is not None:
            self.error(pos, f"steps is already given at {self._steps_pos}", "give it once")
            return True
        self._steps_pos = pos
        return False

    def set_init(self, node: int, value: int, pos: Pos) -> None:
        if node in self.inits:
            self.error(pos, f"the init of '{self.nodes[node].name}' is already given at "
                            f"{self.inits[node][1]}", "give it once")
            return
        self.inits[node] = (self._int(value, pos, "init value"), pos)

    def add_feedback(self, inputs: list[int], nodes: list[int], pos: Pos) -> None:
        """feedback x = y: input x takes y's value of the previous step whenever the run
        gives no value for x."""
        if len(inputs) != len(nodes):
            self.error(pos, f"feedback of {len(nodes)} values into {len(inputs)} inputs",
                       "feed back a vector of the input's size")
            return
        taken = {x for x, _, _ in self.feedback}
        for x, y in zip(inputs, nodes):
            if not isinstance(self.nodes[x].gate, Input):
                self.error(pos, f"feedback goes into inputs; '{self.nodes[x].name}' is not one",
                           "write feedback INPUT = NODE")
                return
            if x in taken:
                self.error(pos, f"input '{self.nodes[x].name}' is already fed back",
                           "feed each input from one node")
                return
            self.feedback.append((x, y, pos))

    def set_done(self, ids: list[int], pos: Pos) -> None:
        if self.done is not None:
            self.error(pos, f"done is already given at {self.done[1]}", "name one 0/1 node")
        elif len(ids) != 1:
            self.error(pos, "done names one 0/1 node, not a vector", "write done d")
        else:
            self.done = (ids[0], pos)

    # -- finishing --------------------------------------------------------------------------
    def build(self) -> Netlist:
        self._resolve_products()
        if self._steps_pos is None and self._recurrent():
            # A recurrence without `steps` runs as long as asked, and its operations are
            # built for that (a spike's range over every step, a delay of any length).
            self.open, self.steps = True, MAX_STEPS
        if self._pending_macros:
            from .macros import expand

            expand(self)
        if self.done is not None and self.done[0] not in self._output_set:
            self.add_output(self.done[0], self.done[1])  # a run's end is read like an output
        if not self.outputs and not self.diag:
            self.error(Pos(self.source, 1, 1), "the netlist has no output",
                       "add a line such as 'output y'")
        net, remap = self.assemble()
        self._check_inits()
        self.diag.check()
        # Ranges are computed eagerly: every netlist has them. The prev ranges operations
        # were built for are proven to hold (dsl/macros._prev_fixpoint): they bound these.
        analyse(net, {remap[p]: (Range(lo, hi), Range(lo, hi))
                      for p, (lo, hi) in self.macro_prev_ranges.items()})
        self._check_recurrence(net, remap)
        return net

    def _resolve_products(self) -> None:
        for nid, (a, b, pos, k) in self._pending_products.items():
            size = None if k is None else len(self.groups[self.nodes[nid].group])
            if k == 0 and size > 1 and not isinstance(a, int) \
                    and self._width(a) == self._width(b) == 1:
                self.error(pos, "a product neuron is a scalar unless an operand is a vector",
                           "write 'neuron p : product(a, b)', or multiply a vector: "
                           "product(x[0:2], y)")
                continue
            ia = self._operand(a, k, size, quiet=False)
            ib = self._operand(b, k, size, quiet=False)
            if ia is not None and ib is not None:
                node = self.nodes[nid]
                node.gate = Product(ia, ib)

    def _recurrent(self) -> bool:
        """Does a value cross steps: a prev node (written in a sum or lines, or as an
        operation's operand) or a fed-back input? (A delay alone needs `steps`.)"""
        def prev_arg(value) -> bool:
            return isinstance(value, tuple) and isinstance(value[0], str) \
                and prev_depth(value[0])[1] > 0

        return bool(self.feedback) or any(isinstance(n.gate, Prev) for n in self.nodes) \
            or any(prev_arg(v) for _, _, args, _ in self._pending_macros for _, v, _ in args)

    def assemble(self) -> tuple[Netlist, dict[int, int]]:
        """The Netlist of what is built so far (ranges not yet computed) and the renumbering
        from builder ids: ids follow the topological order (the reference and the map
        generator both walk nodes front to back). Raises the problems found so far."""
        order = self._topological_order()
        self.diag.check()
        remap = {old: new for new, old in enumerate(order)}
        nodes = []
        for old in order:
            n = self.nodes[old]
            gate = n.gate
            if isinstance(gate, Product):
                gate = Product(remap[gate.a], remap[gate.b])
            elif isinstance(gate, Prev):
                gate = Prev(remap[gate.src], self.inits.get(gate.src, (0, None))[0])
            nodes.append(Node(remap[old], n.name, n.group, n.index, gate, n.pos,
                              {remap[s]: w for s, w in n.weights.items()}, n.bias,
                              {remap[s]: p for s, p in n.line_pos.items()}))
        groups = {g: [remap[i] for i in ids] for g, ids in self.groups.items()}
        net = Netlist(self.name or _stem(self.source), nodes, groups,
                      [remap[i] for i in self.inputs], [remap[o] for o, _ in self.outputs],
                      self.steps, self.source, open=self.open,
                      feedback={remap[x]: remap[y] for x, y, _ in self.feedback},
                      done=None if self.done is None else remap[self.done[0]])
        net.convs = list(self.convs)
        return net, remap

    def _check_inits(self) -> None:
        """`init x` is what prev(x) reads at the first step: an error where nothing reads
        prev(x) (the builder makes prev(h)'s whole vector when one element is read)."""
        read = self._prev_read()
        for src, (_, pos) in self.inits.items():
            if src not in read:
                name = self.nodes[src].name
                self.error(pos, f"init of '{name}', but nothing reads prev({name})",
                           "init gives the value prev(x) has at the first step")

    def _prev_read(self) -> set[int]:
        """The nodes x whose prev(x) is written somewhere (a sum, lines, a product or
        operation operand, an output, done, feedback), or read by prev(prev(x)) in turn;
        `lines prev(h) -> y dense` reads every element of h, zero columns too."""
        read = set()
        todo = [self.nodes[i] for i in self._prev_refs]
        while todo:
            p = todo.pop()
            src = p.gate.src
            if src not in read:
                read.add(src)
                if isinstance(self.nodes[src].gate, Prev):
                    todo.append(self.nodes[src])
        return read

    def _check_recurrence(self, net: Netlist, remap: dict[int, int]) -> None:
        """What only the ranges can tell: a fed-back value fits its input, and done is
        0/1."""
        for x, y, pos in self.feedback:
            rx, ry = net.value_range[remap[x]], net.value_range[remap[y]]
            if not rx.lo <= ry.lo <= ry.hi <= rx.hi:
                self.error(pos, f"'{net.nodes[remap[y]].name}' ranges over {ry}, but input "
                                f"'{net.nodes[remap[x]].name}' it feeds back into holds {rx}",
                           f"declare the input as {min(rx.lo, ry.lo)}..{max(rx.hi, ry.hi)}, "
                           "or clamp the value")
        if self.done is not None:
            d, pos = self.done
            r = net.value_range[remap[d]]
            if not 0 <= r.lo <= r.hi <= 1:
                self.error(pos, f"done '{net.nodes[remap[d]].name}' ranges over {r}; it must "
                                "be a proven 0/1 value", "make it with a compare, equals or step")
        self.diag.check()

    def _topological_order(self) -> list[int]:
        """Sources before users; declaration order among independent nodes. Reports cycles."""
        n = len(self.nodes)
        deps = [self._sources(i) for i in range(n)]
        state = [0] * n  # 0 new, 1 on stack, 2 done
        order: list[int] = []
        for root in range(n):
            if state[root]:
                continue
            # Iterative DFS: a 10,000-node chain must not hit Python's recursion limit.
            stack = [(root, iter(deps[root]))]
            state[root] = 1
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    stack.pop()
                    state[node] = 2
                    order.append(node)
                elif state[nxt] == 0:
                    state[nxt] = 1
                    stack.append((nxt, iter(deps[nxt])))
                elif state[nxt] == 1:
                    path = [s for s, _ in stack]
                    cycle = path[path.index(nxt):] + [nxt]
                    self.error(self.nodes[nxt].pos, f"cycle: {_cycle_text(self.nodes, cycle)}",
                               self._cycle_hint(cycle))
                    return list(range(n))
        return order

    def _cycle_hint(self, cycle: list[int]) -> str:
        if any(nid == c and kind == "delay" for nid, kind, _, _ in self._pending_macros
               for c in cycle):
            return ("a delay is not built on its own loop (its chain starts at the low end of "
                    "a range the loop decides): write the loop with prev(...), e.g. "
                    "prev(prev(a)) for two steps, and init")
        return ("within a step lines flow one way; read a value of the previous step with "
                "prev(...) to make a recurrence")

    def _sources(self, i: int) -> list[int]:
        if i in self._pending_products:
            a, b, _, k = self._pending_products[i]
            size = None if k is None else len(self.groups[self.nodes[i].group])
            ids = [self._operand(a, k, size, True), self._operand(b, k, size, True)]
            return [x for x in ids if x is not None]
        return list(self.nodes[i].weights) + self._macro_deps.get(i, [])

    def resolve_quiet(self, group, index, pos) -> int | None:
        group = canonical_name(group)
        ids = self.groups.get(group) if self._known(group) else None
        if not ids:
            return None
        if index is None:
            return self._named(group, ids)[0] if len(ids) == 1 else None
        return self._named(group, ids[index:index + 1])[0] if 0 <= index < len(ids) else None


# gate -> (parameters it takes, parameters it needs); lut and product take positionals.
_GATE_PARAMS = {
    "relu": (("s", "max"), ()),
    "step": (("t",), ()),
    "identity": ((), ()),
    "spike": (("threshold", "leak", "reset", "init"), ("threshold",)),
    "lut": ((), ()),
    "product": ((), ()),
}


def make_gate(builder: NetBuilder, name: str, args: list, pos: Pos):
    """Turn a gate written as name(args) into a Gate, reporting bad names and parameters.

    args: list of (keyword or None, value, Pos); values are ints, (lo, hi) ranges,
    lists of ints (as Python lists), or references (group, index).
    Returns a Gate, ("product", a, b) for products, or None after an error.
    """
    if name not in GATE_NAMES:
        from .macros import MACROS

        builder.error(pos, f"unknown gate '{name}'", did_you_mean(name, (*GATE_NAMES, *MACROS))
                      or f"gates are {', '.join(GATE_NAMES)}; operations are {', '.join(MACROS)}")
        return None
    parsed = _gate_args(builder, name, args, pos)
    if parsed is None:
        return None
    kw, positional = parsed
    int_arg = _IntArgs(builder, name, kw)
    if name == "identity":
        return Identity()
    if name == "relu":
        s = int_arg("s", 1, 1, INT_LIMIT, " (the requantisation divisor must be positive)")
        return Relu(s, int_arg("max", None, 0, INT_LIMIT))
    if name == "step":
        return Step(int_arg("t", 0))
    if name == "spike":
        return _spike_gate(builder, kw, int_arg)
    if name == "lut":
        return _lut_gate(builder, positional, pos)
    if name == "product":
        return _product_gate(builder, positional, pos)
    raise AssertionError(name)


def _gate_args(builder: NetBuilder, name: str, args: list, pos: Pos):
    """(named parameters, positionals) of a gate, or None after an error."""
    err = builder.error
    allowed, required = _GATE_PARAMS[name]
    kw: dict[str, tuple[object, Pos]] = {}
    positional = []
    if name in ("lut", "product") and any(key is not None for key, _, _ in args):
        err(pos, f"{name} takes positional arguments only",
            "write lut(LO..HI, [v0, v1, ...]) or product(a, b)")
        return None
    for key, value, apos in args:
        if key is None:
            positional.append((value, apos))
        elif key not in allowed:
            hint = (f"{name} takes {', '.join(allowed)}" if allowed
                    else f"{name} takes no named parameters")
            err(apos, f"{name} has no parameter '{key}'", did_you_mean(key, allowed) or hint)
        elif key in kw:
            err(apos, f"parameter '{key}' is given twice", "give it once")
        else:
            kw[key] = (value, apos)
    if name not in ("lut", "product") and positional:
        err(positional[0][1], f"{name} takes named parameters only",
            {"relu": "write relu(s=4, max=7)", "step": "write step(t=1)",
             "identity": "write identity", "spike": "write spike(threshold=3, leak=1, reset=0)"}[name])
        return None
    for r in required:
        if r not in kw:
            err(pos, f"{name} needs the parameter '{r}'", f"write {name}({r}=...)")
            return None
    return kw, positional


class _IntArgs:
    """Reads an integer parameter of a gate within bounds, reporting bad ones."""

    def __init__(self, builder: NetBuilder, name: str, kw: dict):
        self.builder, self.name, self.kw = builder, name, kw

    def __call__(self, key: str, default, lo=-INT_LIMIT, hi=INT_LIMIT, what=""):
        if key not in self.kw:
            return default
        value, apos = self.kw[key]
        if not isinstance(value, int):
            self.builder.error(apos, f"{self.name}: '{key}' must be an integer",
                               f"write {key}=3")
            return default
        if not lo <= value <= hi:
            self.builder.error(apos, f"{self.name}: {key}={_short(value)} is out of range{what}",
                               f"use {key} within {lo}..{hi}")
            return default
        return value


def _spike_gate(builder: NetBuilder, kw: dict, int_arg: _IntArgs) -> Spike:
    threshold = int_arg("threshold", 1, 1, INT_LIMIT, " (a spike threshold is positive)")
    leak = int_arg("leak", 0, 0, INT_LIMIT)
    init = int_arg("init", 0, 0, INT_LIMIT)
    reset: int | None = 0
    if "reset" in kw:
        value, apos = kw["reset"]
        if value == ("subtract", None):
            reset = None
        elif isinstance(value, int) and 0 <= value <= INT_LIMIT:
            reset = value
        else:
            builder.error(apos, "spike: reset must be a non-negative integer or 'subtract'",
                          "write reset=0 or reset=subtract")
    return Spike(threshold, leak, reset, init)


def _lut_gate(builder: NetBuilder, positional: list, pos: Pos) -> Lut | None:
    err = builder.error
    if (len(positional) != 2 or not isinstance(positional[0][0], tuple)
            or not isinstance(positional[0][0][0], int)
            or not isinstance(positional[1][0], list)):
        err(pos, "lut needs a domain and a table", "write lut(-2..2, [0, 0, 1, 4, 4])")
        return None
    (lo, hi), dpos = positional[0]
    table, tpos = positional[1]
    if lo > hi:
        err(dpos, f"lut domain {lo}..{hi} is empty", f"write {hi}..{lo}")
        return None
    if len(table) != hi - lo + 1:
        err(tpos, f"lut table has {len(table)} entries but the domain {lo}..{hi} has "
                  f"{hi - lo + 1}", "give one value for every integer of the domain")
        return None
    if hi - lo + 1 > 65536:
        err(dpos, f"lut domain {lo}..{hi} is too large", "a table has at most 65536 entries")
        return None
    table = [builder._int(v, tpos, "lut value") for v in table]
    lo = builder._int(lo, dpos, "lut bound")
    return Lut(lo, tuple(table))


def _product_gate(builder: NetBuilder, positional: list, pos: Pos):
    if len(positional) != 2 or not all(
            isinstance(v, tuple) and isinstance(v[0], str) for v, _ in positional):
        builder.error(pos, "product needs two operands",
                      "write product(a, b) or product(x[0], h[2])")
        return None
    (a, apos), (b, bpos) = positional
    return ("product", (a[0], a[1], apos), (b[0], b[1], bpos))


def _cycle_text(nodes: list[Node], cycle: list[int]) -> str:
    """a -> b -> a, each name shortened, at most a dozen of them."""
    from .util import short_name

    names = [short_name(nodes[c].name) for c in cycle]
    if len(names) > 12:
        names = names[:6] + [f"... ({len(names) - 12} more)"] + names[-6:]
    return " -> ".join(names)


def _short(value: int) -> str:
    text = str(value)
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"


def _stem(path: str) -> str:
    import os

    return os.path.splitext(os.path.basename(path))[0] or "netlist"
