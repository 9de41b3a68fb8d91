"""The pipeline, top to bottom: netlist -> circuit -> layout -> schedule -> checks -> UDMF +
ACS -> BEHAVIOR -> WAD. Each pass is its own module; this one only strings them together
and writes the resource report.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from dsl.ir import Netlist
from dsl.util import file_digest

from . import physics as P
from .checks import check_acs_size, run_all
from .circuit import Circuit, lower
from .layout import Layout, build_layout
from .program import Schedule, acs_source, bus_violations, manifest, plan
from .wadcheck import MANIFEST_LUMP, NETLIST_LUMP  # noqa: F401  (where readers find them)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where built WADs go by default (never committed); $VOODOO_WADS moves them (tests do).
WADS = os.environ.get("VOODOO_WADS") or os.path.join(ROOT, "wads")


@dataclass
class CompiledMap:
    name: str              # MAPxx
    title: str
    circuit: Circuit
    layout: Layout
    schedule: Schedule
    textmap: str
    acs: str
    behavior: bytes
    manifest: dict
    nodes: bytes | None = None   # ZNODES built ahead (mapgen/nodes.py), once asked for
    step_height: int = 0         # the dolls' MaxStepHeight (lanes.step_height), from layout
    next_map: str | None = None  # hub play (mapgen/hub.py): where the map's exit leads

    def __post_init__(self):
        if not self.step_height and self.layout is not None:
            from .lanes import step_height

            self.step_height = step_height(self.layout.lanes)

    def report(self) -> str:
        return resource_report(self)

    def with_nodes(self) -> "CompiledMap":
        """Build the map's nodes (zdbsp, cached) if it has none yet; returns itself."""
        if self.nodes is None:
            from .nodes import build_nodes

            self.nodes = build_nodes(self.textmap)
        return self


def compile_netlist(net: Netlist, *, title: str | None = None, map_name: str = "MAP01",
                    acc: str = "internal", door_budget: int | None = None,
                    carry: str = "glide", split: bool = True,
                    chains: bool | None = None, pivots=False,
                    late_inputs: bool = False) -> CompiledMap:
    """`door_budget`: split staircases longer than this into parallel sub-lanes
    (circuit.split_lanes): fewer tics per phase, more dolls. `carry="conveyor"`: the
    geometry before frictionless lanes; `split=False`: no sub-lanes; `chains=False`: tags
    numbered in order (bench/speed.py measures against these); `pivots`: two-sided lanes
    (circuit.pivot_of: True, or pivots by node name); `late_inputs`: input lanes ride as
    late as their readers allow, and the manifest says when each input is wanted (a map of
    a streamed run starts before all its inputs are there)."""
    title = title or net.name
    circuit = lower(net, door_budget=door_budget, carry=carry, split=split, chains=chains,
                    pivots=pivots, late_inputs=late_inputs)
    layout = build_layout(circuit, title)
    sched = plan(layout)
    run_all(layout, sched)
    textmap = layout.model.textmap()
    source = acs_source(layout, sched, title)
    check_acs_size(source, net)
    bad = bus_violations(source)
    if bad:  # the rule of the machine: ACS moves values, it never computes on them
        raise AssertionError(f"generated ACS line {bad[0][0]} is not a bus operation: {bad[0][1]}")
    behavior = compile_acs(source, f"{net.name}.acs", acc)
    return CompiledMap(map_name, title, circuit, layout, sched, textmap, source, behavior,
                       manifest(layout, sched, title))


def compile_acs(source: str, filename: str, acc: str = "internal") -> bytes:
    if acc == "external":
        from acs.external import compile_with_acc

        return compile_with_acc(source, filename)
    # The generated ACS repeats a few shapes of statement tens of thousands of times: one
    # parse per shape, the same BEHAVIOR (acs/fastparse.py), about 5x faster.
    from acs.fastparse import compile_generated

    return compile_generated(source, filename)


# A WAD's lump offsets are signed 32-bit: maps beyond this many bytes of TEXTMAP go into
# further files beside it (`write_wad`), each a WAD of its own.
PART_BYTES = 1_500_000_000


def part_path(path: str, k: int) -> str:
    """The k-th further file (1, 2, ...) of a WAD too big for one: chat.wad -> chat.1.wad."""
    stem, ext = os.path.splitext(path)
    return f"{stem}.{k}{ext or '.wad'}"


def map_file(path: str, info: dict) -> str:
    """The file that holds a map of the WAD at `path` (its manifest names a part)."""
    part = info.get("wad_part")
    return os.path.join(os.path.dirname(os.path.abspath(path)), part) if part else path


def write_wad(path: str, maps, net: Netlist | None = None, tiles=None,
              part_bytes: int = PART_BYTES, nodes: bool = True) -> None:
    """Pack compiled maps (in order; any iterable: each map's lumps are kept, nothing
    else) into one WAD, atomically. The manifests ride along, and with `net` the whole
    netlist too (and with `tiles`, which values each map takes and hands on), so that
    `build.py run x.wad` needs nothing but the WAD. Maps past `part_bytes` of TEXTMAP go
    into further WADs beside it (`part_path`, written as they fill, each map's manifest
    naming its file); the last maps, the manifests and the netlist are in `path`. Each map
    carries its nodes built ahead (`CompiledMap.with_nodes`; without `nodes`, none: the
    engine builds them at load, as before)."""
    from acs.wad import write_wad as pack

    lumps, infos, held, parts, step, part_step = [], {}, 0, 0, 0, 0
    for k, m in enumerate(maps):
        if lumps and held + len(m.textmap) > part_bytes:
            parts += 1
            name = part_path(path, parts)
            pack(name, lumps, step_height=part_step)
            part_step = 0
            digest = file_digest(name)   # a part of another build is refused, not run
            for lump in lumps:
                infos[lump.name]["wad_part"] = os.path.basename(name)
                infos[lump.name]["wad_part_sha256"] = digest
            lumps, held = [], 0
        lumps.append(_lump(m, nodes))
        held += len(m.textmap)
        step, part_step = max(step, m.step_height), max(part_step, m.step_height)
        info = dict(m.manifest)
        if tiles is not None:
            info["tile_inputs"], info["tile_outputs"] = tiles[k].inputs, tiles[k].outputs
        infos[m.name] = info
    extra = {MANIFEST_LUMP: json.dumps(infos, sort_keys=True).encode()}
    if net is not None:
        from dsl.jsonio import dumps

        extra[NETLIST_LUMP] = dumps(net).encode()
    pack(path, lumps, extra_lumps=extra, step_height=step)


def _lump(m, nodes: bool):
    from acs.wad import MapLump

    return MapLump(m.name, m.textmap, m.behavior, m.acs, m.title,
                   m.with_nodes().nodes if nodes else None, m.next_map)


def write_pk3(path: str, maps: list[CompiledMap], net: Netlist | None = None,
              tiles=None) -> None:
    """The same maps as a PK3 (a zip), atomically: maps/MAPxx.wad (each map alone in a WAD,
    as GZDoom loads maps from a PK3), mapinfo.txt naming them, and the manifests (and the
    netlist) under voodoonet/. Same inputs give the same bytes (fixed file times)."""
    import tempfile
    import zipfile

    from acs.wad import DEFAULT_STEP, atomic_output, make_mapinfo, player_class

    lumps = [_lump(m, True) for m in maps]
    step = max(m.step_height for m in maps)
    files = {"mapinfo.txt": make_mapinfo(lumps, step).encode()}
    if step > DEFAULT_STEP:
        files["decorate.txt"] = player_class(step).encode()
    with tempfile.TemporaryDirectory(prefix="voodoonet-pk3-") as work:
        for lump in lumps:
            one = os.path.join(work, f"{lump.name}.wad")
            _map_only_wad(one, lump)
            with open(one, "rb") as f:
                files[f"maps/{lump.name}.wad"] = f.read()
    infos = {m.name: dict(m.manifest) for m in maps}
    for k, m in enumerate(maps):
        if tiles is not None:
            infos[m.name]["tile_inputs"], infos[m.name]["tile_outputs"] = \
                tiles[k].inputs, tiles[k].outputs
    files["voodoonet/manifest.json"] = json.dumps(infos, sort_keys=True).encode()
    if net is not None:
        from dsl.jsonio import dumps

        files["voodoonet/netlist.json"] = dumps(net).encode()
    with atomic_output(path, ".pk3") as tmp:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for name in sorted(files):
                z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)),
                           files[name], zipfile.ZIP_DEFLATED)


def _map_only_wad(path: str, m) -> None:
    """A WAD holding one map group and nothing else (a PK3's maps/MAPxx.wad)."""
    import omg

    from acs.wad import map_group

    wad = omg.WAD()
    wad.udmfmaps[m.name] = map_group(m)
    wad.to_file(path)


@dataclass
class LoadedWad:
    """A WAD built by VoodooNet, as `build.py run` needs it."""
    path: str
    net: Netlist
    infos: list[dict]            # MAP01, MAP02, ... in order
    tiles: list                  # per map: .inputs / .outputs value names


def load_wad(path: str) -> LoadedWad:
    """Read back a WAD written with its netlist; a corrupt or foreign WAD is a clear error."""
    from types import SimpleNamespace

    from acs.wad import WadError, read_wad

    contents = read_wad(path)
    lumps = dict(contents.lumps)
    if MANIFEST_LUMP not in lumps or NETLIST_LUMP not in lumps:
        raise WadError(f"{path}: not a WAD built by VoodooNet with its netlist (no "
                       f"{MANIFEST_LUMP}/{NETLIST_LUMP} lumps)\n    hint: rebuild it with "
                       "`python build.py compile NETLIST -o WAD`")
    from .wadcheck import check_maps, read_manifest, read_netlist

    net = read_netlist(path, contents)
    infos = read_manifest(path, contents, net, numbered=True)  # nothing unchecked reaches
    names = list(infos)
    parts: dict[str, list[str]] = {}
    for n in names:
        parts.setdefault(infos[n].get("wad_part"), []).append(n)
    check_maps(path, contents, parts.pop(None, []))            # the runner or the engine
    del contents, lumps
    for part, in_part in parts.items():
        _check_part(path, part, in_part, infos[in_part[0]].get("wad_part_sha256"))
    ins = [net.nodes[i].name for i in net.inputs]
    outs = [net.nodes[o].name for o in net.outputs]
    tiles = [SimpleNamespace(inputs=infos[n].get("tile_inputs", ins),
                             outputs=infos[n].get("tile_outputs", outs)) for n in names]
    return LoadedWad(path, net, [infos[n] for n in names], tiles)


def _check_part(path: str, part: str, names: list[str], sha256: str | None) -> None:
    """A further file of a WAD too big for one: beside it, the very file `write_wad` wrote
    (its SHA-256), so its maps `names` are the ones checked when they were compiled;
    reading them back would parse gigabytes of TEXTMAP again (8 min, 13 GB for the
    micro:bit chat's three parts)."""
    from acs.wad import WadError

    full = map_file(path, {"wad_part": part})
    if not os.path.isfile(full):
        raise WadError(f"{path}: its maps {names[0]}..{names[-1]} are in {part}, which is "
                       "missing\n    hint: keep the parts beside the WAD, or rebuild it")
    if file_digest(full) != sha256:
        raise WadError(f"{path}: {part} is not the part it was built with (its maps "
                       f"{names[0]}..{names[-1]})\n    hint: rebuild the WAD")


def resource_report(m: CompiledMap) -> str:
    lay, sched, c = m.layout, m.schedule, m.circuit
    x0, y0, x1, y1 = lay.model.extent()
    tags = len(c.lights) + len(c.lanes) + len(c.groups) + 1
    weighted = sum(len(d.lines) for ln in c.lanes for d in ln.doors)
    connections = sum(len(d.adds) for ln in c.lanes for d in ln.doors)
    rows = [
        ("map", f"{m.name} \"{m.title}\""),
        ("neurons", f"{len(c.net.nodes)} nodes, {c.net.n_connections} connections"),
        ("dolls", f"{len(c.lanes)} (one per lane)"),
        ("doors", f"{sum(len(ln.doors) for ln in c.lanes)}"),
        ("weighted lines", f"{weighted} (for {connections} door-to-light additions; "
                           f"{len(c.groups)} weight groups)"),
        ("lights", f"{len(c.lights)}"),
        ("sectors", f"{len(lay.model.sectors)}"),
        ("linedefs", f"{len(lay.model.lines)}"),
        ("GZDoom vertices", gzdoom_vertices(m)),
        ("things", f"{len(lay.model.things)}"),
        ("tags", f"{tags}"),
        ("map extent", f"{x1 - x0:g} x {y1 - y0:g} units (x {x0:g}..{x1:g}, y {y0:g}..{y1:g})"),
        ("ACS", f"{len(m.acs.splitlines())} lines, BEHAVIOR {len(m.behavior)} bytes"),
        ("phases", f"{len(sched.phases)}: " + ", ".join(
            f"{ph.copy_tics if ph.index else 0}+{ph.run_tics}" for ph in sched.phases) + " tics"),
        ("tics per inference", f"{sched.inference_tics} (predicted)"),
        ("critical path", critical_path(m)),
        ("pipelined", "no (spiking, outputs read in batches, or a control room: one run at a "
                      "time)" if sched.pipeline is None else
         f"one inference per beat of {sched.pipeline.period} tics ({sched.pipeline.ii} "
         f"slot{'s' if sched.pipeline.ii > 1 else ''}); in a batch of beats one every "
         f"{sched.pipeline.batch_step}"),
    ]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{w}}  {v}" for k, v in rows)


def gzdoom_vertices(m: CompiledMap) -> str:
    """The map's share of GZDoom's flat vertex buffer: counted from its nodes when they are
    built, else estimated (checks.flat_vertices)."""
    from .checks import flat_vertices
    from .nodes import gl_flat_vertices

    if m.nodes is not None and m.nodes[:4] in (b"ZGLN", b"ZGL2", b"ZGL3"):
        model = m.layout.model
        sides = [s.sector for s in model.sides]
        n = gl_flat_vertices(m.nodes, [(sides[ln.front], sides[ln.back] if ln.back >= 0
                                        else -1) for ln in model.lines])
        how = "from its nodes"
    else:
        n, how = flat_vertices(m.layout.model), "estimated; nodes not built"
    return (f"{n:,} of the {P.GZDOOM_BUFFER:,} its flat buffer holds ({how}; "
            f"the budget {P.GZDOOM_FLAT_VERTICES:,})")


def critical_path(m: CompiledMap, top: int = 4) -> str:
    """What sets the tics of a step: the phases that cost the most, each with the lane that
    rides longest (its node, doors and ride) and the door that moves farthest before it
    (the phase's copy tics), so a user sees which node to requantise, narrow or split."""
    lay, sched, c = m.layout, m.schedule, m.circuit
    from .program import door_speed

    parts = []
    for ph in sorted(sched.phases, key=lambda ph: -(ph.copy_tics + ph.run_tics))[:top]:
        g = max((lay.lanes[i] for i in ph.lanes), key=lambda g: g.reach())
        mover = max((lay.lanes[i] for i in ph.lanes), key=lambda g: door_speed(g)[1])
        name = c.net.nodes[g.lane.node].name + g.lane.label
        text = (f"phase {ph.index}: {ph.run_tics} tics riding ({name}: {len(g.lane.doors)} "
                f"doors over {g.reach():g} units)")
        if ph.index and ph.copy_tics > 1:
            text += (f" + {ph.copy_tics} copying ({c.net.nodes[mover.lane.node].name}'s doors "
                     "move farthest)")
        parts.append(text)
    return ("; ".join(parts) + f" (the {min(top, len(sched.phases))} costliest of "
            f"{len(sched.phases)} phases)") if parts else "none"


def default_wad(net_name: str) -> str:
    return os.path.join(WADS, f"{net_name}.wad")
