"""Modding: read a compiled map back into a netlist, verify an edited map, and embed a
circuit into someone else's map.

    textmap.py   UDMF TEXTMAP parsing (grammar/udmf.lark) and writing, Hexen binary maps
    behavior.py  reading a BEHAVIOR lump back: scripts, and the bus operations they perform
    machine.py   the machine a map builds (lights, lanes, doors, lines), from a compiled
                 Circuit or from a parsed map, and its netlist
    extract.py   WAD -> netlist (.dnet)
    verify.py    an edited WAD: the diff against its embedded netlist, checks on the map
                 as it is, and an engine run against the extracted netlist
    embed.py     a circuit dropped into a foreign map, wired to its switches and sectors
    wiring.py    the wiring file of embed
    wadio.py     a foreign WAD's lumps copied through, with only our changes
    playtest.py  playing an embedded circuit (pads, panel scripts) against the reference
"""
