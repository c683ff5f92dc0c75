"""The semantic cache's gate on the labelled set (``cache_pairs.jsonl``): for an embedder
and a threshold, the share of paraphrases that would be hits and the share of
near-misses that would be (false) hits, with plain similarity and with the strict gate,
then the gate's kept share of plain similarity's paraphrase hits. Targets: no false
hit with the gate; at least 90 % of plain similarity's paraphrase hits kept.

A pair is a hit when the cosine of its two questions' vectors reaches the threshold
(and, gated, when ``inference.cache.gate`` lets it through), as a semantic lookup with
one cached question decides. Two embedders run offline: ``wordbag`` is the fakes'
(``tests.fakes.base.fake_vector``, 64 buckets of CRC-32-hashed words, what the tests'
gateway gets), ``trigram`` hashes character trigrams into 256 buckets (it sees word
forms and some order, as a subword model does). ``--gateway URL --model NAME`` measures
a configured embedder instead, through a running gateway's ``/v1/embeddings`` (billed
to the key of ``--api-key`` and the user ``cache-gate-bench``, as any embedding request).

    .venv/bin/python -m bench.features.cache_gate [--embedder wordbag] [--threshold 0.9]
    .venv/bin/python -m bench.features.cache_gate --gateway http://localhost:8000 \
        --model embed-small --api-key sk-... --threshold 0.95
"""

import argparse
import json
import math
import zlib
from collections import Counter
from collections.abc import Callable, Sequence

import openai

from bench.features.cache_pairs import SET
from inference.cache.gate import disagreement
from tests.fakes.base import fake_vector

type Embedder = Callable[[str], list[float]]
type Vectors = dict[str, list[float]]
BATCH = 64  # texts per embedding request to a gateway


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


def embedded(texts: Sequence[str], embedder: Embedder) -> Vectors:
    return {text: embedder(text) for text in texts}


def embedded_by_gateway(texts: Sequence[str], url: str, model: str, api_key: str) -> Vectors:
    client = openai.OpenAI(base_url=f"{url.rstrip('/')}/v1", api_key=api_key, max_retries=2)
    vectors: Vectors = {}
    for start in range(0, len(texts), BATCH):
        batch = list(texts[start : start + BATCH])
        answer = client.embeddings.create(model=model, input=batch, user="cache-gate-bench")
        for text, item in zip(batch, sorted(answer.data, key=lambda d: d.index), strict=True):
            vectors[text] = item.embedding
    return vectors


def report(pairs: list[dict[str, str]], vectors: Vectors, threshold: float) -> list[str]:
    plain: Counter[tuple[str, str]] = Counter()
    gated: Counter[tuple[str, str]] = Counter()
    totals: Counter[tuple[str, str]] = Counter()
    for pair in pairs:
        where = (pair["label"], pair["kind"])
        totals[where] += 1
        if cosine(vectors[pair["cached"]], vectors[pair["asked"]]) < threshold:
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
    parser.add_argument("--gateway", help="a running gateway's URL (with --model)")
    parser.add_argument("--model", help="the embedder's name in that gateway's config")
    parser.add_argument("--api-key", default="any", help="the gateway key to send")
    options = parser.parse_args()
    if bool(options.gateway) != bool(options.model):
        parser.error("--gateway and --model go together")
    pairs = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line]
    labels = Counter(pair["label"] for pair in pairs)
    print(
        f"{len(pairs)} pairs: {labels['paraphrase']} paraphrases, "
        f"{labels['near-miss']} near-misses ({SET.name})"
    )
    print("by kind: plain similarity's hits -> the gate's hits / pairs")
    texts = sorted({pair[side] for pair in pairs for side in ("cached", "asked")})
    if options.gateway:
        measured = {
            f"{options.model} at {options.gateway}": embedded_by_gateway(
                texts, options.gateway, options.model, options.api_key
            )
        }
    else:
        names = options.embedder or list(EMBEDDERS)
        measured = {name: embedded(texts, EMBEDDERS[name]) for name in names}
    for name, vectors in measured.items():
        print(f"embedder {name}")
        for threshold in options.threshold or THRESHOLDS:
            print("\n".join(report(pairs, vectors, threshold)))


if __name__ == "__main__":
    main()
