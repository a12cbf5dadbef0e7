"""FlexAttention mods exported for C programs (include/zetile/ops.h).

A C program cannot hand the attention template a Python function, so these
standard mods are exported with it (python -m zetile.ops.export): each has
the signature the template calls (attention.py, fx_to_tile.py):
    score mods: fn(score, b, h, q_idx, kv_idx, B0, B1, B2, B3)
    mask mods:  fn(b, h, q_idx, kv_idx, B0, B1, B2, B3)
Slots, as the C API fills them: B0 the score mod's tensor (fp32), B2 the
mask mod's tensor (int32), B3 four fp32 parameters (P[0] softcap, P[1]
window, P[2] the length of the mask tensor) written by zt_ops_flex_plan.
"""
import zetile
import zetile.language as tl


@zetile.jit
def alibi(score, b, h, q_idx, kv_idx, B0, B1, B2, B3):
    # ALiBi: score + slope[h] * (kv - q), slopes (Hq,) fp32 in B0.
    return score + tl.load(B0 + h) * (kv_idx - q_idx).to(tl.float32)


@zetile.jit
def softcap(score, b, h, q_idx, kv_idx, B0, B1, B2, B3):
    # cap * tanh(score / cap), written without a select (1 - 2 / (e^2x + 1))
    # as the GEMM template's tanh, so it saturates through inf.
    cap = tl.load(B3)
    x = score / cap
    return cap * (1.0 - 2.0 / (tl.exp2(2.8853900817779268 * x) + 1.0))


@zetile.jit
def causal(b, h, q_idx, kv_idx, B0, B1, B2, B3):
    return q_idx >= kv_idx


@zetile.jit
def sliding(b, h, q_idx, kv_idx, B0, B1, B2, B3):
    # Causal sliding window: q - window < kv <= q (window in P[1]).
    window = tl.load(B3 + 1).to(tl.int32)
    return (q_idx >= kv_idx) & (q_idx - kv_idx < window)


@zetile.jit
def document(b, h, q_idx, kv_idx, B0, B1, B2, B3):
    # Same document: doc[q] == doc[kv], doc ids (n,) int32 in B2, n in P[2].
    # Indices are clamped: padding rows and columns past n read the last id
    # (the template masks them afterwards) instead of reading out of bounds.
    last = tl.load(B3 + 2).to(tl.int32) - 1
    dq = tl.load(B2 + tl.minimum(q_idx, last))
    dk = tl.load(B2 + tl.minimum(kv_idx, last))
    return dq == dk


# Placeholders for mods built with the C builder ("ext" in a spec name):
# the C API replaces the op that defines each placeholder's result with the
# caller's mod (runtime/ops/ops_splice.c). Their three statements are on
# the lines export.py records (`# splice` in the .args file): the first
# names b and h, the second q_idx and kv_idx (broadcast from their (M, 1)
# and (1, N) tiles), the last op of the third is the result (for the score
# mod `score + ...`, naming the score tile).
@zetile.jit
def ext_score(score, b, h, q_idx, kv_idx, B0, B1, B2, B3):
    t = b + h
    u = q_idx + kv_idx
    return score + (t + u).to(tl.float32)


@zetile.jit
def ext_mask(b, h, q_idx, kv_idx, B0, B1, B2, B3):
    t = b + h
    u = q_idx + kv_idx
    return (t + u) >= 0


SCORE_MODS = {"alibi": alibi, "softcap": softcap, "ext": ext_score}
MASK_MODS = {"causal": causal, "sliding": sliding, "document": document, "ext": ext_mask}


# The score mods' derivatives with respect to the score, for the backward
# (attention_bwd.py's SCORE_GRAD; zt_ops_flex_bwd_plan). They read the same
# slots as their mods. (Last in the file: the exported forward specs carry
# the line numbers of the mods above.)
@zetile.jit
def alibi_grad(score, b, h, q_idx, kv_idx, B0, B1, B2, B3):
    # d/ds (s + bias) = 1, as a tile of the score's shape.
    return tl.zeros_like(score) + 1.0


@zetile.jit
def softcap_grad(score, b, h, q_idx, kv_idx, B0, B1, B2, B3):
    # d/ds cap * tanh(s / cap) = 1 - tanh(s / cap)^2, tanh written as in
    # softcap (saturating to +-1, so the derivative goes to 0, never NaN).
    cap = tl.load(B3)
    t = 1.0 - 2.0 / (tl.exp2(2.8853900817779268 * (score / cap)) + 1.0)
    return 1.0 - t * t


# The placeholder for a builder-made score mod's derivative (the C flex
# backward's desc.score_grad_builder), spliced as ext_score is: its three
# statements as ext_score's, on the lines its .args file records
# ("# splice score_grad L1 L2 L3").
@zetile.jit
def ext_score_grad(score, b, h, q_idx, kv_idx, B0, B1, B2, B3):
    t = b + h
    u = q_idx + kv_idx
    return score + (t + u).to(tl.float32)


SCORE_GRADS = {"alibi": alibi_grad, "softcap": softcap_grad, "ext": ext_score_grad}
