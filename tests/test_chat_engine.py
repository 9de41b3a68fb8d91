"""The chat model in the engine (demos/chat.py, demos/chat_map.py, docs/chat.md): the
checked-in model's map, built once; a prompt's steps in ViZDoom equal the reference at
every step (y, done and the one-hot o; with debug every light), greedy and seeded; a
walking visitor steps on a prompt pedal and reads the reply the map printed; a walking
visitor types a question on the floor's keyboard and steps on ASK: every light of every
step (the probe's log) equals the reference, and with $GZDOOM the same in GZDoom, with a
picture of the typed prompt and the reply. The rows and controls are checked without the
engine (and the keyboard in tests/test_chat_keyboard.py)."""
import os

import pytest

from demos import chat, chat_map
from dsl.lower import lower_products
from dsl.reference import evaluate
from engine import gzdoom as gz
from engine.runner import result_labels
from test_gzdoom_parity import GZDOOM, needs_gzdoom
from dsl.diagnostics import VoodooError
from models.chat_corpus import decode, encode
from models.chat_lm import generate



@pytest.fixture(scope="module")
def model():
    return chat.load_model()


@pytest.fixture(scope="module")
def net():
    return chat.load_net()


@pytest.fixture(scope="module")
def built(net, tmp_path_factory):
    """The WAD (`chat.build`'s, shared with the other tests of the run that build it), the
    probe that logs every light when a step is acknowledged (engine/gzdoom.py; loaded into
    the visitor's engine too) and the lights' labels, from what the build kept of the
    compiled map (hundreds of MB, not kept itself)."""
    from types import SimpleNamespace

    d = tmp_path_factory.mktemp("chat")
    loaded, kept = chat.build_kept(net, str(d / "chat.wad"))
    pm = gz.ProbeMap(kept["lights"], [], [], 0, on_ack=True)
    gz.write_probe(str(d / "probe.wad"), pm)
    labels = {tag: label for tag, label in kept["read"]}
    return SimpleNamespace(loaded=loaded, pm=pm, labels=labels,
                           probe=str(d / "probe.wad"), log=str(d / "probe.log"))


@pytest.fixture(scope="module")
def loaded(built):
    return built.loaded


@pytest.fixture(scope="module")
def visitor(built):
    """One engine for every test: loading a map of 60,000 sectors takes ViZDoom minutes."""
    info = built.loaded.infos[0]
    with chat_map.ChatVisitor(built.loaded.path, info, info["gallery"]["spots"],
                              extra_args=(f"-file {built.probe}", f"+logfile {built.log}")) as v:
        yield v


def test_rows_give_the_prompt_then_feed_back(net, model):
    rows = chat.prompt_rows(net, "hi", 7, model.cfg)
    names = [net.nodes[i].name for i in net.inputs]
    c = names.index("c")
    assert [r[c] for r in rows[:3]] == encode("hi\n")
    assert all(r[c] is chat.FED for r in rows[3:]) and len(rows) == model.cfg.context
    assert any(v for r in rows for k, v in enumerate(r) if k != c)   # seeded noise
    greedy = chat.prompt_rows(net, "hi", None, model.cfg)
    assert all(v == 0 for r in greedy for k, v in enumerate(r) if k != c)


@pytest.mark.parametrize("prompt,msg", [("HI", "not in the vocabulary"), ("", "give a"),
                                        ("a" * 47, "at most 46")])
def test_bad_prompts_are_refused(model, prompt, msg):
    with pytest.raises(VoodooError, match=msg):
        chat.check_prompt(prompt, model.cfg)


def test_controls_only_act_on_one_hot_outputs():
    src = chat_map.controls_source(list(range(1, 46)), 50, list(range(100, 145)), 10)
    assert chat_map.ui_violations(src, list(range(1, 46)) + [50]) == []
    bad = src + "\nscript 99 (void) { inputs[1] = GetSectorLightLevel(3) + 1; }\n"
    assert chat_map.ui_violations(bad, list(range(1, 46)) + [50])
    assert chat_map.ui_violations(src + "int q = GetSectorLightLevel(7);\n", [50])


@pytest.mark.parametrize("prompt,seed", [("hi", 5)])
def test_first_steps_in_the_engine_equal_the_reference(loaded, visitor, model, prompt, seed):
    n = len(prompt) + 1 + 2            # the prompt, its newline and two more reply steps
    r = chat.run_chat(loaded, model.cfg, prompt, seed, debug=seed is not None,
                      runner=visitor.runner, max_steps=n)
    assert r.steps == n and r.tokens == f"tokens {n}/{n} EXACT", r.divergences
    want = generate(model, prompt, seed).text
    assert r.reply == want[:len(r.reply)] and len(r.reply) >= min(3, len(want))


@pytest.mark.parametrize("prompt", ["doll?", "hello"])
def test_a_prompt_in_the_engine_is_the_reference_to_its_end(loaded, visitor, model, prompt):
    """One of bench/chat.py's 20 held-out prompts (the first), and a greeting (the one-map
    model answers small talk, issue 36): every step to the newline the network chose, y,
    done and the one-hot o equal the reference at each, and the reply is not empty."""
    want = generate(model, prompt)
    assert want.text
    r = chat.run_chat(loaded, model.cfg, prompt, runner=visitor.runner)
    assert r.tokens == f"tokens {want.steps}/{want.steps} EXACT", r.divergences
    assert r.reply == want.text


def test_a_visitor_steps_on_a_pedal_and_reads_the_reply(visitor, model):
    got = visitor.ask(0)
    want = generate(model, chat_map.PROMPTS[0])
    assert decode(got) == want.text + ("\n" if want.ended else "")


def test_the_command_refuses_before_building(tmp_path, capsys):
    with pytest.raises(VoodooError, match="not in the vocabulary"):
        chat.main(["Hello"], output=str(tmp_path / "x.wad"))
    assert not os.path.exists(tmp_path / "x.wad")


QUESTION = "what is a door?"
GZ_QUESTION = "door?"


def _reference_steps(net, model, prompt: str):
    """The lowered netlist and its reference run of a greedy chat on `prompt`."""
    low = lower_products(net)
    return low, evaluate(low, [chat.prompt_rows(net, prompt, None, model.cfg)])


def _one_hot(low, res, t: int) -> int:
    """The symbol whose o[k] is 1 at step t of the reference, -1 if none (as the map notes)."""
    o = [int(res.value[0, t, low.by_name(f"o[{k}]").id]) for k in range(len(chat_map.VOCAB))]
    return o.index(1) if o.count(1) == 1 else -1


def _lights_differ(built, tr, seq: int, low, res, t: int) -> list[str]:
    """The labels whose light, logged when step `seq` was acknowledged, is not the
    reference's at step t."""
    row = tr.at(tr.ack_tic(seq))
    got = {built.labels[tag]: v for tag, v in zip(built.pm.lights, row["L"])
           if tag in built.labels}
    want = result_labels(low, res, t)
    assert len(got) == len(want)
    return [k for k in got if got[k] != want[k]]


def test_a_walking_visitor_types_a_question_and_reads_the_reply(visitor, built, net, model):
    """Issue 36: typed on the floor's keyboard by walking onto the pads (the aisles, never
    another pad), ASK, the reply read from the map; every step's one-hot choice and every
    light of every step equal to the reference of the same prompt."""
    visitor.warp("rest")
    w0 = visitor.walker.tics
    visitor.type_text(QUESTION)
    walked = visitor.walker.tics - w0
    assert decode(visitor.typed()) == QUESTION
    got = visitor.ask_typed()
    want = generate(model, QUESTION)
    assert want.ended and decode(got) == want.text + "\n"
    choices, last = visitor.steps()
    low, res = _reference_steps(net, model, QUESTION)
    assert len(choices) == want.steps
    assert choices == [_one_hot(low, res, t) for t in range(want.steps)]
    tr = gz.parse_log(open(built.log, errors="replace").read(), built.pm)
    first = last - want.steps + 1
    for t in range(want.steps):
        bad = _lights_differ(built, tr, first + t, low, res, t)
        assert not bad, f"step {t}: {len(bad)} lights differ, first {bad[:1]}"
    print(f"typed {QUESTION!r} in {walked} tics of walking; {want.steps} steps EXACT, "
          f"reply {want.text!r}")


def test_keys_delete_clear_and_refuse_past_the_context(visitor, model):
    """DELETE and CLEAR by walking onto them; a key past the context's room (the prompt, its
    newline and a reply's first character) types nothing; ASK on no prompt starts no run."""
    visitor.warp("rest")
    visitor.press_key("CLEAR")
    visitor.type_text("ok")
    visitor.press_key("DELETE")
    assert decode(visitor.typed()) == "o"
    visitor.press_key("CLEAR")
    assert visitor.typed() == []
    most = model.cfg.context - 2
    for k in range(most + 3):   # the key scripts themselves, as a pad runs them
        visitor.engine.puke(chat_map.SCRIPT_KEY, 1 + k % 40)
        visitor.walker.act(1)
    assert visitor.typed() == [1 + k % 40 for k in range(most)]
    visitor.press_key("CLEAR")
    seq = visitor.status(1)[1]
    visitor.press_key("ASK")
    visitor.walker.act(4)
    assert visitor.status(1)[1] == seq     # no step was started


@needs_gzdoom
def test_gzdoom_keyboard_and_pedal_run_as_the_reference(built, net, model, tmp_path):
    """The same question in GZDoom: the visitor steps onto each pad (a `warp` from the aisle
    onto it and back: GZDoom has no Python player) and onto ASK; every light of every step
    equals the reference; a picture of the typed prompt and the reply is not black or
    uniform (kept as tmp_path/chat-keyboard.png, or $VOODOO_CHAT_SHOT). Then the first
    prompt pedal: its run, the prompt's constants then the fed steps, every light of every
    step equal to the reference too."""
    from PIL import Image

    from test_gzdoom_render import flaw

    info = built.loaded.infos[0]
    # a shorter question than the ViZDoom visitor's, question mark and all (11 steps, not
    # 20: the suite's budget; GZDoom plays every step of both runs)
    typed, pedal = generate(model, GZ_QUESTION), generate(model, chat_map.PROMPTS[0])
    parts = chat_map.gzdoom_visit(info, GZ_QUESTION, typed.steps) + \
        chat_map.gzdoom_pedal(info, 0, pedal.steps)
    log, shots = gz.play(GZDOOM, [built.loaded.path, built.probe], parts, timeout=1800,
                         timescale=gz.FAST)
    tr = gz.parse_log(log, built.pm)
    seq = 1_000_001                   # the chat script's acks start apart from a runner's
    for prompt, run in ((GZ_QUESTION, typed), (chat_map.PROMPTS[0], pedal)):
        low, res = _reference_steps(net, model, prompt)
        for t in range(run.steps):
            bad = _lights_differ(built, tr, seq, low, res, t)
            assert not bad, f"{prompt!r} step {t}: {len(bad)} lights differ, first {bad[:1]}"
            seq += 1
        assert _one_hot(low, res, run.steps - 1) == 0   # it ended on the newline it chose
    Image.fromarray(shots[0]).save(os.environ.get("VOODOO_CHAT_SHOT",
                                                  str(tmp_path / "chat-keyboard.png")))
    assert flaw(shots[0]) is None, flaw(shots[0])
