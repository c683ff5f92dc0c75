"""The labelled set of the semantic cache's gate (``cache_pairs.jsonl`` beside this file):
pairs of questions, the first the cached one, labelled ``paraphrase`` (one answer serves
both) or ``near-miss`` (it must not), each with its kind.

Written by hand as templates: each scenario is a question, its paraphrases and its
near-misses (negation, swapped roles, changed numbers, changed names, opposites), filled
with a few sets of names and numbers. Run to write the set again:

    .venv/bin/python -m bench.features.cache_pairs
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SET = Path(__file__).with_name("cache_pairs.jsonl")

# Each scenario: the cached question; paraphrases by kind; near-misses by kind; the
# slot values it is filled with (every template of a scenario uses the same slots, and
# the near-misses of changed numbers and names may use the ``other_…`` slots).
SCENARIOS: list[dict[str, Any]] = [
    {
        "question": "Transfer ${n} from {a} to {b}",
        "paraphrase": {
            "politeness": "Please transfer ${n} from {a} to {b}, thanks",
            "reworded": "Move ${n} from {a} to {b}",
            "case_punctuation": "transfer ${n} from {a} to {b}!",
            "reordered": "From {a} to {b}: transfer ${n}",
            "number_written": "Transfer {n} dollars from {a} to {b}",
        },
        "near-miss": {
            "swapped_roles": "Transfer ${n} from {b} to {a}",
            "changed_number": "Transfer ${m} from {a} to {b}",
            "changed_name": "Transfer ${n} from {a} to {c}",
            "negation": "Do not transfer ${n} from {a} to {b}",
        },
        "slots": [
            {"n": "100", "m": "1000", "a": "alice", "b": "bob", "c": "carol"},
            {"n": "250", "m": "25", "a": "Savings", "b": "Checking", "c": "Brokerage"},
        ],
    },
    {
        "question": "Is this cocktail good with {x}?",
        "paraphrase": {
            "politeness": "Hi, is this cocktail good with {x}? Thanks",
            "case_punctuation": "is this cocktail good with {x}",
            "reworded": "Does this cocktail taste good with {x}?",
            "reordered": "With {x}, is this cocktail good?",
        },
        "near-miss": {
            "negation": "Is this cocktail good without {x}?",
            "opposite": "Is this cocktail bad with {x}?",
        },
        "slots": [{"x": "alcohol"}, {"x": "ice"}, {"x": "sugar"}],
    },
    {
        "question": "Can I take {d} with {e}?",
        "paraphrase": {
            "politeness": "Please tell me: can I take {d} with {e}?",
            "reworded": "Is it safe to take {d} with {e}?",
            "case_punctuation": "can i take {d} with {e}",
        },
        "near-miss": {
            "negation": "Can I take {d} without {e}?",
            "swapped_roles": "Can I take {e} with {d}?",
            "opposite": "Should I avoid taking {d} with {e}?",
        },
        "slots": [
            {"d": "ibuprofen", "e": "coffee"},
            {"d": "aspirin", "e": "food"},
            {"d": "antibiotics", "e": "milk"},
        ],
    },
    {
        "question": "How do I reset my {thing} password?",
        "paraphrase": {
            "politeness": "How do I reset my {thing} password, please?",
            "case_punctuation": "HOW DO I RESET MY {thing} PASSWORD",
            "contraction": "How'd I reset my {thing} password?",
            "reworded": "What are the steps to reset my {thing} password?",
            "reordered": "My {thing} password: how do I reset it?",
        },
        "near-miss": {
            "negation": "Why can't I reset my {thing} password?",
            "opposite": "How do I keep my {thing} password from being reset?",
        },
        "slots": [{"thing": "email"}, {"thing": "router"}, {"thing": "bank"}],
    },
    {
        "question": "Book a table for {k} at {r} on Friday at {t}",
        "paraphrase": {
            "politeness": "Please book a table for {k} at {r} on Friday at {t}",
            "reworded": "Reserve a table for {k} at {r} on Friday at {t}",
            "filler": "Quick one: book a table for {k} at {r} on Friday at {t}",
            "reordered": "On Friday at {t}, book a table for {k} at {r}",
        },
        "near-miss": {
            "changed_number": "Book a table for {j} at {r} on Friday at {t}",
            "changed_name": "Book a table for {k} at {q} on Friday at {t}",
            "negation": "Don't book a table for {k} at {r} on Friday at {t}",
            "opposite": "Cancel the table for {k} at {r} on Friday at {t}",
        },
        "slots": [
            {"k": "4", "j": "6", "r": "Luigi's", "q": "Mario's", "t": "8pm"},
            {"k": "2", "j": "12", "r": "Sakura", "q": "Nobu", "t": "7:30"},
        ],
    },
    {
        "question": "Did {a} beat {b} in the {y} final?",
        "paraphrase": {
            "politeness": "Hey, did {a} beat {b} in the {y} final?",
            "case_punctuation": "did {a} beat {b} in the {y} final",
            "reworded": "Did {a} win against {b} in the {y} final?",
        },
        "near-miss": {
            "swapped_roles": "Did {b} beat {a} in the {y} final?",
            "changed_number": "Did {a} beat {b} in the {z} final?",
            "changed_name": "Did {a} beat {c} in the {y} final?",
            "opposite": "Did {a} lose to {b} in the {y} final?",
        },
        "slots": [
            {"a": "Argentina", "b": "France", "c": "Croatia", "y": "2022", "z": "2018"},
            {"a": "Nadal", "b": "Federer", "c": "Djokovic", "y": "2008", "z": "2009"},
        ],
    },
    {
        "question": "Convert {n} {u} to {v}",
        "paraphrase": {
            "politeness": "Please convert {n} {u} to {v}",
            "reworded": "What is {n} {u} in {v}?",
            "case_punctuation": "convert {n} {u} to {v}.",
        },
        "near-miss": {
            "swapped_roles": "Convert {n} {v} to {u}",
            "changed_number": "Convert {m} {u} to {v}",
        },
        "slots": [
            {"n": "100", "m": "10", "u": "miles", "v": "kilometers"},
            {"n": "72", "m": "27", "u": "fahrenheit", "v": "celsius"},
            {"n": "5", "m": "50", "u": "pounds", "v": "kilograms"},
        ],
    },
    {
        "question": "Should I {verb} the interest rate on my {loan} loan?",
        "paraphrase": {
            "politeness": "Should I {verb} the interest rate on my {loan} loan, please advise",
            "case_punctuation": "should i {verb} the interest rate on my {loan} loan",
        },
        "near-miss": {
            "opposite": "Should I {anti} the interest rate on my {loan} loan?",
            "negation": "Should I not {verb} the interest rate on my {loan} loan?",
        },
        "slots": [
            {"verb": "fix", "anti": "float", "loan": "home"},
            {"verb": "lock", "anti": "unlock", "loan": "car"},
        ],
    },
    {
        "question": "What is {p}% of {n}?",
        "paraphrase": {
            "politeness": "What is {p}% of {n}, please?",
            "case_punctuation": "what is {p}% of {n}",
            "reworded": "Compute {p}% of {n}",
            "number_written": "What is {p} percent of {n}?",
        },
        "near-miss": {
            "swapped_roles": "What is {n}% of {p}?",
            "changed_number": "What is {q}% of {n}?",
        },
        "slots": [
            {"p": "15", "q": "50", "n": "80"},
            {"p": "7.5", "q": "75", "n": "1,200"},
            {"p": "20", "q": "2", "n": "350"},
        ],
    },
    {
        "question": "Send the {doc} to {who}@example.com",
        "paraphrase": {
            "politeness": "Please send the {doc} to {who}@example.com",
            "reworded": "Email the {doc} to {who}@example.com",
            "case_punctuation": "send the {doc} to {who}@example.com!",
        },
        "near-miss": {
            "changed_name": "Send the {doc} to {other}@example.com",
            "negation": "Never send the {doc} to {who}@example.com",
        },
        "slots": [
            {"doc": "invoice", "who": "billing", "other": "legal"},
            {"doc": "contract", "who": "ops", "other": "sales"},
        ],
    },
    {
        "question": "Is {city} {dir} of {ref}?",
        "paraphrase": {
            "politeness": "Is {city} {dir} of {ref}, please?",
            "case_punctuation": "is {city} {dir} of {ref}",
            "reworded": "Does {city} lie {dir} of {ref}?",
        },
        "near-miss": {
            "swapped_roles": "Is {ref} {dir} of {city}?",
            "opposite": "Is {city} {anti} of {ref}?",
            "changed_name": "Is {other} {dir} of {ref}?",
        },
        "slots": [
            {"city": "Lyon", "ref": "Paris", "other": "Lille", "dir": "south", "anti": "north"},
            {"city": "Boston", "ref": "Chicago", "other": "Denver", "dir": "east", "anti": "west"},
        ],
    },
    {
        "question": "Rename '{old}' to '{new}' in the config file",
        "paraphrase": {
            "politeness": "Please rename '{old}' to '{new}' in the config file",
            "reworded": "Change '{old}' to '{new}' in the config file",
            "case_punctuation": "rename '{old}' to '{new}' in the config file.",
        },
        "near-miss": {
            "swapped_roles": "Rename '{new}' to '{old}' in the config file",
            "changed_name": "Rename '{old}' to '{third}' in the config file",
        },
        "slots": [
            {"old": "staging", "new": "production", "third": "testing"},
            {"old": "max_retries", "new": "retry_limit", "third": "attempts"},
        ],
    },
    {
        "question": "How many calories are in {n} grams of {food}?",
        "paraphrase": {
            "politeness": "How many calories are in {n} grams of {food}, please?",
            "case_punctuation": "how many calories are in {n} grams of {food}",
            "filler": "Quick question: how many calories are in {n} grams of {food}?",
            "reordered": "In {n} grams of {food}, how many calories are there?",
        },
        "near-miss": {
            "changed_number": "How many calories are in {m} grams of {food}?",
            "opposite": "How many calories are burned by {n} grams of {food}?",
        },
        "slots": [
            {"n": "100", "m": "200", "food": "rice"},
            {"n": "50", "m": "500", "food": "almonds"},
            {"n": "30", "m": "300", "food": "cheddar"},
        ],
    },
    {
        "question": "Is it legal for a landlord to enter without notice in {state}?",
        "paraphrase": {
            "politeness": "Is it legal for a landlord to enter without notice in {state}? Thanks",
            "case_punctuation": "is it legal for a landlord to enter without notice in {state}",
        },
        "near-miss": {
            "negation": "Is it legal for a landlord to enter with notice in {state}?",
            "changed_name": "Is it legal for a landlord to enter without notice in {other}?",
            "opposite": "Is it illegal for a landlord to enter without notice in {state}?",
        },
        "slots": [
            {"state": "California", "other": "Texas"},
            {"state": "Ontario", "other": "Quebec"},
        ],
    },
    {
        "question": "Who paid {a} for the {item}, {b} or {c}?",
        "paraphrase": {
            "politeness": "Please tell me: who paid {a} for the {item}, {b} or {c}?",
            "case_punctuation": "who paid {a} for the {item}, {b} or {c}",
        },
        "near-miss": {
            "swapped_roles": "Who paid {b} for the {item}, {a} or {c}?",
            "changed_name": "Who paid {d} for the {item}, {b} or {c}?",
        },
        "slots": [
            {"a": "Dana", "b": "Eli", "c": "Fay", "d": "Gus", "item": "tickets"},
            {"a": "Hana", "b": "Ivo", "c": "Jun", "d": "Kai", "item": "dinner"},
        ],
    },
    {
        "question": "What happens if I {act} my {acct} account?",
        "paraphrase": {
            "politeness": "Hello! What happens if I {act} my {acct} account?",
            "case_punctuation": "what happens if i {act} my {acct} account",
            "reworded": "What will happen if I {act} my {acct} account?",
        },
        "near-miss": {
            "negation": "What happens if I don't {act} my {acct} account?",
            "opposite": "What happens if I {anti} my {acct} account?",
        },
        "slots": [
            {"act": "close", "anti": "open", "acct": "savings"},
            {"act": "delete", "anti": "restore", "acct": "Google"},
            {"act": "freeze", "anti": "unfreeze", "acct": "credit"},
        ],
    },
    {
        "question": "Schedule a meeting with {a} on {day} at {t}",
        "paraphrase": {
            "politeness": "Please schedule a meeting with {a} on {day} at {t}",
            "reworded": "Set up a meeting with {a} on {day} at {t}",
            "case_punctuation": "schedule a meeting with {a} on {day} at {t}.",
            "reordered": "On {day} at {t}, schedule a meeting with {a}",
            "filler": "Schedule a meeting with {a} on {day} at {t} sharp",
        },
        "near-miss": {
            "changed_name": "Schedule a meeting with {b} on {day} at {t}",
            "changed_number": "Schedule a meeting with {a} on {day} at {u}",
            "negation": "Don't schedule a meeting with {a} on {day} at {t}",
        },
        "slots": [
            {"a": "Priya", "b": "Omar", "day": "Monday", "t": "10am", "u": "3pm"},
            {"a": "the CFO", "b": "the CTO", "day": "Thursday", "t": "9:00", "u": "16:00"},
        ],
    },
    {
        "question": "Is {x} heavier than {y}?",
        "paraphrase": {
            "politeness": "Is {x} heavier than {y}, please?",
            "case_punctuation": "is {x} heavier than {y}",
            "reworded": "Does {x} weigh more than {y}?",
        },
        "near-miss": {
            "swapped_roles": "Is {y} heavier than {x}?",
            "opposite": "Is {x} lighter than {y}?",
        },
        "slots": [
            {"x": "gold", "y": "lead"},
            {"x": "an elephant", "y": "a blue whale"},
            {"x": "ice", "y": "water"},
        ],
    },
    {
        "question": "Refund order {o} for {a}",
        "paraphrase": {
            "politeness": "Please refund order {o} for {a}",
            "case_punctuation": "refund order {o} for {a}.",
            "reworded": "Issue a refund on order {o} for {a}",
        },
        "near-miss": {
            "changed_number": "Refund order {p} for {a}",
            "changed_name": "Refund order {o} for {b}",
            "negation": "Do not refund order {o} for {a}",
        },
        "slots": [
            {"o": "#48213", "p": "#48231", "a": "Mrs Lee", "b": "Mrs Kim"},
            {"o": "A-1009", "p": "A-1090", "a": "Tom", "b": "Tim"},
        ],
    },
    {
        "question": "Is the {n}th amendment about {topic}?",
        "paraphrase": {
            "politeness": "Is the {n}th amendment about {topic}? Thank you",
            "case_punctuation": "is the {n}th amendment about {topic}",
        },
        "near-miss": {
            "changed_number": "Is the {m}th amendment about {topic}?",
            "negation": "Is the {n}th amendment not about {topic}?",
        },
        "slots": [
            {"n": "4", "m": "5", "topic": "searches"},
            {"n": "14", "m": "13", "topic": "equal protection"},
        ],
    },
    {
        "question": "Which is faster from {a} to {b}, the train or the plane?",
        "paraphrase": {
            "politeness": "Please, which is faster from {a} to {b}, the train or the plane?",
            "case_punctuation": "which is faster from {a} to {b} the train or the plane",
            "reworded": "Which is quicker from {a} to {b}, the train or the plane?",
        },
        "near-miss": {
            "swapped_roles": "Which is faster from {b} to {a}, the train or the plane?",
            "changed_name": "Which is faster from {a} to {c}, the train or the plane?",
            "opposite": "Which is cheaper from {a} to {b}, the train or the plane?",
        },
        "slots": [
            {"a": "Paris", "b": "London", "c": "Brussels"},
            {"a": "Tokyo", "b": "Osaka", "c": "Kyoto"},
        ],
    },
    {
        "question": "My {pet} ate {food}, is that dangerous?",
        "paraphrase": {
            "politeness": "Help please, my {pet} ate {food}, is that dangerous?",
            "case_punctuation": "my {pet} ate {food} is that dangerous",
            "reworded": "My {pet} ate {food}, is that harmful?",
        },
        "near-miss": {
            "negation": "My {pet} never ate {food}, is that dangerous?",
            "swapped_roles": "My {food} ate {pet}, is that dangerous?",
            "opposite": "My {pet} ate {food}, is that healthy?",
        },
        "slots": [
            {"pet": "dog", "food": "chocolate"},
            {"pet": "cat", "food": "lilies"},
            {"pet": "parrot", "food": "avocado"},
        ],
    },
    {
        "question": "Increase the {what} limit to {n}",
        "paraphrase": {
            "politeness": "Please increase the {what} limit to {n}",
            "case_punctuation": "increase the {what} limit to {n}.",
            "reworded": "Raise the {what} limit to {n}",
        },
        "near-miss": {
            "opposite": "Decrease the {what} limit to {n}",
            "changed_number": "Increase the {what} limit to {m}",
        },
        "slots": [
            {"what": "upload", "n": "50MB", "m": "500MB"},
            {"what": "rate", "n": "1000", "m": "100"},
        ],
    },
    {
        "question": "Does {a} report to {b}?",
        "paraphrase": {
            "politeness": "Quick question, does {a} report to {b}?",
            "case_punctuation": "does {a} report to {b}",
        },
        "near-miss": {
            "swapped_roles": "Does {b} report to {a}?",
            "changed_name": "Does {a} report to {c}?",
            "negation": "Does {a} no longer report to {b}?",
        },
        "slots": [
            {"a": "Maria", "b": "Ken", "c": "Luis"},
            {"a": "the support team", "b": "operations", "c": "engineering"},
        ],
    },
    {
        "question": "Buy {n} shares of {t} at market price",
        "paraphrase": {
            "politeness": "Please buy {n} shares of {t} at market price",
            "case_punctuation": "buy {n} shares of {t} at market price.",
            "reworded": "Purchase {n} shares of {t} at market price",
        },
        "near-miss": {
            "opposite": "Sell {n} shares of {t} at market price",
            "changed_number": "Buy {m} shares of {t} at market price",
            "changed_name": "Buy {n} shares of {u} at market price",
        },
        "slots": [
            {"n": "10", "m": "100", "t": "ACME", "u": "Globex"},
            {"n": "3", "m": "30", "t": "AAPL", "u": "MSFT"},
        ],
    },
    {
        "question": "Run the tests in {path} before the deploy",
        "paraphrase": {
            "politeness": "Please run the tests in {path} before the deploy",
            "case_punctuation": "run the tests in {path} before the deploy!",
        },
        "near-miss": {
            "changed_name": "Run the tests in {other} before the deploy",
            "opposite": "Run the tests in {path} after the deploy",
            "negation": "Don't run the tests in {path} before the deploy",
        },
        "slots": [
            {"path": "tests/unit", "other": "tests/e2e"},
            {"path": "src/api/v2", "other": "src/api/v1"},
        ],
    },
    {
        "question": "Is {n} a prime number?",
        "paraphrase": {
            "politeness": "Is {n} a prime number? Thanks!",
            "case_punctuation": "is {n} a prime number",
            "reworded": "Is {n} prime?",
            "reordered": "{n}: is it a prime number?",
        },
        "near-miss": {
            "changed_number": "Is {m} a prime number?",
            "negation": "Why is {n} not a prime number?",
        },
        "slots": [{"n": "97", "m": "91"}, {"n": "1,009", "m": "1,001"}, {"n": "2", "m": "1"}],
    },
    {
        "question": "Can {a} see the files {b} shared?",
        "paraphrase": {
            "politeness": "Please check: can {a} see the files {b} shared?",
            "case_punctuation": "can {a} see the files {b} shared",
        },
        "near-miss": {
            "swapped_roles": "Can {b} see the files {a} shared?",
            "negation": "Why can't {a} see the files {b} shared?",
            "changed_name": "Can {c} see the files {b} shared?",
        },
        "slots": [
            {"a": "Noor", "b": "Pete", "c": "Quinn"},
            {"a": "guest users", "b": "admins", "c": "contractors"},
        ],
    },
    {
        "question": "What is the boiling point of water at {h} meters?",
        "paraphrase": {
            "politeness": "What is the boiling point of water at {h} meters, please?",
            "case_punctuation": "what is the boiling point of water at {h} meters",
            "article_dropped": "What is boiling point of water at {h} meters?",
            "reordered": "At {h} meters, what is the boiling point of water?",
        },
        "near-miss": {
            "changed_number": "What is the boiling point of water at {k} meters?",
            "opposite": "What is the freezing point of water at {h} meters?",
        },
        "slots": [{"h": "2,000", "k": "4,000"}, {"h": "0", "k": "8,848"}],
    },
    {
        "question": "Add {a} to the {grp} group",
        "paraphrase": {
            "politeness": "Please add {a} to the {grp} group",
            "case_punctuation": "add {a} to the {grp} group.",
        },
        "near-miss": {
            "opposite": "Remove {a} from the {grp} group",
            "changed_name": "Add {b} to the {grp} group",
            "swapped_roles": "Add the {grp} group to {a}",
        },
        "slots": [
            {"a": "Zoe", "b": "Yuri", "grp": "admins"},
            {"a": "bot_42", "b": "bot_24", "grp": "deployers"},
        ],
    },
    {
        "question": "Should I wear a jacket if it is {n} degrees?",
        "paraphrase": {
            "politeness": "Should I wear a jacket if it is {n} degrees? thanks",
            "case_punctuation": "should i wear a jacket if it is {n} degrees",
            "contraction": "Should I wear a jacket if it's {n} degrees?",
            "reordered": "If it is {n} degrees, should I wear a jacket?",
        },
        "near-miss": {
            "changed_number": "Should I wear a jacket if it is {m} degrees?",
            "negation": "Should I not wear a jacket if it is {n} degrees?",
        },
        "slots": [{"n": "10", "m": "30"}, {"n": "-5", "m": "5"}],
    },
    {
        "question": "Is {a} older than {b}?",
        "paraphrase": {
            "politeness": "Is {a} older than {b}, please?",
            "case_punctuation": "is {a} older than {b}",
        },
        "near-miss": {
            "swapped_roles": "Is {b} older than {a}?",
            "opposite": "Is {a} younger than {b}?",
            "changed_name": "Is {a} older than {c}?",
        },
        "slots": [
            {"a": "Rome", "b": "Athens", "c": "Jerusalem"},
            {"a": "Python", "b": "Java", "c": "Ruby"},
        ],
    },
    {
        "question": 'Translate "{s}" into {lang}',
        "paraphrase": {
            "politeness": 'Please translate "{s}" into {lang}',
            "case_punctuation": 'translate "{s}" into {lang}.',
        },
        "near-miss": {
            "changed_name": 'Translate "{s}" into {other}',
            "changed_number": 'Translate "{t}" into {lang}',
        },
        "slots": [
            {"s": "good morning", "t": "good evening", "lang": "French", "other": "Spanish"},
            {"s": "I have 2 cats", "t": "I have 3 cats", "lang": "German", "other": "Dutch"},
        ],
    },
]


def pairs() -> Iterator[dict[str, str]]:
    for scenario in SCENARIOS:
        for slots in scenario["slots"]:
            question = scenario["question"].format(**slots)
            for label in ("paraphrase", "near-miss"):
                for kind, template in scenario[label].items():
                    yield {
                        "cached": question,
                        "asked": template.format(**slots),
                        "label": label,
                        "kind": kind,
                    }


def main() -> None:
    lines = [json.dumps(pair, ensure_ascii=False) for pair in pairs()]
    SET.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} pairs written to {SET}")


if __name__ == "__main__":
    main()
