"""Exact and near-duplicate dedup plus holdout decontamination of the lake's candidates.

WIP core: normalization, tokens, shingle hashes, one-permutation MinHash.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# --- normalization ----------------------------------------------------------------------

_DQ = r'"(?:\\.|[^"\\\n])*"'
_SQ = r"'(?:\\.|[^'\\\n])*'"
_BLOCK = r"/\*[\s\S]*?\*/"
# Group 1 is a string literal (kept: a `//` inside one is not a comment); any other match
# is a comment and becomes one space, as the compilers see it.
_C_COMMENTS = re.compile(rf"({_DQ})|//[^\n]*|{_BLOCK}")
_CPP_COMMENTS = re.compile(rf"({_DQ}|'(?:\\.|[^'\\\n])')|//[^\n]*|{_BLOCK}")
_PY_COMMENTS = re.compile(rf"(\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|{_DQ}|{_SQ})|#[^\n]*")
_ASM_COMMENTS = re.compile(rf"({_DQ})|[#;][^\n]*|{_BLOCK}")
COMMENTS: dict[str, re.Pattern[str]] = {
    # Verilog's ' starts sized literals (4'd9), never a character literal.
    "rtl": _C_COMMENTS,
    "cuda": _CPP_COMMENTS,
    "embedded": _CPP_COMMENTS,
    "ascendc": _CPP_COMMENTS,
    "triton": _PY_COMMENTS,
    "cad": _PY_COMMENTS,
    # NASM comments start with ';', GAS ones with '#'. GAS also reads ';' as a statement
    # separator, but gcc never emits one, so folding it costs little.
    "x86asm": _ASM_COMMENTS,
}


def _keep_strings(m: re.Match[str]) -> str:
    return m.group(1) or " "


def strip_comments(code: str, domain: str) -> str:
    pattern = COMMENTS.get(domain, _C_COMMENTS)
    return pattern.sub(_keep_strings, code)


def normalize(code: str, domain: str) -> str:
    """Comments folded to a space per the domain's language, whitespace runs to one space."""
    return " ".join(strip_comments(code, domain).split())


def exact_key(code: str, domain: str) -> str:
    return hashlib.sha256(normalize(code, domain).encode("utf-8", "surrogatepass")).hexdigest()


# --- tokens -----------------------------------------------------------------------------

# Identifier/number runs (non-ASCII bytes count as word bytes) or one punctuation byte:
# `a<=b` and `a <= b` give the same tokens. The numpy tokenizer below splits bytes by the
# same classes; tests hold the two to the same spans.
_WORD_BYTES = b"A-Za-z0-9_$\x80-\xff"
TOKEN = re.compile(rb"[" + _WORD_BYTES + rb"]+|[^\s" + _WORD_BYTES + rb"]")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def tokens(text: str) -> list[str]:
    return [t.decode("utf-8", "surrogatepass") for t in TOKEN.findall(_encode(text))]


_CLASS = np.full(256, 2, np.uint8)  # 0 space, 1 word, 2 punctuation
_CLASS[[9, 10, 11, 12, 13, 32]] = 0
for _lo, _hi in ((48, 57), (65, 90), (97, 122), (128, 255)):
    _CLASS[_lo : _hi + 1] = 1
_CLASS[[ord("_"), ord("$")]] = 1

_U64 = np.uint64
_B = 0x100000001B3  # odd: invertible mod 2**64
_B_INV = pow(_B, -1, 2**64)


@functools.lru_cache(maxsize=4)
def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """B**i and B**-i mod 2**64 for i < n."""
    pw = np.full(n, _B, np.uint64)
    pw[0] = 1
    inv = np.full(n, _B_INV, np.uint64)
    inv[0] = 1
    with np.errstate(over="ignore"):
        return np.cumprod(pw, dtype=np.uint64), np.cumprod(inv, dtype=np.uint64)


def _fmix(h: np.ndarray) -> np.ndarray:
    """murmur3's 64-bit finalizer, in place."""
    h ^= h >> _U64(33)
    h *= _U64(0xFF51AFD7ED558CCD)
    h ^= h >> _U64(33)
    h *= _U64(0xC4CEB9FE1A85EC53)
    h ^= h >> _U64(33)
    return h


def token_spans(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) byte offsets of every token in a uint8 buffer."""
    cls = _CLASS[buf]
    word = cls == 1
    punct = cls == 2
    starts = punct.copy()
    starts[0] |= word[0]
    starts[1:] |= word[1:] & ~word[:-1]
    ends = punct
    ends[:-1] |= word[:-1] & ~word[1:]
    ends[-1] |= word[-1]
    return np.flatnonzero(starts), np.flatnonzero(ends) + 1


def token_hashes(texts: Sequence[str], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """64-bit hashes of every token of every text, and each text's first token index
    (length n + 1). Texts are tokenized as they are (strip comments first)."""
    joined = "\n".join(texts)
    if joined.isascii():
        data = joined.encode("ascii")
        lens = np.fromiter(map(len, texts), np.int64, len(texts))
    else:
        parts = [_encode(t) for t in texts]
        data = b"\n".join(parts)
        lens = np.fromiter(map(len, parts), np.int64, len(parts))
    doc_starts = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(lens + 1, out=doc_starts[1:])
    if not data:
        return np.zeros(0, np.uint64), np.zeros(len(texts) + 1, np.int64)
    buf = np.frombuffer(data, np.uint8)
    ts, te = token_spans(buf)
    pw, inv = _powers(_next_pow2(len(buf) + 1))
    acc = np.empty(len(buf) + 1, np.uint64)
    acc[0] = 0
    with np.errstate(over="ignore"):
        np.multiply(buf, pw[: len(buf)], out=acc[1:])
        acc[1:] += pw[: len(buf)]  # byte + 1: a NUL byte still counts
        np.cumsum(acc, out=acc)
        h = acc[te] - acc[ts]
        h *= inv[ts]
        h ^= _U64(seed * 0x9E3779B97F4A7C15 % 2**64)
    _fmix(h)
    first = np.searchsorted(ts, doc_starts)
    return h, first


def _next_pow2(n: int) -> int:
    return 1 << max(10, (n - 1).bit_length())


def _shingle_multipliers(k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, k, 0x5EED])
    return rng.integers(1, 2**63, k, dtype=np.uint64) * _U64(2) + _U64(1)


# A document with no token at all still gets one shingle, this one.
_EMPTY = np.uint64(0x8F1BBCDCCA62C1D6)


def shingle_hashes(
    tok: np.ndarray, first: np.ndarray, k: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of every k-token window of every document, and each document's offset into
    them (length n + 1). A document shorter than k gives one shingle of all its tokens, an
    empty one the constant `_EMPTY`: every document has at least one shingle."""
    n = len(first) - 1
    counts = np.diff(first)
    per_doc = np.maximum(counts - k + 1, 1)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(per_doc, out=offsets[1:])
    mult = _shingle_multipliers(k, seed)
    with np.errstate(over="ignore"):
        if len(tok) >= k:
            m = len(tok) - k + 1
            acc = tok[:m] * mult[0]
            for j in range(1, k):
                acc += tok[j : j + m] * mult[j]
            # window i is a shingle when it ends inside the document it starts in
            doc_end = np.repeat(first[1:], counts)[:m]
            windows = acc[np.arange(k, m + k) <= doc_end]
        else:
            windows = np.zeros(0, np.uint64)
        short = np.flatnonzero(counts < k)
        if len(short):
            out = np.empty(int(offsets[-1]), np.uint64)
            out[np.repeat(counts >= k, per_doc)] = windows
            acc = np.zeros(len(short), np.uint64)
            for j in range(k - 1):
                has = counts[short] > j
                acc[has] += tok[first[short[has]] + j] * mult[j]
            acc[counts[short] == 0] = _EMPTY
            out[offsets[:-1][short]] = acc
        else:
            out = windows
        _fmix(out)
    return out, offsets


_MAX_PROBES = 256


@functools.lru_cache(maxsize=8)
def _probes(num_perm: int, seed: int) -> np.ndarray:
    return np.random.default_rng([seed, num_perm, 0xD0E5]).integers(
        0, num_perm, (_MAX_PROBES, num_perm), dtype=np.int64
    )


def one_permutation_minhash(
    sh: np.ndarray, offsets: np.ndarray, num_perm: int, seed: int
) -> np.ndarray:
    """(n, num_perm) uint32 signatures by one-permutation hashing with optimal
    densification (Shrivastava, ICML 2017): each shingle hash picks a bin by its high bits
    and competes there with its low bits; an empty bin copies the bin that a fixed,
    seeded probe sequence finds non-empty first. Two documents agree in a bin with
    probability equal to their Jaccard similarity, as with num_perm permutations, at the
    cost of one hash per shingle instead of num_perm."""
    n = len(offsets) - 1
    doc = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    with np.errstate(over="ignore"):
        bins = ((sh >> _U64(32)) * _U64(num_perm)) >> _U64(32)
        key = doc * num_perm + bins.astype(np.int64)
    vals = (sh & _U64(0xFFFFFFFF)).astype(np.uint32)
    sig = np.full(n * num_perm, 0xFFFFFFFF, np.uint32)
    np.minimum.at(sig, key, vals)
    filled = np.zeros(n * num_perm, bool)
    filled[key] = True
    empty = np.flatnonzero(~filled)
    if len(empty):
        probes = _probes(num_perm, seed)
        row, col = np.divmod(empty, num_perm)
        for attempt in range(_MAX_PROBES):
            src = row * num_perm + probes[attempt, col]
            hit = filled[src]
            sig[empty[hit]] = sig[src[hit]]
            keep = ~hit
            empty, row, col = empty[keep], row[keep], col[keep]
            if not len(empty):
                break
        # Past the probe table (documents with a handful of shingles): the next filled
        # bin to the right, wrapping around; still a function of the document's set.
        grid = filled.reshape(n, num_perm)
        for e, r, c in zip(empty.tolist(), row.tolist(), col.tolist(), strict=True):
            have = np.flatnonzero(grid[r])
            sig[e] = sig[r * num_perm + have[np.searchsorted(have, c) % len(have)]]
    return sig.reshape(n, num_perm)
