// The column route of the spectral kernels (dct.h, ColumnPlan), written once against a
// vector struct V (vec_avx2.h / vec_avx512.h). A block of `width` adjacent columns is one
// batch: every complex value of the FFT is a row of the block, w = ceil(width / L) vectors
// of real parts followed by w vectors of imaginary parts, so each butterfly is plain vector
// arithmetic with broadcast twiddles (no shuffles, no transposes), and each column only ever
// meets itself: an Inf or NaN stays in its column. Included by dct_impl.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cpu/dct.h"

namespace longrun::cpu::dct_detail {
namespace {  // internal linkage: each ISA file owns its instantiations

template <class V>
struct ColumnKernels {
  using T = typename V::T;
  using M = typename V::M;
  static constexpr int L = V::L;
  static constexpr int64_t kMaxVectors = 64 / L;  // column_block_width() <= 64

  // The block's columns as w vectors, the last one possibly partial.
  struct Cols {
    int64_t w;
    bool whole;
    M mask[kMaxVectors];
    explicit Cols(int64_t width) : w((width + L - 1) / L), whole(width % L == 0) {
      for (int64_t v = 0; v < w; ++v) mask[v] = V::first_n_any(width - v * L);
    }
    T load(const float* row, int64_t v) const {
      return V::load_part(row + v * L, mask[v], whole || v + 1 < w);
    }
    void store(float* row, int64_t v, T x) const {
      V::store_part(row + v * L, mask[v], x, whole || v + 1 < w);
    }
    // Software prefetch of rows, for the passes around the large buffers (the copy passes, the
    // two-step post pass and the DCT-III pre pass from kColumnCopyPassBytes, below). The passes
    // of the whole-buffer FFT that touch rows (the DCT-II's first and post passes, the DCT-III's
    // pre and last passes) fetch nothing: their rows are near enough for the hardware
    // prefetchers, and software prefetches (prefetchw of the output rows above all) only add
    // instructions and traffic there. Around the large buffers, where consecutive steps touch
    // rows pages apart, the prefetchw of output rows pays.
    void fetch(const float* row) const {
      for (int64_t v = 0; v < w; ++v) V::prefetch(row + v * L);
    }
    void fetch_to_l2(const float* row) const {  // prefetcht1
      for (int64_t v = 0; v < w; ++v) __builtin_prefetch(row + v * L, 0, 2);
    }
    void fetch_for_write(const float* row) const {
      for (int64_t v = 0; v < w; ++v) V::prefetch_for_write(row + v * L);
    }
  };
  // After a copy pass (kColumnCopyPassBytes) the DCT-II post pass fetches its output rows
  // kPostAhead k steps ahead, and the DCT-III's scatter after a two-step FFT its elements:
  // 16 steps cover the latency of a row that the hardware prefetchers do not predict. From
  // kColumnCopyPassBytes on, the DCT-III pre pass fetches as the copy passes do (below).
  static constexpr int64_t kPostAhead = 16;
  // The DCT-II post pass after a two-step FFT walks k in two_step_post_order's tiles of
  // kTwoStepPostTile adjacent elements and fetches its output rows kTwoStepPostAhead steps
  // ahead (bitwise the same as k in order). Tiles of 4 read the buffer in runs of 4 adjacent
  // elements while the 4 k of a tile still write output rows near each other; longer tiles
  // spread the writes over rows too far apart. The DCT-III's scatter keeps j in order: its
  // output rows 4j, 4j + 2 are already near each other.
  static constexpr int64_t kTwoStepPostTile = 4, kTwoStepPostAhead = 8;
  // The copy passes of kColumnCopyPassBytes (the DCT-II's gather before the FFT, the DCT-III's
  // scatter after it) fetch their rows kCopyAheadL2 steps ahead into L2 and kCopyAheadL1
  // steps ahead into L1 (the scatter: for writing). From one step to the next their rows lie
  // 4 row strides (8 KiB at 512 columns) apart, so every step crosses a 4 KiB page, which
  // the hardware prefetchers do not follow; without the fetches the gather's row loads take
  // most of the DCT-II's time at n = 4096. Two levels: the far fetch into L2 covers the DRAM
  // latency, the near one into L1 the L2 latency, without holding 48 steps' rows in L1.
  static constexpr int64_t kCopyAheadL2 = 48, kCopyAheadL1 = 8;

  // A sequence in scratch: element j is 2w vectors at p + 2 j w L, plus one cache line of
  // padding after every 16 elements (kColumnPadFloats, dct.h says why).
  struct Buf {
    float* p;
    int64_t w;
    float* at(int64_t j) const { return p + 2 * j * w * L + (j >> 4) * kColumnPadFloats; }
    void load(int64_t j, int64_t v, T& re, T& im) const {
      re = V::load(at(j) + v * L);
      im = V::load(at(j) + (w + v) * L);
    }
    void store(int64_t j, int64_t v, T re, T im) const {
      V::store(at(j) + v * L, re);
      V::store(at(j) + (w + v) * L, im);
    }
  };

  // A pass's load / store through a Buf (the FFT's passes within scratch). Named types, not
  // lambdas, so radix8 can see the Buf and address a butterfly's elements from its first one.
  struct BufLoad {
    Buf buf;
    void operator()(int64_t j, int64_t v, T& re, T& im) const { buf.load(j, v, re, im); }
  };
  struct BufStore {
    Buf buf;
    void operator()(int64_t j, int64_t v, T re, T im) const { buf.store(j, v, re, im); }
  };

  // The R elements first + u step (u < R) of a pass's butterflies, reached through its load
  // or store functor F. Through a Buf (BufLoad, BufStore: the passes within scratch) each
  // is one add from the first element's address: Buf::at (a multiply, a shift and the pad)
  // for every element, column vector and half would bind those passes more than their
  // arithmetic. The offsets are the same for every butterfly of a pass, pad lines included:
  // h, s and the steps are powers of two, and a step that is a multiple of the pad's 16
  // elements crosses u step / 16 pads from any element, while a shorter one divides 16 and
  // the butterflies' first elements lie below it within their 16 (inputs j < h/r, outputs
  // o % 16 < s, or o % 16 + (r - 1) s < 16 where s < 16 / r), so they cross the pads the
  // first butterfly crosses. The passes store by offset into any Buf but load by offset only
  // between two Bufs: the DCT-III's last pass (a Buf into the output rows) loads element by
  // element, which is faster there, and the two-step FFT's second step (fft_two_step) keeps
  // its own lambdas for the same reason. kBuf: by offset (F is BufLoad or BufStore).
  template <int R, class F, bool kBuf>
  struct Elements {
    struct ByIndex {  // any functor: element by element
      const F& f;
      int64_t first, step;
      void load(int u, int64_t v, T& re, T& im) const { f(first + step * u, v, re, im); }
      void store(int u, int64_t v, T re, T im) const { f(first + step * u, v, re, im); }
    };
    struct ByOffset {  // a Buf: the first element's address plus off[u]
      float* p;
      const int64_t* off;
      int64_t wl;  // the imaginary half's offset (w L floats)
      void load(int u, int64_t v, T& re, T& im) const {
        const float* e = p + off[u] + v * L;
        re = V::load(e), im = V::load(e + wl);
      }
      void store(int u, int64_t v, T re, T im) const {
        float* e = p + off[u] + v * L;
        V::store(e, re), V::store(e + wl, im);
      }
    };
    const F& f;
    int64_t step;
    int64_t off[R] = {};  // kBuf: floats from element 0 to element u step
    Elements(const F& fn, int64_t st) : f(fn), step(st) {
      if constexpr (kBuf)
        for (int u = 0; u < R; ++u) off[u] = f.buf.at(st * u) - f.buf.at(0);
    }
    // The butterfly whose first element is `first`.
    auto at(int64_t first) const {
      if constexpr (kBuf)
        return ByOffset{f.buf.at(first), off, f.buf.w * L};
      else
        return ByIndex{f, first, step};
    }
  };

  // A pass's inputs (by offset only between two Bufs) and outputs (by offset into any Buf).
  template <int R, class Load, class Store>
  using Inputs = Elements<R, Load, std::is_same_v<Load, BufLoad> && std::is_same_v<Store, BufStore>>;
  template <int R, class Store>
  using Outputs = Elements<R, Store, std::is_same_v<Store, BufStore>>;

  // (re, im) * (wr, wi).
  static void cmul(T& re, T& im, T wr, T wi) {
    const T r = V::fnmadd(im, wi, V::mul(re, wr));
    im = V::fmadd(im, wr, V::mul(re, wi));
    re = r;
  }

  // One radix-4 Stockham pass (decimation in frequency, autosorting): length-n sub-sequences
  // s apart; y[q + s(4p + t)] = w^{tp} sum_u x[q + s(p + u n/4)] e^{-+2 pi i t u / 4}.
  template <bool kInverse, class Load, class Store>
  static void radix4(int64_t n, int64_t s, int64_t w, const float* tw, const Load& load, const Store& store) {
    const int64_t n1 = n / 4;
    const Inputs<4, Load, Store> in(load, s * n1);
    const Outputs<4, Store> out(store, s);
    for (int64_t p = 0; p < n1; ++p) {
      const float* t = tw + 6 * p;
      const T w1r = V::set1(t[0]), w1i = V::set1(t[1]), w2r = V::set1(t[2]), w2i = V::set1(t[3]),
              w3r = V::set1(t[4]), w3i = V::set1(t[5]);
      for (int64_t q = 0; q < s; ++q) {
        const int64_t j = q + s * p, o = q + 4 * s * p;
        const auto x = in.at(j);
        const auto y = out.at(o);
        for (int64_t v = 0; v < w; ++v) {
          T r[4], i[4];
          for (int u = 0; u < 4; ++u) x.load(u, v, r[u], i[u]);
          dft4<kInverse>(r, i);
          cmul(r[1], i[1], w1r, w1i);
          cmul(r[2], i[2], w2r, w2i);
          cmul(r[3], i[3], w3r, w3i);
          for (int u = 0; u < 4; ++u) y.store(u, v, r[u], i[u]);
        }
      }
    }
  }

  // (re, im) times -i (forward) or +i (inverse): the radix-8 rotations are built from it.
  template <bool kInverse>
  static void rot(T& re, T& im) {
    const T r = re;
    re = kInverse ? V::sub(V::zero(), im) : im;
    im = kInverse ? r : V::sub(V::zero(), r);
  }

  // The 4-point DFT of (a, b, c, d) in place: X0 = (a + c) + (b + d), X2 = (a + c) - (b + d),
  // forward X1 = (a - c) - i (b - d), X3 = (a - c) + i (b - d); the inverse swaps X1 and X3.
  template <bool kInverse>
  static void dft4(T (&r)[4], T (&i)[4]) {
    const T apcr = V::add(r[0], r[2]), apci = V::add(i[0], i[2]), amcr = V::sub(r[0], r[2]),
            amci = V::sub(i[0], i[2]);
    const T bpdr = V::add(r[1], r[3]), bpdi = V::add(i[1], i[3]), bmdr = V::sub(r[1], r[3]),
            bmdi = V::sub(i[1], i[3]);
    T y1r = V::add(amcr, bmdi), y1i = V::sub(amci, bmdr);
    T y3r = V::sub(amcr, bmdi), y3i = V::add(amci, bmdr);
    if (kInverse) std::swap(y1r, y3r), std::swap(y1i, y3i);
    r[0] = V::add(apcr, bpdr), i[0] = V::add(apci, bpdi);
    r[2] = V::sub(apcr, bpdr), i[2] = V::sub(apci, bpdi);
    r[1] = y1r, i[1] = y1i, r[3] = y3r, i[3] = y3i;
  }

  // One radix-8 Stockham pass, as radix4: y[q + s(8p + t)] = w^{tp} sum_u x[q + s(p + u n/8)]
  // W^{tu} (W = e^{-+2 pi i/8}). The 8-point DFT is two 4-point ones (even and odd u), the
  // odd half turned by W^t: W O = (O + rot O)/sqrt2, W^2 O = rot O, W^3 O = (rot O - O)/sqrt2.
  // Half the passes of radix 4 over the L2-resident buffers, for the same arithmetic.
  template <bool kInverse, class Load, class Store>
  static void radix8(int64_t n, int64_t s, int64_t w, const float* tw, const Load& load, const Store& store) {
    const int64_t n1 = n / 8;
    const T c = V::set1(0.70710678118654752f);
    const Inputs<8, Load, Store> in(load, s * n1);
    const Outputs<8, Store> out(store, s);
    for (int64_t p = 0; p < n1; ++p) {
      const float* t = tw + 14 * p;
      for (int64_t q = 0; q < s; ++q) {
        const int64_t j = q + s * p, o = q + 8 * s * p;
        const auto x = in.at(j);
        const auto y = out.at(o);
        for (int64_t v = 0; v < w; ++v) {
          T er[4], ei[4], orr[4], oi[4];
          for (int u = 0; u < 4; ++u) {
            x.load(2 * u, v, er[u], ei[u]);
            x.load(2 * u + 1, v, orr[u], oi[u]);
          }
          dft4<kInverse>(er, ei);
          dft4<kInverse>(orr, oi);
          {
            T r1 = orr[1], i1 = oi[1];
            rot<kInverse>(r1, i1);
            orr[1] = V::mul(V::add(orr[1], r1), c), oi[1] = V::mul(V::add(oi[1], i1), c);
            rot<kInverse>(orr[2], oi[2]);
            T r3 = orr[3], i3 = oi[3];
            rot<kInverse>(r3, i3);
            orr[3] = V::mul(V::sub(r3, orr[3]), c), oi[3] = V::mul(V::sub(i3, oi[3]), c);
          }
          y.store(0, v, V::add(er[0], orr[0]), V::add(ei[0], oi[0]));
          for (int u = 0; u < 4; ++u) {
            if (u > 0) {
              T yr = V::add(er[u], orr[u]), yi = V::add(ei[u], oi[u]);
              cmul(yr, yi, V::set1(t[2 * (u - 1)]), V::set1(t[2 * (u - 1) + 1]));
              y.store(u, v, yr, yi);
            }
            T zr = V::sub(er[u], orr[u]), zi = V::sub(ei[u], oi[u]);
            cmul(zr, zi, V::set1(t[2 * (u + 3)]), V::set1(t[2 * (u + 3) + 1]));
            y.store(u + 4, v, zr, zi);
          }
        }
      }
    }
  }
  // The last pass when log2 h is odd: length-2 butterflies s apart.
  template <class Load, class Store>
  static void radix2(int64_t s, int64_t w, const Load& load, const Store& store) {
    const Inputs<2, Load, Store> in(load, s);
    const Outputs<2, Store> out(store, s);
    for (int64_t q = 0; q < s; ++q) {
      const auto x = in.at(q);
      const auto y = out.at(q);
      for (int64_t v = 0; v < w; ++v) {
        T ar, ai, br, bi;
        x.load(0, v, ar, ai);
        x.load(1, v, br, bi);
        y.store(0, v, V::add(ar, br), V::add(ai, bi));
        y.store(1, v, V::sub(ar, br), V::sub(ai, bi));
      }
    }
  }

  // The length-h FFT (h >= 8; h = 8 is one radix-8 pass): the first pass reads through `first`,
  // the last writes through `last` when `to_last`, else into scratch; returns the scratch
  // buffer holding the result (when !to_last). kSkipRadix2: a last radix-2 pass is left out
  // (column_fft_ends_in_radix2(h); the caller folds it into the pass that reads the result).
  template <bool kInverse, bool kSkipRadix2 = false, class First, class Last>
  static Buf fft(int64_t h, int64_t w, const float* tw, const First& first, const Last& last, bool to_last,
                 Buf a, Buf b, int64_t s_first = 1) {
    auto from = [](const Buf& buf) { return BufLoad{buf}; };
    auto into = [](const Buf& buf) { return BufStore{buf}; };
    Buf in = a, out = b;
    bool is_first = true;
    for (int64_t n = h, s = s_first; n > 1 && !(kSkipRadix2 && n == 2);) {
      const int64_t r = column_fft_radix(n);
      const bool is_last = n == r;
      auto pass = [&](const auto& load, const auto& store) {
        if (r == 8)
          radix8<kInverse>(n, s, w, tw, load, store);
        else if (r == 4)
          radix4<kInverse>(n, s, w, tw, load, store);
        else
          radix2(s, w, load, store);
      };
      const int64_t part = n / r;
      if (is_first && is_last && to_last)  // h = 8: one radix-8 pass
        pass(first, last);
      else if (is_first)
        pass(first, into(out));
      else if (is_last && to_last)
        pass(from(in), last);
      else
        pass(from(in), into(out));
      tw += r > 2 ? 2 * (r - 1) * part : 0;
      n = part;
      s *= r;
      is_first = false;
      std::swap(in, out);
    }
    return in;
  }

  // The two-step FFT of ColumnPlan::split (dct.h), in place in `a`: with h = n1 n2,
  //   X[k1 + n1 k2] = sum_j2 W_n2^{j2 k2} w^{j2 k1} sum_j1 x[n2 j1 + j2] W_n1^{j1 k1}.
  // Step 1 (per j2) reads elements n2 j1 + j2 and writes its twiddled results to n2 k1 + j2;
  // step 2 (per k1) reads the adjacent elements n2 k1 + j2 and writes X[k1 + n1 k2] to
  // n2 k1 + k2 (two_step_at). Each short FFT runs its passes through the small buffers s1, s2
  // (its first pass reads every input before its last pass writes, so in place is safe).
  // The post pass after it writes the output rows in 256-byte pieces and is the largest of
  // the DCT-II's passes at n = 4096, bound by those writes.
  template <bool kInverse>
  static void fft_two_step(const ColumnPlan& pl, int64_t h, int64_t w, const Buf& a, const Buf& s1,
                           const Buf& s2) {
    const int64_t n1 = pl.split, n2 = h / n1;
    for (int64_t j2 = 0; j2 < n2; ++j2) {
      const float* c = pl.cross.data() + 2 * n1 * j2;
      auto first = [&](int64_t j, int64_t v, T& re, T& im) { a.load(n2 * j + j2, v, re, im); };
      auto last = [&](int64_t k, int64_t v, T re, T im) {
        cmul(re, im, V::set1(c[2 * k]), V::set1(c[2 * k + 1]));
        a.store(n2 * k + j2, v, re, im);
      };
      fft<kInverse>(n1, w, pl.fft1.data(), first, last, true, s1, s2);
    }
    for (int64_t k1 = 0; k1 < n1; ++k1) {
      auto first = [&](int64_t j, int64_t v, T& re, T& im) { a.load(n2 * k1 + j, v, re, im); };
      auto last = [&](int64_t k, int64_t v, T re, T im) { a.store(n2 * k1 + k, v, re, im); };
      fft<kInverse>(n2, w, pl.fft2.data(), first, last, true, s1, s2);
    }
  }
  // Where fft_two_step leaves X[k].
  static int64_t two_step_at(const ColumnPlan& pl, int64_t h, int64_t k) {
    return h / pl.split * (k % pl.split) + k / pl.split;
  }
  // The order in which the pass after a two-step FFT visits X[k] (k = k1 + n1 k2 at n2 k1 +
  // k2): tiles of kTwoStepPostTile adjacent k2, in each tile k1 = 0, 1, ..., so every step reads
  // a run of adjacent elements rather than one n2 elements (32 KiB at n = 4096) from the last,
  // and the output rows stay within a window of n1 kTwoStepPostTile rows.
  static int64_t two_step_post_order(const ColumnPlan& pl, int64_t step) {
    const int64_t n1 = pl.split, r = step % (n1 * kTwoStepPostTile);
    return r / kTwoStepPostTile + n1 * ((step - r) / n1 + r % kTwoStepPostTile);
  }
  // The FFT buffers of a block: `a`, and `b` or, for the two-step FFT, the two short-FFT
  // buffers within b's space (each at most h / 2 elements, so both fit).
  struct Buffers {
    Buf a, b, s1, s2;
    Buffers(const ColumnPlan& pl, int64_t w, float* work)
        : a{work, w}, b{work + column_buffer_floats(pl.n, w * L), w}, s1(b), s2(b) {
      if (pl.split) s2.p = s1.p + column_buffer_floats(2 * std::max(pl.split, pl.n / 2 / pl.split), w * L);
    }
  };

  // Whether a length-2h transform of w vectors of columns takes the separate copy pass.
  static bool copy_pass(int64_t h, int64_t w) { return column_copy_pass(h, w * L); }

  // Source row of position t of Makhoul's shuffled column of length n (v_t = x_row); the
  // DCT-II reads it from ColumnPlan::shuffled instead (dct.h says why).
  static int64_t shuffled_source(int64_t t, int64_t n) { return 2 * t < n ? 2 * t : 2 * (n - 1 - t) + 1; }

  // DCT-II: z_j = v_2j + i v_2j+1, Z = FFT_h(z); for 0 < k < h with A = Z_k, B = Z_{h-k}:
  //   2 Re V_k = S + wc T - ws D,  2 Im V_k = Q - wc D - ws T
  // (S, D = Ar +- Br, T, Q = Ai +- Bi; wc - i ws = e^{-2 pi i k/n}), and
  //   X_k = c/2 (cos 2V_r + sin 2V_i),  X_{n-k} = c/2 (sin 2V_r - cos 2V_i)  (angle pi k/2n).
  // kFoldRadix2 (folds_radix2): the FFT's last radix-2 pass runs inside the post pass
  // (post_radix2).
  //
  // dct2 and dct3 are flattened (every call inside inlined, so each transform's passes are
  // compiled with its own loads and stores): left to its heuristics, GCC inlines some FFT
  // instantiations and not others, and which ones moves with unrelated edits to this file,
  // so the speed of one transform would depend on changes to the other. The cost is code size.
  template <bool kFoldRadix2>
  [[gnu::flatten]] static void dct2(const ColumnPlan& pl, const float* x, int64_t xs, float* y, int64_t ys,
                                    int64_t width, float* work) {
    const Cols cols(width);
    const int64_t n = pl.n, h = n / 2, w = cols.w, keep = pl.rows_out;
    const int32_t* src = pl.shuffled.data();
    auto first = [&](int64_t j, int64_t v, T& re, T& im) {
      re = cols.load(x + src[2 * j] * xs, v);
      im = cols.load(x + src[2 * j + 1] * xs, v);
    };
    auto none = [](int64_t, int64_t, T, T) {};
    const Buffers bufs(pl, w, work);
    const Buf &a = bufs.a, &b = bufs.b;
    const bool two_step = pl.split != 0, copied = copy_pass(h, w);  // copied: a gather pass first
    Buf z = a;
    if (two_step || copied) {
      for (int64_t j = 0; j < h; ++j) {
        if (j + kCopyAheadL2 < h) {
          cols.fetch_to_l2(x + src[2 * (j + kCopyAheadL2)] * xs);
          cols.fetch_to_l2(x + src[2 * (j + kCopyAheadL2) + 1] * xs);
        }
        if (j + kCopyAheadL1 < h) {
          cols.fetch(x + src[2 * (j + kCopyAheadL1)] * xs);
          cols.fetch(x + src[2 * (j + kCopyAheadL1) + 1] * xs);
        }
        for (int64_t v = 0; v < w; ++v) {
          T re, im;
          first(j, v, re, im);
          a.store(j, v, re, im);
        }
      }
      if (two_step) {
        fft_two_step<false>(pl, h, w, a, bufs.s1, bufs.s2);
      } else {
        z = fft<false>(h, w, pl.fft.data(), BufLoad{a}, none, false, a, b);
      }
    } else {
      z = fft<false, kFoldRadix2>(h, w, pl.fft.data(), first, none, false, a, b);
    }
    const float* e = pl.edge.data();
    if constexpr (kFoldRadix2) {
      post_radix2(cols, z, e, n, y, ys);
      return;
    }
    for (int64_t v = 0; v < w; ++v) {
      T zr, zi;
      z.load(0, v, zr, zi);
      edge_values(cols, e, h < keep, y, h * ys, v, zr, zi);
    }
    if (two_step) {
      // Z_k lies at two_step_at(k): k in tiles (two_step_post_order) reads runs of adjacent
      // elements, Z_k forwards and Z_{h-k} backwards, where k in order reads both n2
      // elements apart.
      for (int64_t step = 1; step < h; ++step) {  // step 0 is k = 0
        if (step + kTwoStepPostAhead < h) {
          const int64_t f = two_step_post_order(pl, step + kTwoStepPostAhead);
          if (f < keep) cols.fetch_for_write(y + f * ys);
          if (n - f < keep) cols.fetch_for_write(y + (n - f) * ys);
        }
        const int64_t k = two_step_post_order(pl, step);
        if (k >= keep && n - k >= keep) continue;
        dct2_post(cols, z, two_step_at(pl, h, k), two_step_at(pl, h, h - k), e + 4 * k, k, n, keep, y, ys);
      }
      return;
    }
    for (int64_t k = 1; k < h; ++k) {
      if (k >= keep && n - k >= keep) {  // neither output kept: jump to the first X_{n-k} kept
        k = n - keep;
        continue;
      }
      if (copied && k + kPostAhead < h) {
        if (k + kPostAhead < keep) cols.fetch_for_write(y + (k + kPostAhead) * ys);
        if (n - k - kPostAhead < keep) cols.fetch_for_write(y + (n - k - kPostAhead) * ys);
      }
      dct2_post(cols, z, k, h - k, e + 4 * k, k, n, keep, y, ys);
    }
  }
  // The DCT-II post pass's constants of coefficient k, broadcast: c = ColumnPlan::edge + 4 k.
  struct PostConstants {
    T wc, ws, ca, sb;
    explicit PostConstants(const float* c)
        : wc(V::set1(c[0])), ws(V::set1(c[1])), ca(V::set1(c[2])), sb(V::set1(c[3])) {}
  };
  // The DCT-II's outputs X_0 = e[0] (Zr + Zi) and, with keep_h, X_h = e[1] (Zr - Zi) (at y
  // and y + yh) of column vector v from Z_0.
  static void edge_values(const Cols& cols, const float* e, bool keep_h, float* y, int64_t yh, int64_t v,
                          T zr, T zi) {
    cols.store(y, v, V::mul(V::set1(e[0]), V::add(zr, zi)));
    if (keep_h) cols.store(y + yh, v, V::mul(V::set1(e[1]), V::sub(zr, zi)));
  }
  // The DCT-II's outputs X_k and X_{n-k} (those below keep) of column vector v from A = Z_k
  // and B = Z_{h-k}.
  static void post_values(const Cols& cols, const PostConstants& c, int64_t k, int64_t n, int64_t keep,
                          float* y, int64_t ys, int64_t v, T ar, T ai, T br, T bi) {
    const T s = V::add(ar, br), d = V::sub(ar, br), t = V::add(ai, bi), q = V::sub(ai, bi);
    const T vr = V::fnmadd(c.ws, d, V::fmadd(c.wc, t, s)), vi = V::fnmadd(c.ws, t, V::fnmadd(c.wc, d, q));
    if (k < keep) cols.store(y + k * ys, v, V::fmadd(c.ca, vr, V::mul(c.sb, vi)));
    if (n - k < keep) cols.store(y + (n - k) * ys, v, V::fnmadd(c.ca, vi, V::mul(c.sb, vr)));
  }
  // The same with A and B read from elements a and b of z.
  static void dct2_post(const Cols& cols, const Buf& z, int64_t a, int64_t b, const float* c, int64_t k,
                        int64_t n, int64_t keep, float* y, int64_t ys) {
    const PostConstants pc(c);
    for (int64_t v = 0; v < cols.w; ++v) {
      T ar, ai, br, bi;
      z.load(a, v, ar, ai);
      z.load(b, v, br, bi);
      post_values(cols, pc, k, n, keep, y, ys, v, ar, ai, br, bi);
    }
  }

  // Whether a DCT-II block takes dct2<true>: the whole-buffer FFT read straight from the rows
  // (no copy pass), ending in a radix-2 pass, every output kept.
  static bool folds_radix2(const ColumnPlan& pl, int64_t w) {
    return !pl.split && pl.rows_out == pl.n && column_fft_ends_in_radix2(pl.n / 2) && !copy_pass(pl.n / 2, w);
  }
  // The DCT-II post pass with the FFT's last radix-2 pass folded in (folds_radix2): z holds
  // the FFT before that pass, whose butterflies give Z_q = z_q + z_{q+g} and Z_{q+g} = z_q -
  // z_{q+g} (g = h/2). The post pass needs Z_k with Z_{h-k}, so one step reads z at q, q + g,
  // g - q and h - q and finishes k = q, h - q, g - q and g + q: one pass over the buffer
  // fewer, the same arithmetic (bitwise the same outputs).
  static void post_radix2(const Cols& cols, const Buf& z, const float* e, int64_t n, float* y, int64_t ys) {
    const int64_t h = n / 2, g = h / 2, w = cols.w;
    auto post = [&](int64_t k, const PostConstants& c, int64_t v, T ar, T ai, T br, T bi) {
      post_values(cols, c, k, n, n, y, ys, v, ar, ai, br, bi);
    };
    const PostConstants cg(e + 4 * g);
    for (int64_t v = 0; v < w; ++v) {  // q = 0: Z_0 (k = 0 and h: V_0 = Zr + Zi, V_h = Zr - Zi), Z_g (A = B)
      T ar, ai, br, bi;
      z.load(0, v, ar, ai);
      z.load(g, v, br, bi);
      edge_values(cols, e, true, y, h * ys, v, V::add(ar, br), V::add(ai, bi));
      const T mr = V::sub(ar, br), mi = V::sub(ai, bi);
      post(g, cg, v, mr, mi, mr, mi);
    }
    for (int64_t q = 1; 2 * q <= g; ++q) {
      const PostConstants c1(e + 4 * q), c2(e + 4 * (h - q)), c3(e + 4 * (g - q)), c4(e + 4 * (g + q));
      for (int64_t v = 0; v < w; ++v) {
        T ar, ai, br, bi;
        z.load(q, v, ar, ai);
        z.load(q + g, v, br, bi);
        const T zqr = V::add(ar, br), zqi = V::add(ai, bi);  // Z_q
        const T zgr = V::sub(ar, br), zgi = V::sub(ai, bi);  // Z_{g+q}
        if (2 * q == g) {  // q = h/4: g - q = q, so the other pair is this one
          post(q, c1, v, zqr, zqi, zgr, zgi);
          post(h - q, c2, v, zgr, zgi, zqr, zqi);
          continue;
        }
        T cr, ci, dr, di;
        z.load(g - q, v, cr, ci);
        z.load(h - q, v, dr, di);
        const T zcr = V::add(cr, dr), zci = V::add(ci, di);  // Z_{g-q}
        const T zdr = V::sub(cr, dr), zdi = V::sub(ci, di);  // Z_{h-q}
        post(q, c1, v, zqr, zqi, zdr, zdi);
        post(h - q, c2, v, zdr, zdi, zqr, zqi);
        post(g - q, c3, v, zcr, zci, zgr, zgi);
        post(g + q, c4, v, zgr, zgi, zcr, zci);
      }
    }
  }

  // Whether a DCT-III block takes dct3<true>: the whole-buffer FFT writing the rows itself (no
  // copy pass), of a length 2 * 8^m (ColumnPlan::fft_half), with AVX-512 only: a step holds
  // eight input rows and four Y values per column vector, too many for 16 AVX2 registers
  // (the AVX2 code would spill and run slower than with the separate pre pass).
  static bool dct3_folds_radix2(const ColumnPlan& pl, int64_t w) {
    return L == 16 && !pl.split && !pl.fft_half.empty() && !copy_pass(pl.n / 2, w);
  }
  // The DCT-III pre-twiddle's constants of coefficient k, broadcast: ColumnPlan::edge + 6 k
  // (g cos a_k, g sin a_k, g cos a_{h-k}, g sin a_{h-k}, cos and sin of 2 pi k/n).
  struct PreConstants {
    T hc, hs, hc2, hs2, cf, sf;
    explicit PreConstants(const float* c)
        : hc(V::set1(c[0])),
          hs(V::set1(c[1])),
          hc2(V::set1(c[2])),
          hs2(V::set1(c[3])),
          cf(V::set1(c[4])),
          sf(V::set1(c[5])) {}
  };
  // The DCT-III pre pass with the FFT's first pass folded in (dct3_folds_radix2): that FFT
  // runs radix 2 first (Stockham, n = h, s = 1): y_2p = Y_p + Y_{p+g}, y_2p+1 = (Y_p -
  // Y_{p+g}) w^p (g = h/2, w = e^{2 pi i/h}), then radix 8 from s = 2 (ColumnPlan::fft_half).
  // Y_p, Y_{h-p}, Y_{g-p} and Y_{g+p} come from the same eight rows, so one step finishes
  // butterflies p and g - p, writing the first buffer: one pass over it fewer.
  template <class Coef, class Pre>
  static void pre_radix2(const Cols& cols, const ColumnPlan& pl, const Coef& coef, const Pre& pre,
                         float* work) {
    const int64_t n = pl.n, h = n / 2, g = h / 2, w = cols.w;
    const float* e = pl.edge.data();
    const Buf a{work, w};
    // w^p = e^{2 pi i p/h}: cos and sin of the angle of edge row 2p (none for p = 0).
    struct Twiddle {
      T re, im;
    };
    auto twiddle = [&](int64_t p) { return Twiddle{V::set1(e[12 * p + 4]), V::set1(e[12 * p + 5])}; };
    auto butterfly = [&](int64_t p, const Twiddle* t, int64_t v, T ar, T ai, T br, T bi) {
      T dr = V::sub(ar, br), di = V::sub(ai, bi);
      if (t != nullptr) cmul(dr, di, t->re, t->im);
      a.store(2 * p, v, V::add(ar, br), V::add(ai, bi));
      a.store(2 * p + 1, v, dr, di);
    };
    for (int64_t p = 0; 2 * p <= g; ++p) {
      if (p == 0) {  // Y_0 and Y_g
        const PreConstants cg(e + 6 * g);
        for (int64_t v = 0; v < w; ++v) {
          T zr, zi, unused_r, unused_i;
          const T c0 = V::mul(V::set1(e[0]), coef(0, v)), ch = V::mul(V::set1(e[1]), coef(h, v));
          const T xg = coef(g, v), x3g = coef(3 * g, v);
          pre(cg, xg, x3g, xg, x3g, zr, zi, unused_r, unused_i);
          butterfly(0, nullptr, v, V::add(c0, ch), V::sub(c0, ch), zr, zi);
        }
        continue;
      }
      // The constants of the pairs (Y_p, Y_{h-p}), (Y_{g-p}, Y_{g+p}) and the butterflies'
      // twiddles, broadcast once per step (not per column vector).
      const PreConstants cp(e + 6 * p);
      const Twiddle tp = twiddle(p);
      if (2 * p == g) {  // p + g = h - p
        for (int64_t v = 0; v < w; ++v) {
          T yr, yi, zr, zi;
          pre(cp, coef(p, v), coef(n - p, v), coef(h - p, v), coef(h + p, v), yr, yi, zr, zi);
          butterfly(p, &tp, v, yr, yi, zr, zi);
        }
        continue;
      }
      const PreConstants cq(e + 6 * (g - p));
      const Twiddle tq = twiddle(g - p);
      for (int64_t v = 0; v < w; ++v) {
        T yr, yi, zr, zi, ur, ui, tr, ti;
        pre(cp, coef(p, v), coef(n - p, v), coef(h - p, v), coef(h + p, v), yr, yi, zr, zi);  // Y_p, Y_{h-p}
        pre(cq, coef(g - p, v), coef(3 * g + p, v), coef(g + p, v), coef(3 * g - p, v), ur, ui, tr,
            ti);  // Y_{g-p}, Y_{g+p}
        butterfly(p, &tp, v, yr, yi, tr, ti);
        butterfly(g - p, &tq, v, ur, ui, zr, zi);
      }
    }
  }

  // DCT-III: z_k = e^{i a_k}(h_k X_k - i g X_{n-k}) (a_k = pi k/2n, g = 1/sqrt(2n), h_0 =
  // 1/sqrt n) is the spectrum of the shuffled output; its length-h backward FFT of
  //   Y_k = (z_k + conj z_{h-k}) + i e^{2 pi i k/n} (z_k - conj z_{h-k})
  // is v_2j + i v_2j+1 (z_0 and z_h are real: Y_0 = (h_0 X_0 + sqrt2 g X_h) + i (h_0 X_0 -
  // sqrt2 g X_h)). The last FFT pass writes v straight to the unshuffled output rows, or, for
  // large buffers (copy_pass, two-step), one pass after the FFT does.
  // kFoldRadix2 (dct3_folds_radix2): the FFT runs radix 2 first, that pass inside the pre pass.
  template <bool kFoldRadix2>
  [[gnu::flatten]] static void dct3(const ColumnPlan& pl, const float* x, int64_t xs, float* y, int64_t ys,
                                    int64_t width, float* work) {
    const Cols cols(width);
    const int64_t n = pl.n, h = n / 2, w = cols.w, used = pl.rows_in;
    const float* e = pl.edge.data();
    auto coef = [&](int64_t k, int64_t v) { return k < used ? cols.load(x + k * xs, v) : V::zero(); };
    // Y_k (yr, yi) and Y_{h-k} (zr, zi) from a = X_k, b = X_{n-k}, a2 = X_{h-k}, b2 = X_{h+k}
    // (0 < k < h), c = PreConstants(k). With z = z_k, g = z_{h-k}, s = z + conj g, d = z - conj g
    // and u = e^{2 pi i k/n} d: Y_k = s + i u and, as z_{h-k}'s own s and d are conj s and
    // -conj d and e^{2 pi i (h-k)/n} = -conj e^{2 pi i k/n}, Y_{h-k} = conj s + i conj u. So the
    // pair shares z, g, s, d and u: 20 operations, where each Y on its own took 16.
    auto pre = [](const PreConstants& c, T a, T b, T a2, T b2, T& yr, T& yi, T& zr, T& zi) {
      const T pr = V::fmadd(c.hc, a, V::mul(c.hs, b)), pi = V::fnmadd(c.hc, b, V::mul(c.hs, a));
      const T gr = V::fmadd(c.hc2, a2, V::mul(c.hs2, b2)), gi = V::fnmadd(c.hc2, b2, V::mul(c.hs2, a2));
      const T sr = V::add(pr, gr), si = V::sub(pi, gi), dr = V::sub(pr, gr), di = V::add(pi, gi);
      const T ur = V::fnmadd(c.sf, di, V::mul(c.cf, dr)), ui = V::fmadd(c.cf, di, V::mul(c.sf, dr));
      yr = V::sub(sr, ui), yi = V::add(si, ur);
      zr = V::add(sr, ui), zi = V::sub(ur, si);
    };
    auto last = [&](int64_t j, int64_t v, T re, T im) {
      cols.store(y + shuffled_source(2 * j, n) * ys, v, re);
      cols.store(y + shuffled_source(2 * j + 1, n) * ys, v, im);
    };
    if constexpr (kFoldRadix2) {
      pre_radix2(cols, pl, coef, pre, work);
      const Buffers bufs(pl, w, work);
      fft<true>(h / 2, w, pl.fft_half.data(), BufLoad{bufs.a}, last, true, bufs.a, bufs.b, 2);
      return;
    }
    // Y_k and Y_{h-k} read the same four rows: one pass in row order fills the first buffer
    // (reading each input row once), and the FFT starts from there.
    const Buf ybuf{work, w};
    const BufLoad first{ybuf};
    const bool far = copy_pass(h, w);  // rows fetched at two distances (kCopyAheadL2), else none
    for (int64_t k = 0; 2 * k <= h; ++k) {
      if (far) {
        if (const int64_t f = k + kCopyAheadL2; 2 * f <= h)
          for (int64_t r : {f, n - f, h - f, h + f})
            if (r < used) cols.fetch_to_l2(x + r * xs);
        if (const int64_t f = k + kCopyAheadL1; 2 * f <= h)
          for (int64_t r : {f, n - f, h - f, h + f})
            if (r < used) cols.fetch(x + r * xs);
      }
      if (k == 0) {
        for (int64_t v = 0; v < w; ++v) {
          const T a = V::mul(V::set1(e[0]), coef(0, v)), b = V::mul(V::set1(e[1]), coef(h, v));
          ybuf.store(0, v, V::add(a, b), V::sub(a, b));
        }
        continue;
      }
      const PreConstants ck(e + 6 * k);
      for (int64_t v = 0; v < w; ++v) {
        T yr, yi, zr, zi;
        const T a = coef(k, v), b = coef(n - k, v), a2 = coef(h - k, v), b2 = coef(h + k, v);
        pre(ck, a, b, a2, b2, yr, yi, zr, zi);
        ybuf.store(k, v, yr, yi);
        if (2 * k != h) ybuf.store(h - k, v, zr, zi);
      }
    }
    const Buffers bufs(pl, w, work);
    const bool two_step = pl.split != 0;
    if (!two_step && !copy_pass(h, w)) {
      fft<true>(h, w, pl.fft.data(), first, last, true, bufs.a, bufs.b);
      return;
    }
    auto none = [](int64_t, int64_t, T, T) {};
    Buf z = bufs.a;
    if (two_step)
      fft_two_step<true>(pl, h, w, bufs.a, bufs.s1, bufs.s2);
    else
      z = fft<true>(h, w, pl.fft.data(), first, none, false, bufs.a, bufs.b);
    for (int64_t j = 0; j < h; ++j) {
      const int64_t at = two_step ? two_step_at(pl, h, j) : j;
      if (two_step && j + kPostAhead < h) {  // elements n2 apart: fetched ahead
        const float* ahead = z.at(two_step_at(pl, h, j + kPostAhead));
        for (int64_t v = 0; v < 2 * w; ++v) V::prefetch(ahead + v * L);
      }
      if (j + kCopyAheadL2 < h) {  // the output rows, as the copy pass of dct2 fetches its input
        cols.fetch_to_l2(y + shuffled_source(2 * (j + kCopyAheadL2), n) * ys);
        cols.fetch_to_l2(y + shuffled_source(2 * (j + kCopyAheadL2) + 1, n) * ys);
      }
      if (j + kCopyAheadL1 < h) {
        cols.fetch_for_write(y + shuffled_source(2 * (j + kCopyAheadL1), n) * ys);
        cols.fetch_for_write(y + shuffled_source(2 * (j + kCopyAheadL1) + 1, n) * ys);
      }
      for (int64_t v = 0; v < w; ++v) {
        T re, im;
        z.load(at, v, re, im);
        last(j, v, re, im);
      }
    }
  }

  static void run(const ColumnPlan& pl, const float* x, int64_t xs, float* y, int64_t ys, int64_t width,
                  float* work) {
    if (pl.inverse && dct3_folds_radix2(pl, (width + L - 1) / L))
      dct3<true>(pl, x, xs, y, ys, width, work);
    else if (pl.inverse)
      dct3<false>(pl, x, xs, y, ys, width, work);
    else if (folds_radix2(pl, (width + L - 1) / L))
      dct2<true>(pl, x, xs, y, ys, width, work);
    else
      dct2<false>(pl, x, xs, y, ys, width, work);
  }
};

}  // namespace
}  // namespace longrun::cpu::dct_detail
