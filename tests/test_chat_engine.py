"""The chat model in the engine (demos/chat.py, demos/chat_map.py, docs/chat.md): the
checked-in model's map, built once; a prompt's steps in ViZDoom equal the reference at
every step (y, done and the one-hot o; with debug every light), greedy and seeded; a
walking visitor steps on a prompt pedal and reads the reply the map printed. The rows and
controls are checked without the engine."""
import os

import pytest

from demos import chat, chat_map
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
def loaded(net, tmp_path_factory):
    return chat.build(net, str(tmp_path_factory.mktemp("chat") / "chat.wad"))


@pytest.fixture(scope="module")
def visitor(loaded):
    """One engine for every test: loading a map of 60,000 sectors takes ViZDoom minutes."""
    with chat_map.ChatVisitor(loaded.path, loaded.infos[0],
                              loaded.infos[0]["gallery"]["spots"]) as v:
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
