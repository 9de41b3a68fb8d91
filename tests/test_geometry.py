"""Every map we build is well formed: each line's sides face the sectors they name."""
import glob
import os

import pytest

from conftest import NEEDS_TILES, ROOT
from dsl import load
from dsl.random_net import mlp
from mapgen.circuit import lower
from mapgen.layout import build_layout
from demos.museum import build
from mapgen.udmf import MapModel, Sector, sidedness_errors

# A circuit too big for one map is laid out only to be refused (its tiles are the maps:
# the README's `chat --config large` builds and runs them); its one-map layout took 50 s.
CIRCUITS = [p for p in sorted(glob.glob(os.path.join(ROOT, "circuits", "*.dnet")))
            if os.path.basename(p) not in NEEDS_TILES]


@pytest.mark.parametrize("path", CIRCUITS, ids=os.path.basename)
def test_circuit_maps_are_well_formed(path):
    assert sidedness_errors(build_layout(lower(load(path))).model) == []


def test_random_and_museum_maps_are_well_formed():
    for seed in range(5):
        net = mlp(seed, [5, 7, 3], in_range=(-2, 5), gates=("relu", "lut", "step"))
        assert sidedness_errors(build_layout(lower(net)).model) == []
    assert sidedness_errors(build().compiled.layout.model) == []


def test_a_wall_wound_the_wrong_way_is_caught():
    m = MapModel()
    m.rect_sector(0, 0, 64, 64, Sector(0, 128))
    assert sidedness_errors(m) == []
    sec = m.sector(Sector(0, 128))
    m.wall((100, 0), (164, 0), sec)     # anticlockwise: the room would be on the left
    m.wall((164, 0), (164, 64), sec)
    m.wall((164, 64), (100, 64), sec)
    m.wall((100, 64), (100, 0), sec)
    errs = sidedness_errors(m)
    assert len(errs) == 4 and all("front sector 1 is not on its right" in e for e in errs)


def test_door_sectors_start_no_sound_sequence():
    """Door ceilings move in their thousands per inference; a sector with a sound sequence
    makes each move search the list of every running sequence (physics.SILENT_SEQUENCE).
    Every door sector, in circuits and in the museum, names the sequence no lump defines,
    and nothing else does."""
    import re

    from mapgen import physics as P

    for model in (build_layout(lower(load(CIRCUITS[0]))).model, build().compiled.layout.model):
        text = model.textmap()
        sectors = re.findall(r"^sector \{ (.*) \}$", text, flags=re.M)
        doors = [s for s in sectors if "comment = \"door " in s]
        assert doors and all(f'soundsequence = "{P.SILENT_SEQUENCE}";' in s for s in doors)
        assert sum("soundsequence" in s for s in sectors) == len(doors)
