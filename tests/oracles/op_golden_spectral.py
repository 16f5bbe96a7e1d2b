"""Goldens for dct, idct, spectral_filter, topk_mask, topk_indices, matmul_topk, cummax, cumsum,
segment_max and upsample_nearest.

Oracles: scipy.fft.dct/idct (type 2, norm='ortho'), an explicit stable sort (cross-checked
against torch.topk where it has no ties; for matmul_topk over exact f64 products),
torch.cummax, numpy float32 cumsum (cross-checked against a scalar float32 loop), numpy
reshape+max,
torch.nn.functional.interpolate(mode='nearest') (cross-checked against the f32 index rule).
"""

import math

import numpy as np
import scipy.fft
import torch
import torch.nn.functional as F

from op_golden_common import OpGoldens, T, f32, i32, quantized, randn, u8

INF = float("inf")
NAN = float("nan")


def gen_dct():
    g = OpGoldens("dct")

    def case(name, shape, *, axis=-1, keep=0):
        x = f32(randn(g.rng(name), shape))
        y = scipy.fft.dct(x.f64(), type=2, norm="ortho", axis=axis)
        if keep:
            y = np.take(y, np.arange(keep), axis=axis)
        g.add(name, [x], f32(y), axis=axis, keep=keep)

    for n in [1, 2, 3, 4, 5, 7, 8, 13, 16, 64, 97, 100, 128, 255]:
        case("n%d" % n, (3, n))
    case("n4096", (2, 4096))
    case("n4095_odd", (1, 4095))
    case("keep1", (3, 13), keep=1)
    case("keep5_of_13", (2, 13), keep=5)
    case("keep_n", (2, 7), keep=7)
    case("keep64_of_4096", (2, 4096), keep=64)
    case("axis0", (13, 3), axis=0)
    case("axis_neg2_rank3_keep", (2, 97, 3), axis=-2, keep=10)
    case("axis1_rank4", (2, 7, 2, 3), axis=1)
    case("rank1", (31,))
    return g


def gen_idct():
    g = OpGoldens("idct")

    def case(name, shape, *, axis=-1, n=0):
        x = f32(randn(g.rng(name), shape))
        y = scipy.fft.idct(x.f64(), n=(n or None), type=2, norm="ortho", axis=axis)
        g.add(name, [x], f32(y), axis=axis, n=n)

    for n in [1, 2, 3, 4, 5, 7, 8, 13, 16, 64, 97, 100, 128, 255]:
        case("n%d" % n, (3, n))
    case("n4096", (2, 4096))
    case("n4093_prime", (1, 4093))
    case("pad_5_to_13", (2, 5), n=13)
    case("pad_1_to_7", (3, 1), n=7)
    case("trunc_13_to_5", (2, 13), n=5)
    case("n_equal", (2, 9), n=9)
    case("pad_64_to_4096", (2, 64), n=4096)
    case("axis0_pad", (5, 3), axis=0, n=11)
    case("axis_neg2_rank3", (2, 97, 3), axis=-2)
    case("rank1", (31,))
    return g


def _spectral(x, axis, keep):
    n = x.shape[axis]
    m = min(keep, n)
    c = scipy.fft.dct(x, type=2, norm="ortho", axis=axis)
    c = np.take(c, np.arange(m), axis=axis)
    return scipy.fft.idct(c, n=m, type=2, norm="ortho", axis=axis)


def gen_spectral_filter():
    g = OpGoldens("spectral_filter")

    def case(name, shape, keep, *, axis=-2, method="automatic"):
        x = f32(randn(g.rng(name), shape))
        g.add(name, [x], f32(_spectral(x.f64(), axis, keep)), axis=axis, keep=keep, method=method)

    case("n1_keep1", (1, 3), 1)
    case("n2_keep1", (2, 3), 1)
    case("n3_keep2", (3, 2), 2)
    case("n7_keep3", (7, 4), 3)
    case("n13_keep13_identity", (13, 2), 13)
    case("keep_gt_n", (13, 2), 20)
    case("n97_keep49", (97, 3), 49)
    case("n100_keep34", (100, 2), 34)
    case("n512_keep128", (512, 4), 128)
    case("n4096_keep2048", (4096, 1), 2048)
    case("n4096_keep1", (4096, 1), 1)
    case("n4096_keep1229", (4096, 1), math.ceil(4096 * 0.3))
    case("rank3", (2, 13, 3), 5)
    case("rank4_axis1", (2, 11, 3, 2), 4, axis=1)
    case("axis_last", (3, 17), 6, axis=-1)
    case("method_fft", (13, 3), 5, method="fft")
    case("method_matrix", (13, 3), 5, method="matrix")
    case("method_matrix_n97", (97, 2), 30, method="matrix")
    return g


def _topk_order(row):
    """Indices of a 1-D float row sorted by the topk rule: NaN largest, then descending value,
    ties by ascending index. An explicit stable sort on a total key (independent of torch)."""
    idx = list(range(len(row)))
    # Python's sort is stable: sorting by (-rank) keeps ties in ascending index order.
    return sorted(idx, key=lambda i: (0 if math.isnan(row[i]) else 1, -row[i] if not math.isnan(row[i]) else 0.0))


def _topk_rows(x, axis):
    """x moved so that the topk axis is last, flattened to rows."""
    xm = np.moveaxis(x, axis, -1)
    return xm, xm.reshape(-1, xm.shape[-1])


def _check_against_torch(x, k, axis, order_rows):
    """Where a row has no ties (and no NaN), torch.topk must agree with the explicit sort."""
    t = torch.topk(torch.from_numpy(np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])), k, dim=-1)
    for r, row in enumerate(np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])):
        if len(set(row.tolist())) == len(row) and not np.isnan(row).any():
            assert list(t.indices[r].numpy()) == order_rows[r][:k], "topk oracle disagrees with torch"


def gen_topk_mask():
    g = OpGoldens("topk_mask")

    def case(name, x, k, *, axis=-1, scores=False):
        xv = f32(x)
        xs = xv.f64()
        xm, rows = _topk_rows(xs, axis)
        kk = min(k, xm.shape[-1])
        orders = [_topk_order(row) for row in rows]
        _check_against_torch(xs, kk, axis, orders)
        mask = np.zeros(rows.shape, dtype=np.int64)
        for r, o in enumerate(orders):
            mask[r, o[:kk]] = 1
        mask = np.moveaxis(mask.reshape(xm.shape), -1, axis)
        out = f32(np.where(mask == 1, xs, -np.inf)) if scores else u8(mask)
        g.add(name, [xv], out, k=k, axis=axis, output_scores=scores)

    r = g.rng("x")
    case("n1_k1", randn(r, (3, 1)), 1)
    case("n7_k2", randn(r, (4, 7)), 2)
    case("n7_k2_scores", randn(r, (4, 7)), 2, scores=True)
    case("k_equals_n", randn(r, (2, 5)), 5)
    case("k_gt_n_clamped", randn(r, (2, 5)), 9, scores=True)
    case("ties", quantized(r, (6, 13), 3), 4)
    case("ties_scores", quantized(r, (6, 13), 3), 5, scores=True)
    case("all_equal", np.ones((2, 9)), 3)
    case("nan_inf", np.array([[1.0, NAN, INF, -INF, NAN, 2.0, INF], [-INF] * 7, [NAN, 0, 0, NAN, 1, -1, INF]]), 3,
         scores=True)
    case("nan_inf_mask", np.array([[1.0, NAN, INF, -INF, NAN, 2.0, INF], [-INF] * 7]), 4)
    case("signed_zero_ties", np.array([[-0.0, 0.0, -0.0, 0.0, -1.0], [0.0, -0.0, 0.0, -0.0, -1.0]]), 2, scores=True)
    case("axis0", randn(r, (13, 3)), 4, axis=0)
    case("axis_neg2_rank3_ties", quantized(r, (2, 11, 3), 4), 3, axis=-2, scores=True)
    case("n97_k13", randn(r, (3, 97)), 13)
    case("n4096_k64_ties", quantized(r, (2, 4096), 50), 64)
    case("n4096_k1000_scores", randn(r, (1, 4096)), 1000, scores=True)
    return g


def gen_topk_indices():
    g = OpGoldens("topk_indices")

    def case(name, x, k, *, axis=-1):
        xv = f32(x)
        xs = xv.f64()
        xm, rows = _topk_rows(xs, axis)
        orders = [_topk_order(row) for row in rows]
        _check_against_torch(xs, k, axis, orders)
        out = np.array([o[:k] for o in orders], dtype=np.int64).reshape(xm.shape[:-1] + (k,))
        g.add(name, [xv], i32(np.moveaxis(out, -1, axis)), k=k, axis=axis)

    r = g.rng("x")
    case("n1_k1", randn(r, (3, 1)), 1)
    case("n7_k2", randn(r, (4, 7)), 2)
    case("k_equals_n", randn(r, (2, 5)), 5)
    case("ties", quantized(r, (6, 13), 3), 4)
    case("ties_k_equals_n", quantized(r, (3, 7), 2), 7)
    case("all_equal", np.ones((2, 9)), 9)
    case("nan_inf", np.array([[1.0, NAN, INF, -INF, NAN, 2.0, INF], [-INF] * 7, [NAN, 0, 0, NAN, 1, -1, INF]]), 5)
    case("signed_zero_ties", np.array([[-0.0, 0.0, -0.0, 0.0, -1.0]]), 3)
    case("axis0", randn(r, (13, 3)), 4, axis=0)
    case("axis_neg2_rank3_ties", quantized(r, (2, 11, 3), 4), 3, axis=-2)
    case("n97_k13", randn(r, (3, 97)), 13)
    case("n4096_k64_ties", quantized(r, (2, 4096), 50), 64)
    case("n4096_k4096", randn(r, (1, 4096)), 4096)
    return g


def _cummax(x, axis, reverse, exclusive):
    t = torch.from_numpy(x)
    if reverse:
        t = torch.flip(t, [axis])
    y = torch.cummax(t, dim=axis).values
    if exclusive:
        n = y.shape[axis]
        first = torch.full_like(torch.narrow(y, axis, 0, 1), -math.inf)
        y = torch.cat([first, torch.narrow(y, axis, 0, n - 1)], dim=axis)
    if reverse:
        y = torch.flip(y, [axis])
    return y.numpy()


def gen_cummax():
    g = OpGoldens("cummax")

    def case(name, x, *, axis=-1, reverse=False, exclusive=False):
        xv = f32(x)
        g.add(name, [xv], f32(_cummax(xv.f64(), axis, reverse, exclusive)), axis=axis, reverse=reverse,
              exclusive=exclusive)

    r = g.rng("x")
    for n in [1, 2, 3, 7, 13, 97]:
        x = randn(r, (3, n))
        case("n%d" % n, x)
        case("n%d_reverse" % n, x, reverse=True)
        case("n%d_exclusive" % n, x, exclusive=True)
        case("n%d_reverse_exclusive" % n, x, reverse=True, exclusive=True)
    case("n4096", randn(r, (2, 4096)))
    case("n4096_reverse_exclusive", randn(r, (1, 4096)), reverse=True, exclusive=True)
    case("axis0", randn(r, (13, 3)), axis=0)
    case("axis0_reverse_exclusive", randn(r, (13, 3)), axis=0, reverse=True, exclusive=True)
    case("axis_neg2_rank3", randn(r, (2, 7, 3)), axis=-2, reverse=True)
    special = np.array([[1.0, -INF, NAN, 5.0, INF, 2.0], [-INF, -INF, -INF, 0.0, -1.0, INF],
                        [3.0, 2.0, 1.0, NAN, 0.0, -1.0]])
    case("nan_inf", special)
    case("nan_inf_reverse", special, reverse=True)
    case("nan_inf_exclusive", special, exclusive=True)
    case("nan_inf_reverse_exclusive", special, reverse=True, exclusive=True)
    return g


def _cumsum(x32, axis, reverse, exclusive):
    """cumsum as attrs.h defines it: the in-order float32 sum (numpy's add.accumulate is
    sequential, one float32 rounding per step), so this golden is not a float64 result."""
    y = np.flip(x32, axis) if reverse else x32
    y = np.cumsum(y, axis=axis, dtype=np.float32)
    if exclusive:
        n = y.shape[axis]
        first = np.zeros_like(np.take(y, [0], axis=axis))
        y = np.concatenate([first, np.take(y, np.arange(n - 1), axis=axis)], axis=axis)
    return np.flip(y, axis) if reverse else y


def _cumsum_loop(x32, axis, reverse, exclusive):
    """The definition spelled out element by element (checks _cumsum)."""
    xm = np.moveaxis(x32, axis, -1)
    out = np.empty_like(xm)
    n = xm.shape[-1]
    for idx in np.ndindex(*xm.shape[:-1]):
        run = np.float32(0)
        for t in range(n):
            i = n - 1 - t if reverse else t
            v = xm[idx + (i,)]
            if exclusive:
                out[idx + (i,)] = np.float32(0) if t == 0 else run
            run = v if t == 0 else np.float32(run + v)
            if not exclusive:
                out[idx + (i,)] = run
    return np.moveaxis(out, -1, axis)


def gen_cumsum():
    g = OpGoldens("cumsum")

    def case(name, x, *, axis=-1, reverse=False, exclusive=False):
        xv = f32(x)
        with np.errstate(invalid="ignore", over="ignore"):
            y = _cumsum(xv.vals, axis, reverse, exclusive)
            check = _cumsum_loop(xv.vals, axis, reverse, exclusive)
        if not np.array_equal(y.view(np.uint32), check.view(np.uint32)):
            raise AssertionError("cumsum/%s: numpy and the float32 loop disagree" % name)
        g.add(name, [xv], T("f32", y), axis=axis, reverse=reverse, exclusive=exclusive)

    r = g.rng("x")
    for n in [1, 2, 3, 7, 13, 97]:
        x = randn(r, (3, n))
        case("n%d" % n, x)
        case("n%d_reverse" % n, x, reverse=True)
        case("n%d_exclusive" % n, x, exclusive=True)
        case("n%d_reverse_exclusive" % n, x, reverse=True, exclusive=True)
    case("n4096", randn(r, (2, 4096)))
    case("n4096_reverse_exclusive", randn(r, (1, 4096)), reverse=True, exclusive=True)
    case("positions_counts", quantized(r, (2, 1000), 2), axis=1)
    case("axis0", randn(r, (13, 3)), axis=0)
    case("axis0_reverse_exclusive", randn(r, (13, 3)), axis=0, reverse=True, exclusive=True)
    case("axis0_w300", randn(r, (9, 300)), axis=0)
    case("axis_neg2_rank3", randn(r, (2, 7, 3)), axis=-2, reverse=True)
    case("axis_neg2_rank3_exclusive", randn(r, (2, 33, 70)), axis=-2, exclusive=True)
    special = np.array([[-0.0, 1.0, INF, 2.0, -INF, 3.0], [-0.0, -0.0, 0.0, -0.0, NAN, 1.0],
                        [1e38, 1e38, 1e38, -1e38, 5.0, -0.0], [1.0, 1e-8, 1e-8, 1e-8, 1e-8, -1.0]])
    case("special", special)
    case("special_reverse", special, reverse=True)
    case("special_exclusive", special, exclusive=True)
    case("special_reverse_exclusive", special, reverse=True, exclusive=True)
    return g


def _segment_max(x, axis, s):
    xm = np.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    segs = -(-n // s)
    pad = np.full(xm.shape[:-1] + (segs * s - n,), -np.inf)
    y = np.max(np.concatenate([xm, pad], axis=-1).reshape(xm.shape[:-1] + (segs, s)), axis=-1)  # NaN propagates
    return np.moveaxis(y, -1, axis)


def gen_segment_max():
    g = OpGoldens("segment_max")

    def case(name, x, s, *, axis=-2):
        xv = f32(x)
        g.add(name, [xv], f32(_segment_max(xv.f64(), axis, s)), axis=axis, segment=s)

    r = g.rng("x")
    case("n1_s1", randn(r, (1, 3)), 1)
    case("n7_s1_identity", randn(r, (7, 2)), 1)
    case("n7_s3_ragged", randn(r, (7, 2)), 3)
    case("n12_s4", randn(r, (12, 3)), 4)
    case("n13_s13_one_segment", randn(r, (13, 2)), 13)
    case("n5_s8_larger_than_n", randn(r, (5, 2)), 8)
    case("n97_s8", randn(r, (97, 3)), 8)
    case("n4096_s64", randn(r, (4096, 2)), 64)
    case("n4096_s100_ragged", randn(r, (4096, 1)), 100)
    case("axis_last", randn(r, (3, 11)), 4, axis=-1)
    case("rank3", randn(r, (2, 10, 3)), 3)
    case("rank4_axis1", randn(r, (2, 9, 2, 3)), 2, axis=1)
    special = np.array([[1.0, NAN], [-INF, -INF], [2.0, -INF], [-INF, 0.5], [-INF, -INF], [INF, NAN], [-INF, 1.0]])
    case("nan_inf", special, 2)
    return g


def _upsample(x, axis, size):
    xm = np.moveaxis(x, axis, -1)
    flat = torch.from_numpy(np.ascontiguousarray(xm.reshape(1, -1, xm.shape[-1])).astype(np.float32))
    y = F.interpolate(flat, size=size, mode="nearest").numpy().astype(np.float64)
    # Cross-check with the rule in attrs.h: src = min(floor(dst * float(in / out)), in - 1) in f32.
    n = xm.shape[-1]
    sc = np.float32(np.float32(n) / np.float32(size))
    src = np.minimum(np.floor(np.arange(size, dtype=np.float32) * sc).astype(np.int64), n - 1)
    assert np.array_equal(y, xm.reshape(1, -1, n)[:, :, src]), "interpolate disagrees with the f32 index rule"
    return np.moveaxis(y.reshape(xm.shape[:-1] + (size,)), -1, axis)


def gen_upsample_nearest():
    g = OpGoldens("upsample_nearest")

    def case(name, shape, size, *, axis=-2):
        xv = f32(randn(g.rng(name), shape))
        g.add(name, [xv], f32(_upsample(xv.f64(), axis, size)), axis=axis, size=size)

    case("in1_out1", (1, 2), 1)
    case("in1_out5", (1, 2), 5)
    case("in3_out6_double", (3, 2), 6)
    case("in5_out10_double", (5, 3), 10)
    case("in13_out13_identity", (13, 2), 13)
    case("in7_out3_shrink", (7, 2), 3)
    case("in6_out4_shrink", (6, 2), 4)
    case("in10_out3", (10, 2), 3)
    case("in3_out7", (3, 2), 7)
    case("in97_out200", (97, 1), 200)
    case("in64_out4096", (64, 1), 4096)
    case("in4096_out97", (4096, 1), 97)
    case("in1000_out999", (1000, 1), 999)
    case("axis_last", (2, 5), 11, axis=-1)
    case("rank3", (2, 4, 3), 8)
    case("rank4_axis1", (2, 3, 2, 2), 7, axis=1)
    return g


def gen_matmul_topk():
    """Scores from exactly representable inputs (multiples of 1/4, short rows, alpha a power of
    two), so every summation order gives the same f32 score and the oracle needs no FMA; the
    ranking is _topk_order's over the eligible columns."""
    g = OpGoldens("matmul_topk")

    def case(name, q, kmat, k, *, alpha=1.0, causal=False, mask=None, row_k=None):
        qv, kv = f32(q), f32(kmat)
        b, m, _ = q.shape
        nk = kmat.shape[1]
        with np.errstate(invalid="ignore", over="ignore"):
            scores = np.einsum("bmd,bnd->bmn", qv.f64(), kv.f64()) * alpha
        assert np.array_equal(np.float32(scores), scores, equal_nan=True), name  # exact in f32
        out = np.full((b, m, k), -1, dtype=np.int64)
        for bi in range(b):
            for i in range(m):
                cols = [j for j in range(nk) if (not causal or j <= i + nk - m)
                        and (mask is None or mask[0 if mask.shape[0] == 1 else bi, j] != 0)]
                order = _topk_order([scores[bi, i, j] for j in cols])
                slots = min(k, len(cols))
                if row_k is not None:
                    slots = min(slots, int(row_k[0 if row_k.shape[0] == 1 else bi, 0 if row_k.shape[1] == 1 else i]))
                for r in range(max(slots, 0)):
                    out[bi, i, r] = cols[order[r]]
        inputs = [qv, kv] + ([u8(mask)] if mask is not None else []) + ([i32(row_k)] if row_k is not None else [])
        g.add(name, inputs, i32(out), k=k, alpha=alpha, causal=causal, has_key_mask=mask is not None,
              has_row_k=row_k is not None)

    r = g.rng("x")

    def qz(shape, levels=9):
        return (r.integers(0, levels, size=shape) - levels // 2) / 4.0

    case("m1_n1_k1", qz((1, 1, 3)), qz((1, 1, 3)), 1)
    case("m5_n7_k3", qz((2, 5, 4)), qz((2, 7, 4)), 3, alpha=0.5)
    case("ties_k_equals_n", qz((2, 6, 2), 3), qz((2, 9, 2), 3), 9)
    case("d1_many_ties", qz((1, 8, 1), 3), qz((1, 33, 1), 3), 12)
    case("signed_zero", np.zeros((1, 3, 2)), np.array([[[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0], [2.0, -2.0]]]), 4,
         alpha=-1.0)
    case("causal_square", qz((2, 13, 4)), qz((2, 13, 4)), 5, causal=True)
    case("causal_prefix_offset", qz((1, 4, 3)), qz((1, 11, 3)), 6, causal=True)
    case("mask_batch", qz((2, 7, 3)), qz((2, 10, 3)), 4,
         mask=np.array([[1, 0, 1, 1, 0, 1, 1, 1, 0, 1], [0] * 7 + [1, 1, 0]]))
    case("mask_shared_causal_rowk", qz((2, 6, 3)), qz((2, 8, 3)), 5, causal=True,
         mask=np.array([[1, 1, 0, 1, 1, 0, 1, 1]]), row_k=r.integers(-1, 7, size=(2, 6)))
    case("rowk_per_batch", qz((3, 4, 2)), qz((3, 9, 2)), 7, row_k=np.array([[7], [0], [3]]))
    case("all_masked", qz((1, 3, 2)), qz((1, 5, 2)), 2, mask=np.zeros((1, 5)))
    qi = qz((1, 4, 3))
    qi[0, 1, 0] = INF
    qi[0, 2, 2] = -INF
    case("inf_nan_scores", qi, qz((1, 9, 3)), 9, alpha=0.25)
    case("long_rows_ties", qz((1, 20, 8), 5), qz((1, 1500, 8), 5), 75, alpha=0.125)
    case("long_causal_mask", qz((2, 70, 5)), qz((2, 700, 5)), 35, causal=True,
         mask=(r.random((2, 700)) < 0.8).astype(np.int64))
    return g

GENERATORS = {
    "dct": gen_dct, "idct": gen_idct, "spectral_filter": gen_spectral_filter, "topk_mask": gen_topk_mask,
    "topk_indices": gen_topk_indices, "matmul_topk": gen_matmul_topk, "cummax": gen_cummax, "cumsum": gen_cumsum, "segment_max": gen_segment_max,
    "upsample_nearest": gen_upsample_nearest,
}
