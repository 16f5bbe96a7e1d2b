"""Goldens for matmul, the elementwise ops, cast, softmax, layer_norm and embedding.

Oracles: numpy float64 matmul/broadcasting, torch (float64) for gelu/softmax/layer_norm,
numpy/torch dtype conversions for cast, numpy.take for embedding.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from op_golden_common import OpGoldens, as_dtype, bf16, f16, f32, f32v, i32, i64, randn, u8

INF = float("inf")
NAN = float("nan")


def _act(y, activation):
    t = torch.from_numpy(y)
    if activation == "relu":
        return torch.relu(t).numpy()
    if activation == "gelu":
        return F.gelu(t).numpy()
    if activation == "gelu_tanh":
        return F.gelu(t, approximate="tanh").numpy()
    return y


def _matmul_expected(a, b, bias, c, trans_a, trans_b, alpha, beta, activation):
    A = a.f64()
    B = b.f64()
    if trans_a:
        A = np.swapaxes(A, -1, -2)
    if trans_b:
        B = np.swapaxes(B, -1, -2)
    y = f32v(alpha) * np.matmul(A, B)
    if bias is not None:
        y = y + bias.f64()
    if c is not None:
        y = y + f32v(beta) * c.f64()
    return f32(_act(y, activation))


def gen_matmul():
    g = OpGoldens("matmul")

    def case(name, a_shape, b_shape, *, trans_a=False, trans_b=False, alpha=1.0, beta=1.0, bias=False,
             c_shape=None, activation="none", b_dtype="f32", poke=None):
        r = g.rng(name)
        a = f32(randn(r, a_shape))
        if poke is not None:
            v = a.vals.copy()
            for idx, val in poke:
                v[idx] = val
            a = f32(v)
        b = as_dtype(b_dtype, randn(r, b_shape))
        n = b_shape[-2] if trans_b else b_shape[-1]
        ins = [a, b]
        bias_t = c_t = None
        if bias:
            bias_t = f32(randn(r, (n,)))
            ins.append(bias_t)
        if c_shape is not None:
            c_t = f32(randn(r, c_shape))
            ins.append(c_t)
        out = _matmul_expected(a, b, bias_t, c_t, trans_a, trans_b, alpha, beta, activation)
        g.add(name, ins, out, trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta, has_bias=bias,
              has_c=c_shape is not None, activation=activation)

    case("m1_k1_n1", (1, 1), (1, 1))
    case("m2_k3_n2", (2, 3), (3, 2))
    case("m3_k5_n7", (3, 5), (5, 7))
    case("m13_k97_n7", (13, 97), (97, 7))
    case("m1_k257_n129_gemv", (1, 257), (257, 129))
    case("m17_k64_n33_tile_edges", (17, 64), (64, 33))
    case("m33_k31_n65", (33, 31), (31, 65))
    case("trans_a", (5, 3), (5, 7), trans_a=True)
    case("trans_b", (3, 5), (7, 5), trans_b=True)
    case("trans_ab", (13, 6), (9, 13), trans_a=True, trans_b=True)
    case("alpha_half", (4, 6), (6, 5), alpha=0.5)
    case("batch_b2d", (2, 3, 5, 4), (4, 6))
    case("batch_broadcast_both", (2, 1, 3, 4), (1, 3, 4, 5))
    case("batch_a2d_b3d", (3, 4), (2, 4, 5))
    case("batch_trans_b", (2, 7, 8), (2, 3, 8), trans_b=True)
    case("bias", (5, 7), (7, 11), bias=True)
    case("bias_batch", (2, 3, 7), (7, 4), bias=True)
    case("c_beta_alpha", (4, 6), (6, 5), alpha=2.0, beta=0.5, c_shape=(4, 5))
    case("c_broadcast_batch", (2, 4, 6), (6, 5), beta=-1.0, c_shape=(4, 5))
    case("bias_and_c", (3, 5), (5, 4), bias=True, beta=0.25, c_shape=(3, 4))
    case("relu_bias", (6, 9), (9, 10), bias=True, activation="relu")
    case("gelu_bias", (6, 9), (9, 10), bias=True, activation="gelu")
    case("gelu_tanh_bias", (6, 9), (9, 10), bias=True, activation="gelu_tanh")
    case("gelu_c_alpha", (3, 4), (4, 5), alpha=0.75, beta=2.0, c_shape=(3, 5), activation="gelu")
    case("b_f16", (5, 13), (13, 7), b_dtype="f16")
    case("b_bf16", (5, 13), (13, 7), b_dtype="bf16")
    case("b_f16_trans_b_bias", (7, 32), (9, 32), trans_b=True, bias=True, b_dtype="f16")
    case("b_bf16_trans_b_batch", (2, 5, 16), (3, 16), trans_b=True, b_dtype="bf16")
    case("b_bf16_m1_k97", (1, 97), (97, 13), b_dtype="bf16")
    # IEEE propagation: a NaN in row 0 of A makes output row 0 NaN; +inf in row 1 gives
    # +/-inf by the sign of B (no cancelling infinities because only one inf per row).
    case("nan_inf_rows", (3, 4), (4, 5), poke=[((0, 2), NAN), ((1, 1), INF)])
    return g


def _binary(op, fn):
    g = OpGoldens(op)

    def case(name, sa, sb, special=None):
        r = g.rng(name)
        a = randn(r, sa, 2.0)
        b = randn(r, sb, 2.0)
        if special is not None:
            a = np.asarray(special[0], dtype=np.float64)
            b = np.asarray(special[1], dtype=np.float64)
        A, B = f32(a), f32(b)
        g.add(name, [A, B], f32(fn(A.f64(), B.f64())))

    case("n1", (1,), (1,))
    case("n7", (7,), (7,))
    case("same_3x5", (3, 5), (3, 5))
    case("row_broadcast_13x97", (13, 97), (97,))
    case("col_broadcast", (6, 4), (6, 1))
    case("both_broadcast", (4, 1, 3), (5, 1))
    case("left_broadcast", (1, 6), (5, 6))
    case("scalar_rank0", (2, 3), ())
    case("rank5", (2, 1, 3, 1, 2), (1, 4, 1, 5, 2))
    case("len_4099", (4099,), (4099,))
    case("ieee_special", None, None,
         special=([INF, -INF, NAN, 1.0, INF, 0.0, -0.0, 3.0e38],
                  [-INF, -INF, 1.0, NAN, 2.0, INF, -0.0, 3.0e38]))
    return g


def gen_add():
    return _binary("add", lambda a, b: a + b)


def gen_sub():
    return _binary("sub", lambda a, b: a - b)


def gen_mul():
    return _binary("mul", lambda a, b: a * b)


def _unary(op, fn, special, lo=-4.0, hi=4.0, **attrs):
    g = OpGoldens(op)
    for name, shape in [("n1", (1,)), ("n7", (7,)), ("rows_3x13", (3, 13)), ("rank3_2x5x97", (2, 5, 97)),
                        ("len_4099", (4099,))]:
        x = f32(g.rng(name).uniform(lo, hi, size=shape))
        g.add(name, [x], f32(fn(x.f64())), **attrs)
    if special is not None:
        x = f32(special)
        g.add("special", [x], f32(fn(x.f64())), **attrs)
    return g


def gen_scale():
    g = OpGoldens("scale")
    for name, shape, s, b in [("n1", (1,), 2.5, -1.0), ("n7_identity", (7,), 1.0, 0.0), ("neg", (3, 13), -1.0, 0.0),
                              ("shift_only", (2, 97), 1.0, 3.25), ("scale_shift", (4099,), 0.125, 0.5),
                              ("zero_scale", (5,), 0.0, 3.0), ("attn_scale", (2, 3, 8), 1 / math.sqrt(8), 0.0)]:
        x = f32(g.rng(name).uniform(-8, 8, size=shape))
        g.add(name, [x], f32(x.f64() * f32v(s) + f32v(b)), scale=s, shift=b)
    x = f32([INF, -INF, NAN, 0.0, -2.0])
    g.add("ieee_special", [x], f32(x.f64() * 2.0 + 1.0), scale=2.0, shift=1.0)
    return g


def gen_exp():
    # exp(100) overflows f32 to inf, exp(-200) underflows to 0, exp(-90) is subnormal.
    return _unary("exp", np.exp, [-INF, INF, NAN, 0.0, -0.0, 100.0, -200.0, -90.0, 88.0, -87.0], -10, 10)


def gen_tanh():
    return _unary("tanh", np.tanh, [-INF, INF, NAN, 0.0, 50.0, -50.0, 1e-4, -9.0], -6, 6)


def gen_relu():
    return _unary("relu", lambda x: np.maximum(x, 0.0), [-INF, INF, 1e-30, -1e-30, 3e38, -3e38])


def gen_gelu():
    return _unary("gelu", lambda x: F.gelu(torch.from_numpy(x)).numpy(), [NAN, 0.0, 20.0, -20.0, 1e-3, -6.0], -6, 6)


def gen_gelu_tanh():
    fn = lambda x: F.gelu(torch.from_numpy(x), approximate="tanh").numpy()  # noqa: E731
    return _unary("gelu_tanh", fn, [NAN, 0.0, 20.0, -20.0, 1e-3, -6.0], -6, 6)


def _cast_expected(x, to):
    """Independent conversions: numpy (C casts) for ints/f32/f16, torch for bf16."""
    if to in ("i32", "i64", "u8"):
        v = x.vals
        if x.dtype in ("f32", "f16", "bf16"):
            v = np.trunc(x.f64())  # C++ float->int truncates toward zero
        return as_dtype(to, np.asarray(v).astype(np.int64))
    if to == "f32":
        return as_dtype("f32", np.asarray(x.vals).astype(np.float32))  # direct cast, one rounding
    if to == "f16":
        return as_dtype("f16", np.asarray(x.vals).astype(np.float32).astype(np.float16) if x.dtype != "i64"
                        else np.asarray(x.vals).astype(np.float16))
    return bf16(np.asarray(x.vals).astype(np.float32))


def gen_cast():
    g = OpGoldens("cast")
    floats = [0.0, -0.0, 1.0, -2.5, 65504.0, 65519.0, 65520.0, 70000.0, -70000.0, 1e-8, 6e-8, 3e-8, 2.0**-24 * 1.5,
              1.00048828125, 1.000732421875, 1.001953125, 1.005859375, 3.0e38, INF, -INF, NAN, 1e-40, 0.1]

    def case(name, x, to):
        g.add(name, [x], _cast_expected(x, to), to=to)

    case("f32_to_f32", f32(floats), "f32")
    case("f32_to_f16_rounding_overflow_nan", f32(floats), "f16")
    case("f32_to_bf16_rounding_nan", f32(floats), "bf16")
    case("f32_to_f16_random", f32(g.rng("f16r").standard_normal((3, 97)) * 100), "f16")
    case("f32_to_bf16_random", f32(g.rng("bf16r").standard_normal((3, 97)) * 100), "bf16")
    case("f16_to_f32", f16([0.0, -0.0, 1.0, 65504.0, -65504.0, 6e-8, 1e-5, INF, -INF, NAN, 0.333]), "f32")
    case("bf16_to_f32", bf16([0.0, -0.0, 1.0, 3e38, -1e-38, 1e-40, INF, -INF, NAN, 0.333]), "f32")
    case("f16_to_bf16", f16([1.0, 65504.0, 6e-8, 1e-5, 0.333, -2049.0, INF, NAN]), "bf16")
    case("bf16_to_f16_overflow_subnormal", bf16([1.0, 1e5, -1e5, 1e-6, 1e-8, 0.333, 65504.0, INF, NAN]), "f16")
    trunc = [0.0, 0.5, -0.5, 2.7, -2.7, 1e9, -1e9, 2147483520.0, -2147483648.0, 7.999999, -0.99999994]
    case("f32_to_i32_trunc", f32(trunc), "i32")
    case("f32_to_i64_trunc", f32(trunc + [9.2e18, -9.2e18, 1.5e15]), "i64")
    case("f32_to_u8_trunc", f32([0.0, 0.99, 1.0, 254.9, 255.0, 17.5, -0.5]), "u8")
    case("f16_to_i32", f16([0.0, -3.75, 65504.0, -65504.0, 2.5]), "i32")
    case("bf16_to_i64", bf16([0.0, -3.75, 1e18, -1e18, 2.5]), "i64")
    # 16777217 is not an f32; 2^60 + 2^36 + 1 rounds *up* when rounded once (through a double
    # it would land on a tie and round down to even): the conversion must round once.
    case("i32_to_f32", i32([0, -1, 7, 16777216, 16777217, 16777219, -2147483648, 2147483647]), "f32")
    case("i64_to_f32_round_once", i64([0, -5, 2**60 + 2**36 + 1, -(2**60 + 2**36 + 1), 2**53 + 1,
                                       9007199791611905, -9223372036854775807 - 1]), "f32")
    case("i64_to_f16", i64([0, 3, -2049, 2049, 65504, 65519]), "f16")
    case("i32_to_bf16", i32([0, 3, 257, -257, 65535, 16777217]), "bf16")
    case("i32_to_i64", i32([0, -1, 2147483647, -2147483648]), "i64")
    case("i64_to_i32", i64([0, -1, 2147483647, -2147483648, 12345]), "i32")
    case("u8_to_f32", u8([0, 1, 127, 128, 255]), "f32")
    case("u8_to_i32", u8([0, 1, 255]), "i32")
    case("i32_to_u8", i32([0, 1, 200, 255]), "u8")
    case("u8_to_u8_2d", u8(np.arange(15).reshape(3, 5) * 17), "u8")
    case("i64_to_i64", i64([-(2**62), 2**62 + 1]), "i64")
    return g


def _softmax_expected(x, scale, mask, causal, axis):
    logits = x.f64() * f32v(scale)
    if mask is not None:
        logits = logits + mask.f64()
    if causal:
        rows, cols = logits.shape[-2], logits.shape[-1]
        i = np.arange(rows)[:, None]
        j = np.arange(cols)[None, :]
        logits = np.where(j > i + (cols - rows), -np.inf, logits)
    t = torch.from_numpy(np.ascontiguousarray(logits))
    y = torch.softmax(t, dim=axis).numpy()
    dead = np.max(logits, axis=axis, keepdims=True) == -np.inf  # fully masked row -> zeros
    y = np.where(dead, 0.0, y)
    assert not np.isnan(y).any()
    return f32(y)


def gen_softmax():
    g = OpGoldens("softmax")

    def case(name, shape, *, axis=-1, scale=1.0, causal=False, mask_shape=None, xs=1.0, x=None, mask=None):
        r = g.rng(name)
        xv = f32(randn(r, shape, xs) if x is None else x)
        ins = [xv]
        mv = None
        if mask_shape is not None or mask is not None:
            if mask is None:
                mask = np.where(r.random(mask_shape) < 0.3, -np.inf, randn(r, mask_shape))
            mv = f32(mask)
            ins.append(mv)
        g.add(name, ins, _softmax_expected(xv, scale, mv, causal, axis), axis=axis, scale=scale, causal=causal,
              has_mask=mv is not None)

    case("n1", (1, 1))
    case("n2", (3, 2))
    case("n3", (2, 3))
    case("n7", (5, 7))
    case("n13", (2, 13))
    case("n97", (3, 97))
    case("n4096", (2, 4096), xs=3.0)
    case("rank3_axis_last", (2, 3, 17))
    case("axis0", (7, 3), axis=0)
    case("axis_neg2_rank3", (2, 5, 3), axis=-2)
    case("axis1_rank4", (2, 6, 3, 2), axis=1)
    case("scale", (4, 9), scale=0.125)
    case("large_logits", (3, 11), xs=50.0, x=randn(g.rng("ll"), (3, 11), 50.0) + 1000.0)
    neg = randn(g.rng("ninf"), (4, 6))
    neg[1, :] = -np.inf  # fully -inf row -> zeros
    neg[2, ::2] = -np.inf
    neg[3, :5] = -np.inf  # a single finite entry -> one-hot
    case("neg_inf_rows", (4, 6), x=neg)
    case("mask_full", (4, 7), mask_shape=(4, 7))
    case("mask_broadcast_row", (2, 3, 7), mask_shape=(7,))
    case("mask_broadcast_batch", (2, 3, 5), mask_shape=(2, 1, 5), scale=0.5)
    m = np.zeros((3, 5))
    m[1, :] = -np.inf  # fully masked row
    case("mask_fully_masked_row", (3, 5), mask=m)
    case("causal_square", (5, 5), causal=True)
    case("causal_wide", (3, 7), causal=True)
    case("causal_tall_dead_rows", (7, 3), causal=True)  # rows 0..3 see nothing -> zeros
    case("causal_rank4_scale_mask", (2, 2, 6, 6), causal=True, scale=0.25, mask_shape=(2, 1, 1, 6))
    return g


def gen_layer_norm():
    g = OpGoldens("layer_norm")

    def case(name, shape, *, gdt="f32", bdt="f32", eps=1e-5, x=None, offset=0.0):
        r = g.rng(name)
        d = shape[-1]
        xv = f32(randn(r, shape) + offset if x is None else x)
        gam = as_dtype(gdt, 1.0 + 0.5 * randn(r, (d,)))
        bet = as_dtype(bdt, 0.5 * randn(r, (d,)))
        y = F.layer_norm(torch.from_numpy(xv.f64()), (d,), torch.from_numpy(gam.f64()), torch.from_numpy(bet.f64()),
                         eps=f32v(eps)).numpy()
        g.add(name, [xv, gam, bet], f32(y), eps=eps)

    case("d1_gives_beta", (3, 1))
    case("d2", (4, 2))
    case("d3", (2, 3))
    case("d7", (5, 7))
    case("d97", (3, 97))
    case("d768", (2, 768))
    case("rank3_d257", (2, 3, 257))
    case("rank1", (13,))
    case("offset_mean", (4, 64), offset=8.0)
    case("constant_rows", (2, 9), x=np.full((2, 9), 3.5))
    case("eps_tiny", (3, 16), eps=1e-12)
    case("eps_large", (3, 16), eps=0.5)
    case("gamma_beta_f16", (3, 33), gdt="f16", bdt="f16")
    case("gamma_beta_bf16", (3, 33), gdt="bf16", bdt="bf16")
    case("gamma_f16_beta_f32", (2, 8), gdt="f16", bdt="f32")
    return g


def gen_embedding():
    g = OpGoldens("embedding")

    def case(name, v, d, ids, *, tdt="f32", idt="i32"):
        r = g.rng(name)
        table = as_dtype(tdt, randn(r, (v, d)))
        idx = (i32 if idt == "i32" else i64)(ids)
        g.add(name, [table, idx], f32(np.take(table.f64(), np.asarray(ids, dtype=np.int64), axis=0)))

    case("v1_d1", 1, 1, [0])
    case("ids_1d_i32", 7, 5, [0, 6, 3, 3, 1])
    case("ids_1d_i64", 7, 5, [6, 0, 2], idt="i64")
    case("ids_2d", 13, 8, [[1, 2, 3], [12, 0, 12]])
    case("ids_rank3_i64", 11, 3, np.arange(12).reshape(2, 2, 3) % 11, idt="i64")
    case("ids_rank0", 5, 4, np.int64(3))
    case("table_f16", 97, 16, [96, 0, 50, 50], tdt="f16")
    case("table_bf16_i64", 97, 16, [[96, 1], [0, 95]], tdt="bf16", idt="i64")
    case("d_768", 4, 768, [3, 0])
    return g


GENERATORS = {
    "matmul": gen_matmul, "add": gen_add, "sub": gen_sub, "mul": gen_mul, "scale": gen_scale, "exp": gen_exp,
    "tanh": gen_tanh, "relu": gen_relu, "gelu": gen_gelu, "gelu_tanh": gen_gelu_tanh, "cast": gen_cast,
    "softmax": gen_softmax, "layer_norm": gen_layer_norm, "embedding": gen_embedding,
}
