"""The semantic cache's gate on the labelled set (``cache_pairs.jsonl``): for an embedder
and a threshold, the share of paraphrases that would be hits and the share of
near-misses that would be (false) hits, with plain similarity and with the strict gate,
then the gate's kept share of plain similarity's paraphrase hits. Targets: no false
hit with the gate; at least 90 % of plain similarity's paraphrase hits kept.

A pair is a hit when the cosine of its two questions' vectors reaches the threshold
(and, gated, when ``inference.cache.gate`` lets it through), as a semantic lookup with
one cached question decides. The embedders run offline: ``wordbag`` is the fakes'
(``tests.fakes.base.fake_vector``, 64 buckets of CRC-32-hashed words, what the tests'
gateway gets), ``trigram`` hashes character trigrams into 256 buckets (it sees word
forms and some order, as a subword model does).

    .venv/bin/python -m bench.features.cache_gate [--embedder wordbag] [--threshold 0.9]
"""

import argparse
import json
import math
import zlib
from collections import Counter
from collections.abc import Callable

from bench.features.cache_pairs import SET
from inference.cache.gate import disagreement
from tests.fakes.base import fake_vector

type Embedder = Callable[[str], list[float]]


def trigrams(text: str, dimensions: int = 256) -> list[float]:
    vector = [0.0] * dimensions
    padded = f"  {' '.join(text.lower().split())} "
    for index in range(len(padded) - 2):
        vector[zlib.crc32(padded[index : index + 3].encode()) % dimensions] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


EMBEDDERS: dict[str, Embedder] = {"wordbag": fake_vector, "trigram": trigrams}
THRESHOLDS = (0.8, 0.85, 0.9, 0.95)


def cosine(first: list[float], second: list[float]) -> float:
    return math.fsum(a * b for a, b in zip(first, second, strict=True))


def report(pairs: list[dict[str, str]], embedder: Embedder, threshold: float) -> list[str]:
    plain: Counter[tuple[str, str]] = Counter()
    gated: Counter[tuple[str, str]] = Counter()
    totals: Counter[tuple[str, str]] = Counter()
    for pair in pairs:
        where = (pair["label"], pair["kind"])
        totals[where] += 1
        if cosine(embedder(pair["cached"]), embedder(pair["asked"])) < threshold:
            continue
        plain[where] += 1
        if disagreement(pair["cached"], pair["asked"]) is None:
            gated[where] += 1

    def rate(counts: Counter[tuple[str, str]], label: str) -> str:
        hits = sum(n for (which, _), n in counts.items() if which == label)
        total = sum(n for (which, _), n in totals.items() if which == label)
        return f"{hits:3d}/{total} = {100 * hits / total:5.1f} %"

    plain_hits = sum(n for (label, _), n in plain.items() if label == "paraphrase")
    gated_hits = sum(n for (label, _), n in gated.items() if label == "paraphrase")
    kept = f"{100 * gated_hits / plain_hits:5.1f} %" if plain_hits else "  n/a"
    lines = [
        f"  threshold {threshold:.2f}",
        f"    paraphrase hits     plain {rate(plain, 'paraphrase')}   "
        f"gated {rate(gated, 'paraphrase')}   kept {kept}",
        f"    near-miss hits      plain {rate(plain, 'near-miss')}   "
        f"gated {rate(gated, 'near-miss')}",
    ]
    for label in ("near-miss", "paraphrase"):
        kinds = sorted(kind for which, kind in totals if which == label)
        lines.append(
            f"    {label:<10} by kind  "
            + ", ".join(
                f"{kind} {plain[label, kind]}->{gated[label, kind]}/{totals[label, kind]}"
                for kind in kinds
            )
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), action="append")
    parser.add_argument("--threshold", type=float, action="append")
    options = parser.parse_args()
    pairs = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line]
    labels = Counter(pair["label"] for pair in pairs)
    print(
        f"{len(pairs)} pairs: {labels['paraphrase']} paraphrases, "
        f"{labels['near-miss']} near-misses ({SET.name})"
    )
    print("by kind: plain similarity's hits -> the gate's hits / pairs")
    for name in options.embedder or list(EMBEDDERS):
        print(f"embedder {name}")
        for threshold in options.threshold or THRESHOLDS:
            print("\n".join(report(pairs, EMBEDDERS[name], threshold)))


if __name__ == "__main__":
    main()
