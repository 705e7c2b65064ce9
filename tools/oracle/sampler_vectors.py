#!/usr/bin/python3
"""Reference token streams for the classic sampling law (shared/SAMPLING.md), computed with numpy.

This is its own implementation of the law, written from SAMPLING.md (it does not import the shared
sampler_law.py). Each case is one request: a seed, sampling parameters, tokens already generated
(prior_tokens, they count for the penalties), and `steps` consecutive sample() calls on one request
stream; every sampled token is counted before the next call, as the server's Generator does. Row i of a
case is rows[i % len(rows)].

Writes tests/fixtures/sampling/sampler_cases.jsonl, logprobs.jsonl (log-softmax and top-n) and
draw_rule.jsonl (step 9 alone, at u values exactly on the cumulative boundaries).
Logits are stored exactly: explicit rows hold multiples of 2^-10 (exact in float32 and in short decimal),
null stands for -inf; large rows are "generated" from a PCG64 stream that the C++ test regenerates:
  row[i] = float32(((u_i * 16) - 8) * scale), u = default_rng(gen_seed).random(vocab), last masked_tail = -inf
(both products are by powers of two, so they are exact and no fused multiply-add can change them).

numpy's float64 exp is not the C library's exp on every host (on AVX512F hosts numpy uses its own SIMD
exp, which differs from glibc's in the last bit for about a quarter of inputs). The law is numpy's; so
that the fixture tests the port and not that last bit, every case is also run with the C library's exp
(math.exp) and a case whose tokens would differ is rejected and replaced. The recorded probabilities and
log-probabilities use the C library's exp and log (the port's), so the tests compare them bit for bit.

Run with Debian's python3-numpy: /usr/bin/python3 tools/oracle/sampler_vectors.py
"""
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, "..", "..", "tests", "fixtures", "sampling")
STEP = 1.0 / 1024


class Invalid(Exception):
    pass


def libm_exp(x):
    return np.fromiter((math.exp(v) for v in x), dtype=np.float64, count=len(x))


def kept_candidates(z, temperature, top_k, top_p, min_p, exp):
    """Steps 4-8: full-vocabulary probabilities, the (p desc, id asc) order, and the kept prefix."""
    z = z / temperature
    e = exp(z - np.max(z))
    total = 0.0
    for v in e.tolist():  # sequential, index order
        total += v
    p = e / total
    order = np.argsort(-p, kind="stable")  # stable: equal p keep ascending id
    ps = p[order]
    n = len(p)
    keep = n
    if 0 < top_k < n:
        keep = min(keep, top_k)
    if top_p < 1.0:
        cum = 0.0
        reached = n
        for i, v in enumerate(ps.tolist()):
            cum += v
            if cum >= top_p:
                reached = i + 1
                break
        keep = min(keep, reached)
    if min_p > 0.0:
        threshold = min_p * ps[0]
        keep = min(keep, max(1, int(np.count_nonzero(p >= threshold))))
    return order[:keep], ps[:keep]


def sample_once(row, counts, prm, rng, exp):
    """One token by the law; returns (token, kept ids, kept p) and consumes rng only on a draw."""
    z = np.asarray(row, dtype=np.float32).astype(np.float64)
    if np.isnan(z).any() or (z == np.inf).any() or (z == -np.inf).all():
        raise Invalid()
    for t, c in counts.items():
        z[t] = z[t] - (prm["presence_penalty"] * (1.0 if c > 0 else 0.0) + prm["frequency_penalty"] * c)
    if prm["temperature"] == 0.0 or prm["top_k"] == 1:
        best = 0
        for i in range(1, len(z)):
            if z[i] > z[best]:
                best = i
        return best, None, None
    ids, ps = kept_candidates(z, prm["temperature"], prm["top_k"], prm["top_p"], prm["min_p"], exp)
    return int(ids[draw_index(ps, rng.random())]), ids, ps


def draw_index(ps, u):
    """Step 9: the first i with c[i] > u * c[n-1] (c the sequential cumulative sum), else n - 1."""
    c = []
    acc = 0.0
    for v in ps.tolist():
        acc += v
        c.append(acc)
    target = u * c[-1]
    for i, ci in enumerate(c):
        if ci > target:
            return i
    return len(c) - 1


def generated_row(gen):
    u = np.random.default_rng(gen["seed"]).random(gen["vocab"])
    row = (((u * 16.0) - 8.0) * gen["scale"]).astype(np.float32)
    if gen["masked_tail"]:
        row[-gen["masked_tail"]:] = -np.inf
    return row


def case_rows(case):
    if "generated" in case:
        return [generated_row(case["generated"])]
    return [np.array([-np.inf if v is None else v for v in r], dtype=np.float32) for r in case["logits"]]


def run_case(case, exp):
    rows = case_rows(case)
    rng = np.random.default_rng(case["seed"])
    counts = {}
    for t in case["prior_tokens"]:
        counts[t] = counts.get(t, 0) + 1
    tokens, first = [], None
    draws = 0
    for step in range(case["steps"]):
        before = rng.bit_generator.state["state"]["state"]
        tok, ids, ps = sample_once(rows[step % len(rows)], counts, case["params"], rng, exp)
        draws += rng.bit_generator.state["state"]["state"] != before
        if step == 0:
            first = (ids, ps)
        tokens.append(tok)
        counts[tok] = counts.get(tok, 0) + 1
    return tokens, draws, first


def finish(case):
    """Fills the expected outputs, or returns None when the case is sensitive to the last bit of exp."""
    tokens, draws, _ = run_case(case, np.exp)
    libm_tokens, _, (ids, ps) = run_case(case, libm_exp)
    if libm_tokens != tokens:
        return None
    case["tokens"] = tokens
    case["draws"] = int(draws)
    if ids is not None:
        # The kept candidates of the first call (p on the full vocabulary), the first 24 of them. p is
        # from the C library's exp, which the port uses, so the test can compare every bit of the
        # float64 pipeline (penalties, division, sums) and not just the resulting tokens.
        case["first_kept"] = {"count": int(len(ids)), "ids": [int(i) for i in ids[:24]],
                              "p": [float(v) for v in ps[:24]]}
    return case


def quantise(x):
    return np.clip(np.round(np.asarray(x) / STEP) * STEP, -32.0, 32.0)


def encode(row):
    return [None if v == -np.inf else float(v) for v in row]


def random_row(g, vocab):
    kind = g.integers(0, 4)
    sigma = [0.5, 2.0, 4.0, 8.0][kind]
    row = quantise(g.normal(0.0, sigma, vocab))
    if vocab > 2 and g.random() < 0.5:  # ties, including ties at the maximum
        n = int(g.integers(1, max(2, vocab // 3)))
        src = g.integers(0, vocab, n)
        dst = g.integers(0, vocab, n)
        row[dst] = row[src]
        row[g.integers(0, vocab)] = row.max()
    if vocab > 1 and g.random() < 0.4:  # masked tokens, never all of them
        n = int(g.integers(1, vocab))
        row[g.choice(vocab, n, replace=False)] = -np.inf
        if np.isneginf(row).all():
            row[int(g.integers(0, vocab))] = 0.0
    return row


def random_params(g):
    return {
        "temperature": float(g.choice([0.0, 0.25, 0.7, 1.0, 1.0, 1.3, 2.0])),
        "top_k": int(g.choice([0, 0, 0, 1, 2, 3, 10, 40])),
        "top_p": float(g.choice([1.0, 1.0, 0.99, 0.9, 0.5, 0.2, 0.0])),
        "min_p": float(g.choice([0.0, 0.0, 0.02, 0.1, 0.5])),
        "presence_penalty": float(g.choice([0.0, 0.0, 0.4, -0.5, 2.0])),
        "frequency_penalty": float(g.choice([0.0, 0.0, 0.3, -0.25, 1.5])),
    }


def params(**kw):
    p = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "presence_penalty": 0.0,
         "frequency_penalty": 0.0}
    p.update(kw)
    return p


def explicit_cases():
    q4, q3 = math.log(0.4), math.log(0.3)
    worked = [float(np.float32(q4)), float(np.float32(q3))] + [float(np.float32(math.log(0.3 / 62)))] * 62
    cases = [
        # SAMPLING.md step 7: .4, .3, .3/62 x 62 with top_k 2, top_p .5 keeps both, at .5714 / .4286.
        {"name": "worked_example_step7", "logits": [worked], "params": params(top_k=2, top_p=0.5), "seed": 7,
         "prior_tokens": [], "steps": 64},
        # Every p equal: order is by id alone, and top_p stops exactly on the boundary (cum .5 >= .5).
        {"name": "all_equal_top_p_boundary", "logits": [[0.0] * 4], "params": params(top_p=0.5), "seed": 3,
         "prior_tokens": [], "steps": 24},
        {"name": "all_equal_top_p_past_boundary", "logits": [[0.0] * 4], "params": params(top_p=0.5000001),
         "seed": 3, "prior_tokens": [], "steps": 24},
        {"name": "all_equal_min_p_one", "logits": [[1.5] * 5], "params": params(min_p=1.0), "seed": 11,
         "prior_tokens": [], "steps": 24},
        {"name": "single_finite_rest_masked", "logits": [[None, None, 2.0, None]], "params": params(),
         "seed": 5, "prior_tokens": [], "steps": 8},
        {"name": "greedy_ties_lowest_id", "logits": [[1.0, 3.0, None, 3.0]], "params": params(temperature=0.0),
         "seed": 1, "prior_tokens": [], "steps": 4},
        {"name": "top_k_one_is_greedy", "logits": [[1.0, 3.0, 2.0, 3.0]], "params": params(top_k=1), "seed": 1,
         "prior_tokens": [], "steps": 4},
        # Greedy with penalties: counting each emitted token moves the argmax from token to token.
        {"name": "greedy_with_penalties", "logits": [[1.0, 3.0, 2.5, 3.0]],
         "params": params(temperature=0.0, presence_penalty=0.5, frequency_penalty=0.25), "seed": 1,
         "prior_tokens": [], "steps": 12},
        {"name": "top_p_zero_keeps_one", "logits": [[0.5, 2.0, 2.0, -1.0]], "params": params(top_p=0.0),
         "seed": 9, "prior_tokens": [], "steps": 8},
        {"name": "vocab_of_one", "logits": [[0.25]], "params": params(), "seed": 9, "prior_tokens": [], "steps": 3},
        penalty_rounding_case(),
    ]
    return cases


def penalty_rounding_case():
    """presence + frequency * count with the product rounded first (numpy's two arrays), for a count
    where a fused multiply-add (one rounding) would give a different penalty; token 0 has logit 0, so
    the difference reaches its probability and the exact comparison of p sees it."""
    from fractions import Fraction
    presence, frequency = 0.4, 0.3
    for count in range(1, 200):
        separate = presence * 1.0 + frequency * count
        fused = float(Fraction(frequency) * count + Fraction(presence))  # correctly rounded, as an FMA
        if separate != fused:
            break
    else:
        raise AssertionError("no count separates FMA from the law's rounding")
    return {"name": "penalty_products_round_separately", "logits": [[0.0, -1.0, -0.5, -2.0, -3.0, -0.25, -1.5, -4.0]],
            "params": params(presence_penalty=presence, frequency_penalty=frequency), "seed": 17,
            "prior_tokens": [0] * count, "steps": 4}


def random_cases(count, g):
    out, rejected = [], 0
    vocabs = [2, 3, 5, 8, 17, 64, 100, 257, 600]
    while len(out) < count:
        vocab = int(g.choice(vocabs))
        nrows = int(g.choice([1, 1, 2, 3]))
        prm = random_params(g)
        prior = [int(t) for t in g.integers(0, vocab, int(g.choice([0, 0, 3, 12])))]
        case = {"name": "random_%03d" % len(out), "logits": [encode(random_row(g, vocab)) for _ in range(nrows)],
                "params": prm, "seed": int(g.integers(0, 2**64 - 1, dtype=np.uint64, endpoint=True)),
                "prior_tokens": prior, "steps": int(g.choice([8, 12, 16]))}
        case = finish(case)
        if case is not None:
            out.append(case)
        else:
            rejected += 1
    print("random cases: %d kept, %d rejected as sensitive to the last bit of exp" % (len(out), rejected),
          file=sys.stderr)
    return out


def large_cases(g):
    out = []
    shapes = [
        (32000, 1.0, 0, params(top_p=0.9)),
        (32000, 2.0, 0, params(temperature=0.7, top_k=50)),
        (32000, 4.0, 0, params(temperature=0.7, top_p=0.95, min_p=0.05)),
        (32000, 1.0, 256, params(top_p=0.5, presence_penalty=1.0, frequency_penalty=0.5)),
        (151936, 1.0, 1024, params(temperature=1.0)),
        (151936, 2.0, 1024, params(temperature=0.6, top_k=20, top_p=0.95)),
        (151936, 4.0, 0, params(temperature=0.8, top_p=0.8)),
        (151936, 4.0, 0, params(temperature=1.0, min_p=0.1)),
        (151936, 8.0, 64, params(temperature=0.9, top_p=0.99, frequency_penalty=2.0)),
        (151936, 4.0, 0, params(temperature=0.0)),
    ]
    for i, (vocab, scale, masked, prm) in enumerate(shapes):
        while True:
            case = {"name": "large_%02d_v%d" % (i, vocab),
                    "generated": {"seed": int(g.integers(0, 2**32)), "vocab": vocab, "scale": scale,
                                  "masked_tail": masked},
                    "params": prm, "seed": int(g.integers(0, 2**64 - 1, dtype=np.uint64, endpoint=True)),
                    "prior_tokens": [], "steps": 6}
            case = finish(case)
            if case is not None:
                out.append(case)
                break
    return out


def check_worked_example(case):
    c = np.cumsum(case["first_kept"]["p"])
    norm = np.array(case["first_kept"]["p"]) / c[-1]
    assert case["first_kept"]["ids"] == [0, 1], case["first_kept"]
    assert abs(norm[0] - 4 / 7) < 1e-6 and abs(norm[1] - 3 / 7) < 1e-6, norm
    assert set(case["tokens"]) == {0, 1}, case["tokens"]


def log_softmax(z):
    m = np.max(z)
    total = 0.0
    for v in libm_exp(z - m).tolist():  # the C library's exp, as in the kept p above
        total += v
    return z - m - math.log(total)


def logprob_cases(g):
    out = []
    rows = [[0.0] * 6, [1.0, 3.0, None, 3.0, 2.0], [None, 0.5, None]]
    rows += [encode(random_row(g, int(v))) for v in g.choice([5, 17, 64, 257, 1000], 12)]
    for i, r in enumerate(rows):
        z = np.array([-np.inf if v is None else v for v in r], dtype=np.float32).astype(np.float64)
        lp = log_softmax(z)
        order = np.argsort(-lp, kind="stable")
        n = int(min(len(r), [1, 5, 20][i % 3]))
        out.append({"name": "logprobs_%02d" % i, "logits": r, "top_n": n,
                    "top_ids": [int(t) for t in order[:n]],
                    "top_logprobs": [None if lp[t] == -np.inf else float(lp[t]) for t in order[:n]],
                    "logprobs": [None if v == -np.inf else float(v) for v in lp] if len(r) <= 64 else None})
    return out


def draw_rule_cases():
    """u values that land exactly on a cumulative boundary (where > and >= differ), u = 0, the largest u
    below 1, and zero-probability tails; random draws cannot reach these."""
    largest_u = 1.0 - 2.0**-53
    lists = [[0.25] * 4, [0.5, 0.25, 0.25], [0.4, 0.3], [0.5, 0.5, 0.0, 0.0], [1.0], [0.375, 0.375, 0.125, 0.125],
             [0.3, 0.3, 0.2, 0.1, 0.1], [2.0**-60, 2.0**-60]]
    out = []
    for ps in lists:
        c = np.cumsum(ps)
        us = sorted(set([0.0, largest_u, 0.5, 0.25, 0.75, 0.1, 0.9] + [float(x / c[-1]) for x in c if x / c[-1] < 1]))
        for u in us:
            out.append({"p": ps, "u": u, "index": draw_index(np.array(ps), u)})
    return out


def main():
    g = np.random.default_rng(20240602)
    cases = []
    for c in explicit_cases():
        done = finish(c)
        assert done is not None, c["name"]
        cases.append(done)
    check_worked_example(cases[0])
    cases += random_cases(240, g)
    cases += large_cases(g)

    # Every part of the law must matter somewhere in this file, or a port that skips it would pass.
    def differs(case, **off):
        alt = dict(case, params=dict(case["params"], **off))
        return run_case(alt, np.exp)[0] != case["tokens"]
    pen = [c for c in cases if c["params"]["presence_penalty"] or c["params"]["frequency_penalty"]]
    print("penalty cases: %d, changed by penalties: %d" % (
        len(pen), sum(differs(c, presence_penalty=0.0, frequency_penalty=0.0) for c in pen)), file=sys.stderr)
    for key, off in (("top_k", 0), ("top_p", 1.0), ("min_p", 0.0)):
        on = [c for c in cases if c["params"][key] != off and c["params"]["temperature"] != 0 and c["params"]["top_k"] != 1]
        print("%s cases: %d, changed by %s: %d" % (key, len(on), key, sum(differs(c, **{key: off}) for c in on)),
              file=sys.stderr)

    with open(os.path.join(FIXTURES, "sampler_cases.jsonl"), "w") as f:
        for c in cases:
            f.write(json.dumps(c, separators=(",", ":"), allow_nan=False) + "\n")
    with open(os.path.join(FIXTURES, "logprobs.jsonl"), "w") as f:
        for c in logprob_cases(g):
            f.write(json.dumps(c, separators=(",", ":"), allow_nan=False) + "\n")
    with open(os.path.join(FIXTURES, "draw_rule.jsonl"), "w") as f:
        for c in draw_rule_cases():
            f.write(json.dumps(c, separators=(",", ":"), allow_nan=False) + "\n")
    print("numpy %s: wrote %d sampler cases" % (np.__version__, len(cases)), file=sys.stderr)


if __name__ == "__main__":
    main()
