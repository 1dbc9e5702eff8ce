// Chapter 8, step 1: what chapter 3's attention costs as seq_len grows, and
// the inputs the other steps share.
#include "03-softmax/softmax.hpp"
#include "08-efficient-attention/efficient.hpp"
#include "sa/measure.hpp"
#include "08-efficient-attention/steps.hpp"

#include "sa/cli.hpp"
#include "sa/plot.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace sa::ch8 {

Small make_small(Generator& gen) {
  Small s;
  s.Q = gen.randn(Small::seq_len, Small::d_k);
  s.K = gen.randn(Small::seq_len, Small::d_k);
  s.V = gen.randn(Small::seq_len, Small::d_k);
  s.dO = gen.randn(Small::seq_len, Small::d_k);
  return s;
}

Large make_large(Generator& gen, const Options& o) {
  Large l;
  l.Q = gen.randn(o.seq_len, o.d_k);
  l.K = gen.randn(o.seq_len, o.d_k);
  l.V = gen.randn(o.seq_len, o.d_k);
  l.dO = gen.randn(o.seq_len, o.d_k);
  l.naive_fits = o.seq_len <= kNaiveMaxSeqLen;
  return l;
}

double fitted_exponent(const std::vector<double>& T, const std::vector<double>& ms) {
  // Least squares of y = log ms against x = log T: slope = cov(x, y) / var(x).
  const double n = double(T.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < T.size(); ++i) {
    const double x = std::log(T[i]), y = std::log(ms[i]);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

// How much of the naive path's time at its largest T is the operating
// system handing over memory: its scores and weights are allocated afresh
// every call, and each new page costs what this machine measures now.
std::string fresh_pages_sentence(double naive_ms, double tiled_ms, double naive_extra_bytes) {
  const double page_us = measure::fresh_page_us();
  const double pages = naive_extra_bytes / 4096.0, pages_ms = pages * page_us / 1e3;
  const double share = std::min(1.0, pages_ms / naive_ms);
  std::string s = fmt::format(
      "At T = {} the naive call took {:.1f} times as long as the tiled one. Part of that is not arithmetic: "
      "its {} of scores and weights are new memory every call, {:.0f} pages of 4 KiB the operating system must "
      "hand over, at {:.2f} us a page on this machine (measured now), about {:.1f} ms, {:.0f}% of the call.",
      kNaiveMaxSeqLen, naive_ms / tiled_ms, bytes_str(naive_extra_bytes), pages, page_us, pages_ms, 100.0 * share);
  // What the pages explain of the gap between the two calls: "mostly" only
  // when they are more than half of it.
  const double gap_ms = naive_ms - tiled_ms;
  const double of_gap = gap_ms > 0 ? pages_ms / gap_ms : 1.0;
  if (page_us > 1.0)
    s += " That page cost is high (0.1 to 0.3 us is usual; some virtual machines are far slower).";
  if (of_gap >= 0.995)  // (printed as 100%: the pages alone account for the whole gap)
    s += " So here the whole gap is memory handling; the scores still have to be written and read back.";
  else if (of_gap > 0.5)
    s += fmt::format(" So here most of the gap ({:.0f}% of it) is memory handling; the scores still have to be "
                     "written and read back.",
                     100.0 * of_gap);
  else
    s += fmt::format(" It explains {:.0f}% of the gap; the rest is arithmetic done worse: chapter 3's products "
                     "and softmax over a matrix too large for the cache, against tiles that stay in it.",
                     100.0 * of_gap);
  return s;
}

void quadratic_cost(uint64_t seed, const Options& o, Figures& figures) {
  Generator gen(seed);
  say(fmt::format("Chapter 3's attention(Q, K, V) builds the scores Q K^T / sqrt(d_k) and then the weights, two "
                  "(seq_len, seq_len) matrices, before it multiplies by V. Below, Q, K and V are (T, {}) for T from "
                  "64 to 8192, timed for chapter 3's attention (naive) and this chapter's tiled_attention (step 3). "
                  "'extra' is the resident memory a call adds beyond Q, K, V and the output, measured. The naive "
                  "path runs up to T = {}.",
                  o.d_k, kNaiveMaxSeqLen));
  fmt::print("  {:>6}  {:>14}  {:>12}  {:>12}  {:>12}  {:>12}\n", "T", "T x T floats", "naive", "naive extra",
             "tiled", "tiled extra");
  std::vector<double> tiled_fit_ms, tiled_fit_T;
  std::vector<double> Ts, naive_ms, naive_extra, tiled_ms, tiled_extra, score_bytes, fit_T, fit_ms;
  double bytes_per_score = 0;
  bool memory_measured = true;  // false where this system cannot measure it (measured_bytes_str)
  // One call of each path before anything is measured. The first call of a
  // function touches memory no later call does: pages of its machine code,
  // of the stack under Eigen's products, of the allocator's own tables. Those
  // count in the resident memory once, and would land on T = 64 alone (the
  // naive path measured 380 KB there, above its 160 KB at T = 128).
  {
    const Matrix W = Matrix::Constant(64, o.d_k, 0.01f);
    (void)attention(W, W, W);
    (void)tiled_attention(W, W, W, false, o.block);
  }
  for (int64_t T = 64; T <= 8192; T *= 2) {
    const Matrix Q = gen.randn(T, o.d_k), K = gen.randn(T, o.d_k), V = gen.randn(T, o.d_k);
    const int64_t out_bytes = T * o.d_k * int64_t(sizeof(float));
    const double scores = double(T) * double(T) * sizeof(float);
    std::string naive_cells = fmt::format("{:>12}  {:>12}", "not run", "-");
    if (T <= kNaiveMaxSeqLen) {
      auto naive = [&] { Attention a = attention(Q, K, V); };
      const std::optional<int64_t> measured = measure::extra_bytes(naive, out_bytes);
      memory_measured = memory_measured && measured;
      const double extra = double(measured.value_or(0));
      const double ms = measure::median_ms(naive, 0.1);
      naive_cells = fmt::format("{:>12}  {:>12}", fmt::format("{:.3f} ms", ms), measured_bytes_str(measured));
      Ts.push_back(double(T));
      naive_ms.push_back(ms);
      naive_extra.push_back(extra);
      if (T >= 512) {
        fit_T.push_back(double(T));
        fit_ms.push_back(ms);
      }
      bytes_per_score = extra / (double(T) * double(T));
    }
    auto tiled = [&] { TiledAttention t = tiled_attention(Q, K, V, false, o.block); };
    const std::optional<int64_t> measured = measure::extra_bytes(tiled, out_bytes);
    memory_measured = memory_measured && measured;
    const double extra = double(measured.value_or(0));
    const double ms = measure::median_ms(tiled, 0.1);
    tiled_ms.push_back(ms);
    if (T >= 512) {
      tiled_fit_T.push_back(double(T));
      tiled_fit_ms.push_back(ms);
    }
    tiled_extra.push_back(extra);
    score_bytes.push_back(scores);
    fmt::print("  {:>6}  {:>14}  {}  {:>12}  {:>12}\n", T, bytes_str(scores), naive_cells,
               fmt::format("{:.3f} ms", ms), measured_bytes_str(measured));
  }
  const double b = fitted_exponent(fit_T, fit_ms);
  double tiled_extra_at_naive_max = 0;  // the tiled path's extra memory at the naive path's largest T
  for (size_t i = 0; i < tiled_extra.size(); ++i)
    if (int64_t(64) << i == kNaiveMaxSeqLen) tiled_extra_at_naive_max = tiled_extra[i];
  // What the measured memory says, or that there is none ('n/a' above).
  const std::string measured_memory =
      memory_measured
          ? fmt::format("The naive path's extra memory at T = {} is {:.1f} bytes per score: the scores and the "
                        "weights, 4 bytes each, alive at the same time; the tiled path's is {}.",
                        kNaiveMaxSeqLen, bytes_per_score, bytes_str(tiled_extra_at_naive_max))
          : std::string("The extra memory is not measured on this system ('n/a'): measuring it resets the peak "
                        "resident size through /proc/self/clear_refs, which this program cannot write.");
  say(fmt::format("The naive time grows as T^{:.2f} (least squares over T = 512 to {}): doubling T multiplies it by "
                  "about {:.1f}; the tiled one as T^{:.2f} (T = 512 to 8192): the same work, done in tiles. {} At "
                  "T = 8192 the scores alone would take {}, at 65536 {}; the tiled path never needs more than one "
                  "{} x {} tile of them.",
                  b, kNaiveMaxSeqLen, std::pow(2.0, b), fitted_exponent(tiled_fit_T, tiled_fit_ms), measured_memory,
                  bytes_str(8192.0 * 8192 * 4), bytes_str(65536.0 * 65536 * 4), o.block, o.block));
  // (No sentence when the memory could not be measured.)
  if (memory_measured && naive_extra.back() > 0)
    say(fresh_pages_sentence(naive_ms.back(), tiled_ms[naive_ms.size() - 1], naive_extra.back()));

  std::vector<double> all_T;
  for (int64_t T = 64; T <= 8192; T *= 2) all_T.push_back(double(T));
  figures.draw("time_vs_seq_len.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("Time of one attention forward against seq_len (d_k = {}, one core)", o.d_k);
    p.xlabel = "seq_len T (log scale)";
    p.ylabel = "median time (ms, log scale)";
    p.logx = p.logy = true;
    // A slope-2 guide, c T^2, to judge both slopes against. Through a
    // naive point it lay on the naive curve, whose slope is about 2 from
    // T = 512 on, and could not be seen. So it runs parallel, 3 times above
    // the naive point nearest to it (c is 3 times the largest ms / T^2):
    // clear of every naive point, and its name says it is shifted,
    // so its height is not read as a time.
    double per_T2 = 0;
    for (size_t i = 0; i < Ts.size(); ++i) per_T2 = std::max(per_T2, naive_ms[i] / (Ts[i] * Ts[i]));
    plot::Series guide{"T^2, slope 2 (a guide, set 3x above the naive curve)", {}, {}, plot::Series::Style::Dashed};
    for (double T : all_T) {
      guide.x.push_back(T);
      guide.y.push_back(3 * per_T2 * T * T);
    }
    p.series = {{fmt::format("naive, chapter 3 (fitted slope {:.2f} from T = 512)", b), Ts, naive_ms},
                {fmt::format("tiled, block {} (fitted slope {:.2f} from T = 512)", o.block, fitted_exponent(tiled_fit_T, tiled_fit_ms)),
                 all_T, tiled_ms},
                guide};
    return plot::lines(path, p);
  });
  figures.draw("memory_vs_seq_len.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Extra memory of one attention forward against seq_len";
    p.xlabel = "seq_len T (log scale)";
    // In MiB, as the table prints them: bytes made ticks of 100000 and 1e6.
    p.ylabel = "MiB beyond Q, K, V and the output (log scale)";
    p.logx = p.logy = true;
    const auto mib = [](std::vector<double> bytes) {
      for (double& b : bytes) b /= 1024.0 * 1024.0;
      return bytes;
    };
    // A measured 0 is drawn as one page: log axes have no 0. Either path can
    // measure 0 (the naive one did at T = 64 with --d-k 512, and the figure
    // failed, ending the run).
    static constexpr double kPage = 4096.0;  // bytes of one page
    const auto at_least_a_page = [](std::vector<double> bytes) {
      for (double& b : bytes) b = std::max(b, kPage);
      return bytes;
    };
    p.series = {{"T x T float scores (computed)", all_T, mib(score_bytes), plot::Series::Style::Dashed}};
    if (memory_measured) {
      // (The legend says so when a value was raised to the page.)
      const auto name = [](const std::string& variant, const std::vector<double>& bytes) {
        const bool raised = std::any_of(bytes.begin(), bytes.end(), [](double b) { return b < kPage; });
        return variant + (raised ? " (measured; under 4 KiB drawn at 4 KiB)" : " (measured)");
      };
      p.series.push_back({name("naive, chapter 3", naive_extra), Ts, mib(at_least_a_page(naive_extra))});
      p.series.push_back({name("tiled", tiled_extra), all_T, mib(at_least_a_page(tiled_extra))});
    } else {
      p.title += " (measured memory: n/a on this system)";
    }
    return plot::lines(path, p);
  });
}

void compare_layers(const Options& o) {
  constexpr int64_t kernel = 3;  // a convolution's width, the usual smallest
  const int64_t d = o.d_k;
  say(fmt::format("Why attention at all, if it costs seq_len²? The alternatives a sequence layer had before it, "
                  "counted for n tokens of width d = {}: operations per layer, operations that must wait for the "
                  "one before (no parallelism across positions), and the longest chain of layers or steps a token's "
                  "information travels to reach another. A recurrent layer (one d x d product per token, in order), "
                  "a convolution of width {} (contiguous, so each layer reaches {} tokens further), full "
                  "self-attention, and the local attention of step 7 with window r = {}.",
                  d, kernel, kernel - 1, o.window));
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  for (int64_t n : {int64_t(6), o.seq_len}) {
    if (n == 6) fmt::print("  n = 6 (chapter 1's running example):\n");
    else fmt::print("  n = {} (this run's --seq-len):\n", n);
    fmt::print("    {:<28} {:>22} {:>18} {:>14}\n", "layer", "operations", "sequential steps", "longest path");
    auto row = [&](const std::string& name, const std::string& formula, double ops, int64_t sequential,
                   const std::string& path) {
      fmt::print("    {:<28} {:>22} {:>18} {:>14}\n", name, fmt::format("{} = {:.2e}", formula, ops), sequential,
                 path);
    };
    const double N = double(n), D = double(d);
    row("recurrent", "n d^2", N * D * D, n, std::to_string(n - 1));
    row(fmt::format("convolution, width {}", kernel), "k n d^2", double(kernel) * N * D * D, 1,
        std::to_string(ceil_div(n - 1, kernel - 1)));
    row("self-attention", "n^2 d", N * N * D, 1, "1");
    const int64_t r = std::min(o.window, n);  // a window wider than the text is the whole text
    row(fmt::format("local attention, r = {}", r), "r n d", double(r) * N * D, 1,
        // A window of 1 sees only its own token: nothing ever travels.
        r >= n ? "1" : r == 1 ? "never" : std::to_string(ceil_div(n - 1, r - 1)));
  }
  const double ratio = double(o.seq_len) / double(d);  // n² d against n d²
  // Below n = d the n^2 is not yet a price: said as what is to come.
  const std::string price =
      ratio < 1    ? fmt::format("at n = {} it still does only {:.2f} of the recurrent layer's work; from n = {} on "
                                 "it does more",
                                 o.seq_len, ratio, d)
      : ratio == 1 ? fmt::format("at n = {} it does as much work as the recurrent layer, and more beyond", o.seq_len)
                   : fmt::format("at n = {} it does {} times the recurrent layer's work", o.seq_len,
                                 ratio < 10 ? fmt::format("{:.1f}", ratio) : fmt::format("{:.0f}", ratio));
  say(fmt::format("Self-attention does fewer operations than the recurrent layer while n < d ({}), and at "
                  "any n no step waits for another and every pair of tokens is one step apart. Its price is the "
                  "n^2: {}. Steps 3 to 5 removed its n^2 memory but "
                  "not its work; the cache (step 6) and local and linear attention (step 7) cut the work itself. "
                  "(Longest path: the fewest steps or layers from the first token to the last; for contiguous "
                  "convolutions and local attention, (n - 1) / (reach per layer) rounded up.)",
                  d > 1 ? fmt::format("here n < {}", d) : "with d = 1, at no n", price));
}

}  // namespace sa::ch8
