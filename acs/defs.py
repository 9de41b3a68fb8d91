"""What the ACS language knows without any #include: opcodes, line specials, builtins, constants.

Owns our own replacement for zcommon.acs (zspecial/zdefs/zwvars): the special numbers and
argument counts come from acs/data/specials.tsv, the opcode numbers from acs/data/pcodes.tsv
(both copied from the project's reference tables), and the builtins with their own opcodes
and the zdefs constants are listed below. Names are looked up lower-cased (ACS is
case-insensitive).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# CALLFUNC builtins exist in ViZDoom 1.3.2 (ZDoom 2.8.1) only up to this index; a larger
# index silently returns 0 (acs-bytecode.md), so we refuse to emit it.
MAX_CALLFUNC_INDEX = 96


def _read_tsv(name: str) -> list[list[str]]:
    with open(os.path.join(_DATA, name), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    return rows[1:]  # header


OPCODES: dict[str, int] = {name: int(num) for num, name in _read_tsv("pcodes.tsv")}
MAX_OPCODE = max(OPCODES.values())


@dataclass(frozen=True)
class Special:
    """A line special (number > 0, called with LSPECn) or a CALLFUNC builtin (number < 0,
    index -number). `returns` is True for CALLFUNC functions (they always push a result)."""
    number: int
    name: str
    min_args: int
    max_args: int

    @property
    def is_callfunc(self) -> bool:
        return self.number < 0


def _load_specials() -> dict[str, Special]:
    out: dict[str, Special] = {}
    for num, name, lo, hi in _read_tsv("specials.tsv"):
        n = int(num)
        if n <= -100000:  # the table's end marker, not a function
            continue
        out.setdefault(name.lower(), Special(n, name, int(lo), int(hi)))
    return out


SPECIALS: dict[str, Special] = _load_specials()


@dataclass(frozen=True)
class Builtin:
    """A builtin with its own opcode. Optional trailing args (min..max) are padded with 0,
    as the engine always pops `max` values. `direct` is the opcode taking all args inline
    (4 bytes each) when they are constants, or None."""
    name: str
    op: str
    min_args: int
    max_args: int
    returns: bool
    direct: str | None = None
    latent: bool = False     # it waits: a script may call it, a function may not (as acc)


def _b(name, op, lo, hi=None, returns=False, direct=None, latent=False) -> Builtin:
    return Builtin(name, op, lo, lo if hi is None else hi, returns, direct, latent)


_BUILTIN_LIST = [
    # waiting (latent)
    _b("Delay", "DELAY", 1, direct="DELAYDIRECT", latent=True),
    _b("TagWait", "TAGWAIT", 1, direct="TAGWAITDIRECT", latent=True),
    _b("PolyWait", "POLYWAIT", 1, direct="POLYWAITDIRECT", latent=True),
    _b("ScriptWait", "SCRIPTWAIT", 1, direct="SCRIPTWAITDIRECT", latent=True),
    # numbers
    _b("Random", "RANDOM", 2, returns=True, direct="RANDOMDIRECT"),
    _b("FixedMul", "FIXEDMUL", 2, returns=True),
    _b("FixedDiv", "FIXEDDIV", 2, returns=True),
    _b("Sin", "SIN", 1, returns=True),
    _b("Cos", "COS", 1, returns=True),
    _b("VectorAngle", "VECTORANGLE", 2, returns=True),
    _b("StrLen", "STRLEN", 1, returns=True),
    # game state
    _b("Timer", "TIMER", 0, returns=True),
    _b("PlayerCount", "PLAYERCOUNT", 0, returns=True),
    _b("GameType", "GAMETYPE", 0, returns=True),
    _b("GameSkill", "GAMESKILL", 0, returns=True),
    _b("PlayerNumber", "PLAYERNUMBER", 0, returns=True),
    _b("ActivatorTID", "ACTIVATORTID", 0, returns=True),
    _b("LineSide", "LINESIDE", 0, returns=True),
    _b("PlayerHealth", "PLAYERHEALTH", 0, returns=True),
    _b("PlayerArmorPoints", "PLAYERARMORPOINTS", 0, returns=True),
    _b("PlayerFrags", "PLAYERFRAGS", 0, returns=True),
    _b("PlayerInGame", "PLAYERINGAME", 1, returns=True),
    _b("PlayerIsBot", "PLAYERISBOT", 1, returns=True),
    _b("PlayerClass", "PLAYERCLASS", 1, returns=True),
    _b("GetPlayerInfo", "GETPLAYERINFO", 2, returns=True),
    _b("GetPlayerInput", "GETPLAYERINPUT", 2, returns=True),
    _b("GetLevelInfo", "GETLEVELINFO", 1, returns=True),
    _b("GetCVar", "GETCVAR", 1, returns=True),
    _b("GetScreenWidth", "GETSCREENWIDTH", 0, returns=True),
    _b("GetScreenHeight", "GETSCREENHEIGHT", 0, returns=True),
    _b("ThingCount", "THINGCOUNT", 2, returns=True, direct="THINGCOUNTDIRECT"),
    _b("ThingCountName", "THINGCOUNTNAME", 2, returns=True),
    _b("ThingCountSector", "THINGCOUNTSECTOR", 3, returns=True),
    _b("ThingCountNameSector", "THINGCOUNTNAMESECTOR", 3, returns=True),
    # sectors and lines
    _b("GetSectorLightLevel", "GETSECTORLIGHTLEVEL", 1, returns=True),
    _b("GetSectorFloorZ", "GETSECTORFLOORZ", 3, returns=True),
    _b("GetSectorCeilingZ", "GETSECTORCEILINGZ", 3, returns=True),
    _b("ChangeFloor", "CHANGEFLOOR", 2, direct="CHANGEFLOORDIRECT"),
    _b("ChangeCeiling", "CHANGECEILING", 2, direct="CHANGECEILINGDIRECT"),
    _b("SetLineTexture", "SETLINETEXTURE", 4),
    _b("SetLineBlocking", "SETLINEBLOCKING", 2),
    _b("SetLineMonsterBlocking", "SETLINEMONSTERBLOCKING", 2),
    _b("SetLineSpecial", "SETLINESPECIAL", 2, 7),
    _b("ClearLineSpecial", "CLEARLINESPECIAL", 0),
    _b("GetLineRowOffset", "GETLINEROWOFFSET", 0, returns=True),
    _b("ReplaceTextures", "REPLACETEXTURES", 2, 3),
    _b("SectorDamage", "SECTORDAMAGE", 5),
    _b("SetFloorTrigger", "SETFLOORTRIGGER", 3, 8),
    _b("SetCeilingTrigger", "SETCEILINGTRIGGER", 3, 8),
    _b("ChangeSky", "CHANGESKY", 2),
    _b("SetCameraToTexture", "SETCAMERATOTEXTURE", 3),
    # actors
    _b("GetActorX", "GETACTORX", 1, returns=True),
    _b("GetActorY", "GETACTORY", 1, returns=True),
    _b("GetActorZ", "GETACTORZ", 1, returns=True),
    _b("GetActorFloorZ", "GETACTORFLOORZ", 1, returns=True),
    _b("GetActorCeilingZ", "GETACTORCEILINGZ", 1, returns=True),
    _b("GetActorAngle", "GETACTORANGLE", 1, returns=True),
    _b("GetActorPitch", "GETACTORPITCH", 1, returns=True),
    _b("GetActorLightLevel", "GETACTORLIGHTLEVEL", 1, returns=True),
    _b("SetActorPosition", "SETACTORPOSITION", 5, returns=True),
    _b("SetActorAngle", "SETACTORANGLE", 2),
    _b("SetActorPitch", "SETACTORPITCH", 2),
    _b("SetActorProperty", "SETACTORPROPERTY", 3),
    _b("GetActorProperty", "GETACTORPROPERTY", 2, returns=True),
    _b("SetActorState", "SETACTORSTATE", 2, 3, returns=True),
    _b("Thing_Damage2", "THINGDAMAGE2", 3, returns=True),
    _b("Thing_Projectile2", "THING_PROJECTILE2", 7),
    _b("SpawnProjectile", "SPAWNPROJECTILE", 7),
    _b("Spawn", "SPAWN", 4, 6, returns=True),
    _b("SpawnSpot", "SPAWNSPOT", 2, 4, returns=True),
    _b("SpawnSpotFacing", "SPAWNSPOTFACING", 2, 3, returns=True),
    _b("SetThingSpecial", "SETTHINGSPECIAL", 2, 7),
    _b("ClassifyActor", "CLASSIFYACTOR", 1, returns=True),
    _b("CheckPlayerCamera", "CHECKPLAYERCAMERA", 1, returns=True),
    _b("CheckActorCeilingTexture", "CHECKACTORCEILINGTEXTURE", 2, returns=True),
    _b("CheckActorFloorTexture", "CHECKACTORFLOORTEXTURE", 2, returns=True),
    _b("MorphActor", "MORPHACTOR", 1, 7, returns=True),
    _b("UnMorphActor", "UNMORPHACTOR", 1, 2, returns=True),
    # inventory
    _b("ClearInventory", "CLEARINVENTORY", 0),
    _b("GiveInventory", "GIVEINVENTORY", 2),
    _b("TakeInventory", "TAKEINVENTORY", 2),
    _b("CheckInventory", "CHECKINVENTORY", 1, returns=True),
    _b("UseInventory", "USEINVENTORY", 1, returns=True),
    _b("ClearActorInventory", "CLEARACTORINVENTORY", 1),
    _b("GiveActorInventory", "GIVEACTORINVENTORY", 3),
    _b("TakeActorInventory", "TAKEACTORINVENTORY", 3),
    _b("CheckActorInventory", "CHECKACTORINVENTORY", 2, returns=True),
    _b("UseActorInventory", "USEACTORINVENTORY", 2, returns=True),
    _b("GetAmmoCapacity", "GETAMMOCAPACITY", 1, returns=True),
    _b("SetAmmoCapacity", "SETAMMOCAPACITY", 2),
    _b("CheckWeapon", "CHECKWEAPON", 1, returns=True),
    _b("SetWeapon", "SETWEAPON", 1, returns=True),
    # world
    _b("SetGravity", "SETGRAVITY", 1),
    _b("SetAirControl", "SETAIRCONTROL", 1),
    _b("SetResultValue", "SETRESULTVALUE", 1),
    _b("SetHudSize", "SETHUDSIZE", 3),
    _b("SetFont", "SETFONT", 1),
    _b("SetMusic", "SETMUSIC", 1, 3),
    _b("LocalSetMusic", "LOCALSETMUSIC", 1, 3),
    _b("SectorSound", "SECTORSOUND", 2),
    _b("AmbientSound", "AMBIENTSOUND", 2),
    _b("LocalAmbientSound", "LOCALAMBIENTSOUND", 2),
    _b("ActivatorSound", "ACTIVATORSOUND", 2),
    _b("ThingSound", "THINGSOUND", 3),
    _b("SoundSequence", "SOUNDSEQUENCE", 1),
    _b("FadeTo", "FADETO", 5),
    _b("FadeRange", "FADERANGE", 9),
    _b("CancelFade", "CANCELFADE", 0),
    _b("PlayMovie", "PLAYMOVIE", 1, returns=True),
    _b("SetMugShotState", "SETMUGSHOTSTATE", 1),
    _b("ChangeLevel", "CHANGELEVEL", 3, 4),
]

BUILTINS: dict[str, Builtin] = {b.name.lower(): b for b in _BUILTIN_LIST}

# Print-like calls: how each ends the print buffer.
PRINT_END = {
    "print": "ENDPRINT", "printbold": "ENDPRINTBOLD", "log": "ENDLOG",
    "hudmessage": "ENDHUDMESSAGE", "hudmessagebold": "ENDHUDMESSAGEBOLD",
    "strparam": "SAVESTRING",
}
# `x:` in a print call -> the opcode that prints one value of that kind.
PRINT_ITEMS = {
    "s": "PRINTSTRING", "d": "PRINTNUMBER", "i": "PRINTNUMBER", "c": "PRINTCHARACTER",
    "f": "PRINTFIXED", "x": "PRINTHEX", "b": "PRINTBINARY", "n": "PRINTNAME",
    "l": "PRINTLOCALIZED", "k": "PRINTBIND",
}

# Script types (SPTR type field) and flags (SFLG). Script arguments each type requires.
SCRIPT_TYPES = {"open": 1, "respawn": 2, "death": 3, "enter": 4, "lightning": 12,
                "unloading": 13, "disconnect": 14, "return": 15}
SCRIPT_TYPE_ARGS = {"disconnect": 1}  # every other typed script takes no arguments
SCRIPT_FLAGS = {"net": 1, "clientside": 2}

# Our zdefs: constants every map may use without #include "zcommon.acs".
CONSTANTS: dict[str, int] = {}


def _const(**kw) -> None:
    for k, v in kw.items():
        CONSTANTS[k.lower()] = v


_const(TRUE=1, FALSE=0, ON=1, OFF=0, YES=1, NO=0)
_const(LINE_FRONT=0, LINE_BACK=1, SIDE_FRONT=0, SIDE_BACK=1)
_const(TEXTURE_TOP=0, TEXTURE_MIDDLE=1, TEXTURE_BOTTOM=2,
       TEXFLAG_TOP=1, TEXFLAG_MIDDLE=2, TEXFLAG_BOTTOM=4, TEXFLAG_ADDOFFSET=8)
_const(GAME_SINGLE_PLAYER=0, GAME_NET_COOPERATIVE=1, GAME_NET_DEATHMATCH=2, GAME_TITLE_MAP=3)
_const(SKILL_VERY_EASY=0, SKILL_EASY=1, SKILL_NORMAL=2, SKILL_HARD=3, SKILL_VERY_HARD=4)
_const(BLOCK_NOTHING=0, BLOCK_CREATURES=1, BLOCK_EVERYTHING=2, BLOCK_RAILING=3,
       BLOCK_PLAYERS=4)
_const(SCROLL=0, CARRY=1, SCROLL_AND_CARRY=2)
_const(CR_UNTRANSLATED=-1, CR_BRICK=0, CR_TAN=1, CR_GRAY=2, CR_GREY=2, CR_GREEN=3,
       CR_BROWN=4, CR_GOLD=5, CR_RED=6, CR_BLUE=7, CR_ORANGE=8, CR_WHITE=9, CR_YELLOW=10,
       CR_BLACK=12, CR_LIGHTBLUE=13, CR_CREAM=14, CR_OLIVE=15, CR_DARKGREEN=16,
       CR_DARKRED=17, CR_DARKBROWN=18, CR_PURPLE=19, CR_DARKGRAY=20, CR_DARKGREY=20,
       CR_CYAN=21)
_const(HUDMSG_PLAIN=0, HUDMSG_FADEOUT=1, HUDMSG_TYPEON=2, HUDMSG_FADEINOUT=3,
       HUDMSG_LOG=-0x80000000, HUDMSG_COLORSTRING=0x40000000, HUDMSG_ADDBLEND=0x20000000,
       HUDMSG_ALPHA=0x10000000, HUDMSG_NOWRAP=0x08000000,
       HUDMSG_LAYER_OVERHUD=0, HUDMSG_LAYER_UNDERHUD=0x1000, HUDMSG_LAYER_OVERMAP=0x2000,
       HUDMSG_NOTWITH3DVIEW=0x10000, HUDMSG_NOTWITHFULLMAP=0x20000,
       HUDMSG_NOTWITHOVERLAYMAP=0x40000)
_const(APROP_Health=0, APROP_Speed=1, APROP_Damage=2, APROP_Alpha=3, APROP_RenderStyle=4,
       APROP_SeeSound=5, APROP_AttackSound=6, APROP_PainSound=7, APROP_DeathSound=8,
       APROP_ActiveSound=9, APROP_Ambush=10, APROP_Invulnerable=11, APROP_JumpZ=12,
       APROP_ChaseGoal=13, APROP_Frightened=14, APROP_Gravity=15, APROP_Friendly=16,
       APROP_SpawnHealth=17, APROP_Dropped=18, APROP_Notarget=19, APROP_Species=20,
       APROP_Nametag=21, APROP_Score=22, APROP_Notrigger=23, APROP_DamageFactor=24,
       APROP_MasterTID=25, APROP_TargetTID=26, APROP_TracerTID=27, APROP_Waterlevel=28,
       APROP_ScaleX=29, APROP_ScaleY=30, APROP_Dormant=31, APROP_Mass=32,
       APROP_Accuracy=33, APROP_Stamina=34, APROP_Height=35, APROP_Radius=36,
       APROP_Reactiontime=37, APROP_MeleeRange=38, APROP_ViewHeight=39,
       APROP_AttackZOffset=40, APROP_StencilColor=41, APROP_Friction=42,
       APROP_DamageMultiplier=43, APROP_MaxStepHeight=44, APROP_MaxDropOffHeight=45,
       APROP_DamageType=46)
_const(STYLE_None=0, STYLE_Normal=1, STYLE_Fuzzy=2, STYLE_SoulTrans=3, STYLE_OptFuzzy=4,
       STYLE_Stencil=5, STYLE_AddStencil=6, STYLE_AddShaded=7, STYLE_Translucent=64,
       STYLE_Add=65, STYLE_Shaded=66, STYLE_TranslucentStencil=67, STYLE_Shadow=68,
       STYLE_Subtract=69)
_const(LEVELINFO_PAR_TIME=0, LEVELINFO_CLUSTERNUM=1, LEVELINFO_LEVELNUM=2,
       LEVELINFO_TOTAL_SECRETS=3, LEVELINFO_FOUND_SECRETS=4, LEVELINFO_TOTAL_ITEMS=5,
       LEVELINFO_FOUND_ITEMS=6, LEVELINFO_TOTAL_MONSTERS=7, LEVELINFO_KILLED_MONSTERS=8,
       LEVELINFO_SUCK_TIME=9)
_const(PLAYERINFO_TEAM=0, PLAYERINFO_AIMDIST=1, PLAYERINFO_COLOR=2, PLAYERINFO_GENDER=3,
       PLAYERINFO_NEVERSWITCH=4, PLAYERINFO_MOVEBOB=5, PLAYERINFO_STILLBOB=6,
       PLAYERINFO_PLAYERCLASS=7, PLAYERINFO_FOV=8, PLAYERINFO_DESIREDFOV=9)
_const(PROP_FROZEN=0, PROP_NOTARGET=1, PROP_INSTANTWEAPONSWITCH=2, PROP_FLY=3,
       PROP_TOTALLYFROZEN=4, PROP_INVULNERABILITY=5, PROP_STRENGTH=6,
       PROP_INVISIBILITY=7, PROP_RADIATIONSUIT=8, PROP_ALLMAP=9, PROP_INFRARED=10,
       PROP_WEAPONLEVEL2=11, PROP_FLIGHT=12, PROP_SPEED=15, PROP_BUDDHA=16)
_const(INPUT_OLDBUTTONS=0, INPUT_BUTTONS=1, INPUT_PITCH=2, INPUT_YAW=3, INPUT_ROLL=4,
       INPUT_FORWARDMOVE=5, INPUT_SIDEMOVE=6, INPUT_UPMOVE=7)
_const(BT_ATTACK=1, BT_USE=2, BT_JUMP=4, BT_CROUCH=8, BT_TURN180=16, BT_ALTATTACK=32,
       BT_RELOAD=64, BT_ZOOM=128, BT_SPEED=256, BT_STRAFE=512, BT_MOVERIGHT=1024,
       BT_MOVELEFT=2048, BT_BACK=4096, BT_FORWARD=8192, BT_RIGHT=16384, BT_LEFT=32768)
_const(SPAC_None=0, SPAC_Cross=1, SPAC_Use=2, SPAC_MCross=4, SPAC_Impact=8, SPAC_Push=16,
       SPAC_PCross=32, SPAC_UseThrough=64, SPAC_AnyCross=128, SPAC_MUse=256, SPAC_MPush=512,
       SPAC_UseBack=1024)
_const(NOT_BOTTOM=1, NOT_MIDDLE=2, NOT_TOP=4, NOT_FLOOR=8, NOT_CEILING=16)
_const(DAMAGE_PLAYERS=1, DAMAGE_NONPLAYERS=2, DAMAGE_IN_AIR=4, DAMAGE_SUBCLASSES_PROTECT=8)
_const(MOD_UNKNOWN=0, MOD_CRUSH=15, MOD_TELEFRAG=16, MOD_FALLING=17, MOD_EXIT=20,
       MOD_WATER=12, MOD_SLIME=13, MOD_LAVA=14)
_const(T_NONE=0, T_SHOTGUY=1, T_CHAINGUY=2, T_BARON=3, T_ZOMBIE=4, T_IMP=5, T_DEMON=8,
       T_CLIP=11, T_SHELLS=12, T_STIMPACK=23, T_MEDKIT=24, T_BARREL=125)

# Names the standard header files provide; including them is a no-op here.
STANDARD_HEADERS = {"zcommon.acs", "zdefs.acs", "zspecial.acs", "zwvars.acs"}
