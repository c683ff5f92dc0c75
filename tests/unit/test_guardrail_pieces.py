"""The guardrails' pure pieces: the loop guard's counting and the restorer of
placeholders split across stream events."""

from inference.guardrails.loops import find_loop
from inference.guardrails.matches import Match
from inference.guardrails.placeholders import Restorer, Vault
from inference.neutral.types import ToolCall


def calls(*specs: tuple[str, str]) -> list[ToolCall]:
    return [ToolCall(f"call_{n}", name, arguments) for n, (name, arguments) in enumerate(specs)]


def test_the_same_call_with_reordered_arguments_is_a_repeat() -> None:
    made = calls(("run", '{"cmd": "make", "cwd": "/"}'), ("run", '{"cwd":"/","cmd":"make"}'))
    assert find_loop(made, 3, 20) is None
    loop = find_loop([*made, *calls(("run", '{ "cmd":"make","cwd":"/" }'))], 3, 20)
    assert loop is not None and loop.times == 3 and loop.call.startswith("run(")


def test_a_short_cycle_repeated_is_a_loop_and_calls_out_of_the_window_do_not_count() -> None:
    cycle = calls(("read", "{}"), ("edit", "{}")) * 3
    assert find_loop(cycle, 3, 20) is not None
    assert find_loop(cycle, 3, 4) is None  # only two turns of the cycle in the window


def test_only_the_new_calls_can_make_the_loop_that_blocks() -> None:
    history = calls(("run", "{}"), ("run", "{}"), ("run", "{}"))
    other = calls(("ls", "{}"))
    assert find_loop([*history, *other], 3, 20) is not None
    assert find_loop([*history, *other], 3, 20, among=other) is None
    again = calls(("run", "{}"))
    assert find_loop([*history, *again], 3, 20, among=again) is not None


def test_the_same_value_gets_the_same_placeholder_and_each_entity_counts_from_one() -> None:
    vault = Vault()
    text = "a@b.io, c@d.io, a@b.io, 10.0.0.1"
    matches = [
        Match("EMAIL_ADDRESS", 0, 6),
        Match("EMAIL_ADDRESS", 8, 14),
        Match("EMAIL_ADDRESS", 16, 22),
        Match("IP_ADDRESS", 24, 32),
    ]
    redacted = vault.redact(text, matches)
    assert redacted == "<EMAIL_ADDRESS_1>, <EMAIL_ADDRESS_2>, <EMAIL_ADDRESS_1>, <IP_ADDRESS_1>"
    assert vault.restore(redacted) == text


def test_a_placeholder_split_across_pieces_is_restored_whole_and_other_text_flows() -> None:
    vault = Vault()
    vault.redact("x@y.io", [Match("EMAIL_ADDRESS", 0, 6)])
    restorer = Restorer(vault)
    pieces = ["Mail <", "EMAIL_AD", "DRESS_1", "> now; 2 <", "3 and <UNKNOWN_9> <b>"]
    out = [restorer.feed(piece) for piece in pieces] + [restorer.flush()]
    assert "".join(out) == "Mail x@y.io now; 2 <3 and <UNKNOWN_9> <b>"
    assert out[1] == "" and out[2] == ""  # held while it could still be a placeholder
