// Chapter 8's benchmark (not a test): the naive attention of chapter 3
// against the tiled one of this chapter, forward and backward, as seq_len T
// doubles, on one core.
//
// For every T it reports the median time of each variant, its speed in
// GFLOP/s and as a share of this core's matrix-product peak (measured in the
// same run), and the extra memory it needed beyond its inputs and outputs.
// With --pytorch, PyTorch 1.13's matmul-softmax-matmul is measured in the
// same run on one thread (tests/reference/bench/ch08_attention.py), and the
// ratios are printed only when PyTorch runs on an optimised BLAS.
//
// Operations counted: 4·T²·d_k for a forward (two products of 2·T²·d_k),
// half of that for the causal forward (half the blocks), 10·T²·d_k for the
// backward (the recomputed scores and four products).
//
// --csv prints one line per measurement, T,variant,ms,extra_bytes, and a
// first line 0,gemm_peak,<GFLOP/s>,0.
#include "03-softmax/softmax.hpp"
#include "08-efficient-attention/efficient.hpp"
#include "08-efficient-attention/steps.hpp"  // the cost model of a run
#include "sa/measure.hpp"

#include "sa/cli.hpp"
#include "sa/paths.hpp"
#include "sa/pytorch_peer.hpp"
#include "sa/rng.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace sa;

namespace {

struct Row {
  int64_t T;
  std::string variant;
  double ms;
  std::optional<int64_t> extra;
  double flops;  // operations counted for this variant at this T
};

struct PyTorchRun {
  measure::PeerBlas blas;
  std::vector<Row> rows;
};

// Runs the PyTorch peer once for every size (sa/pytorch_peer.hpp); its
// lines are "pytorch <T> <ms> <bytes>".
std::optional<PyTorchRun> run_pytorch(const std::vector<int64_t>& sizes, int64_t d_k, double budget) {
  std::vector<std::string> args = {"--d-k", std::to_string(d_k), "--budget", fmt::format("{}", budget)};
  for (int64_t T : sizes) args.push_back(std::to_string(T));
  const measure::PeerOutput out = measure::run_pytorch_peer("tests/reference/bench/ch08_attention.py", args);
  PyTorchRun run{out.blas, {}};
  for (const std::string& text : out.lines) {
    std::istringstream line(text);
    std::string tag;
    Row r{0, "pytorch", 0, std::nullopt, 0};
    int64_t bytes = 0;
    if (line >> tag && tag == "pytorch" && line >> r.T >> r.ms >> bytes) {
      r.extra = bytes;
      r.flops = 4.0 * double(r.T) * double(r.T) * double(d_k);
      run.rows.push_back(r);
    }
  }
  if (run.rows.size() != sizes.size()) {
    const size_t done = run.rows.size();
    fmt::print(stderr, "08-efficient-attention-bench: the PyTorch peer stopped at T = {} after {} of {} sizes: {}\n",
               sizes[done], done, sizes.size(), measure::peer_failure(out));
    if (done == 0) return std::nullopt;
  }
  return run;
}

std::string mib(std::optional<int64_t> bytes) {
  if (!bytes) return "n/a";
  return fmt::format("{:.1f} MiB", double(*bytes) / (1024.0 * 1024.0));
}

// The exponent b of time ≈ a·T^b through the two largest sizes measured.
std::optional<double> slope(const std::vector<Row>& rows, const std::string& variant) {
  std::vector<const Row*> r;
  for (const Row& row : rows)
    if (row.variant == variant) r.push_back(&row);
  if (r.size() < 2) return std::nullopt;
  const Row& a = *r[r.size() - 2];
  const Row& b = *r.back();
  return std::log(b.ms / a.ms) / std::log(double(b.T) / double(a.T));
}

// On the reference BLAS PyTorch's plain attention took 111 s a call at T =
// 8192, d_k = 1024 (80 s of it CPU time, on a busy machine), 5.6 times the
// naive path's estimate: that run, estimated at 4 min, took 12.
constexpr double kTorchSlowdownOnReferenceBlas = 8.0;

// The whole benchmark against the budget: every size times each variant
// (one call for its memory, then at least 3 filling --budget seconds), with
// chapter 8's cost model; PyTorch's peer as the naive path, plus its start
// (`torch_slowdown` times the naive path's call: 1, or on the reference BLAS
// kTorchSlowdownOnReferenceBlas).
RunEstimate estimate_bench(const std::vector<int64_t>& sizes, int64_t d_k, int64_t block, int64_t naive_max,
                           double budget, bool pytorch, double torch_slowdown = 1.0) {
  using namespace ch8::cost;
  RunEstimate e;
  e.seconds = 2.0;  // the matrix-product peak, twice at most
  double largest_naive = 0;
  for (int64_t t : sizes) {
    const double T = double(t), forward = tiled_forward(T, double(d_k), double(block));
    e.seconds += timed(forward, budget) + timed(forward / 2, budget) + forward + timed(2.5 * forward, budget);
    if (t <= naive_max) {
      e.seconds += timed(naive_forward(T, double(d_k)), budget) +
                   (pytorch ? timed(torch_slowdown * naive_forward(T, double(d_k)), budget) : 0.0);
      largest_naive = T;
    }
  }
  if (pytorch) e.seconds += 5;  // Python and torch starting
  const double T = double(sizes.back()), B = double(std::min<int64_t>(block, sizes.back()));
  // Q, K, V, dO and the gradients; the naive path's two T x T matrices
  // (PyTorch's peer holds three: 765 MB at T = 8192); a tile's work space.
  e.bytes = 4.0 * (10 * T * double(d_k) + (pytorch ? 3 : 2) * largest_naive * largest_naive + 3 * B * B);
  e.options = fmt::format("--min-seq-len {} --max-seq-len {} --naive-max-seq-len {} --d-k {} --block {} --budget {}{}",
                          sizes.front(), sizes.back(), naive_max, d_k, block, budget, pytorch ? " --pytorch" : "");
  if (torch_slowdown > 1.0) e.options += " with PyTorch on the reference BLAS";
  return e;
}

void run(int argc, char** argv) {
  int64_t d_k = 64, min_T = 256, max_T = 16384, naive_max = 16384, block = 128;
  double budget = 0.3;
  bool pytorch = false, csv = false;
  Cli cli("08-efficient-attention",
          "Benchmark of chapter 8: naive attention (chapter 3) against tiled attention, forward, causal and "
          "backward, for seq_len T doubling from --min-seq-len to --max-seq-len, on one core.",
          "08-efficient-attention-bench");
  cli.add("--d-k", &d_k, "columns of Q, K and V", IntRange{1, 1024});
  cli.add("--min-seq-len", &min_T, "the first T", IntRange{16, 32768});
  cli.add("--max-seq-len", &max_T, "the last T (T doubles from --min-seq-len)", IntRange{16, 32768});
  cli.add("--naive-max-seq-len", &naive_max,
          "largest T for the naive attention (it holds two T x T float matrices: 2 GiB at T = 16384)",
          IntRange{0, 16384});
  cli.add("--block", &block, "rows and columns of a tile (unless given: 128, or --min-seq-len when that is smaller)",
          IntRange{1, 4096});
  cli.add("--budget", &budget, "seconds of timing per measurement (at least 3 runs each)", RealRange{0.0, 60.0});
  cli.add_flag("--pytorch", &pytorch, "also time PyTorch 1.13's attention (needs /usr/bin/python3 with torch)");
  cli.add_flag("--csv", &csv, "print lines T,variant,ms,extra_bytes instead of the table");
  cli.without_figures();
  cli.parse(argc, argv);
  if (min_T > max_T) throw UsageError(fmt::format("--min-seq-len {} is larger than --max-seq-len {}", min_T, max_T));
  // (the default tile shrinks to the shortest T; the header prints it)
  if (!cli.given("--block")) block = std::min(block, min_T);
  if (block > min_T)
    throw UsageError(fmt::format("--block {} is larger than --min-seq-len {}: one tile would hold the whole "
                                 "sequence, which is the naive computation (use --block {} or less)",
                                 block, min_T, min_T));
  // The same bounds as the chapter program (steps.hpp): too many tiny tiles
  // crawl, and one forward at the largest T is 4·T²·d_k operations.
  const int64_t tiles = (max_T + block - 1) / block;
  if (tiles * tiles > (int64_t(1) << 20))
    throw UsageError(fmt::format("--block {} cuts T = {} into {} x {} tiles; at most 2^20 are allowed", block, max_T,
                                 tiles, tiles));
  if (max_T * max_T * d_k > (int64_t(1) << 38))
    throw UsageError(fmt::format("--max-seq-len {} with --d-k {}: T² · d_k must stay at most 2^38 (about 10 s a forward)",
                                 max_T, d_k));

  std::vector<int64_t> sizes;
  for (int64_t T = min_T; T <= max_T; T *= 2) sizes.push_back(T);
  // PyTorch's peer is the plain matmul-softmax-matmul: the naive path's
  // memory, so --naive-max-seq-len bounds it too.
  std::vector<int64_t> torch_sizes;
  for (int64_t T : sizes)
    if (T <= naive_max) torch_sizes.push_back(T);
  if (pytorch && torch_sizes.empty())
    throw UsageError(fmt::format("--pytorch times PyTorch's plain attention, which holds T x T matrices like the naive "
                                 "path, and --naive-max-seq-len {} is below every T from --min-seq-len {}",
                                 naive_max, min_T));
  cli.check_budget(estimate_bench(sizes, d_k, block, naive_max, budget, pytorch));
  // Then, once torch is known to be there, PyTorch's time on the BLAS it
  // will run on.
  if (pytorch && !measure::require_pytorch().optimised)
    cli.check_budget(
        estimate_bench(sizes, d_k, block, naive_max, budget, pytorch, kTorchSlowdownOnReferenceBlas));

  // T doubles from --min-seq-len: a --max-seq-len off that ladder is not
  // measured itself, and the reader is told which sizes are.
  std::string ladder = fmt::format("T = {}", fmt::join(sizes, ", "));
  if (sizes.back() != max_T) ladder += fmt::format(" (doubling from --min-seq-len; --max-seq-len {} itself is not one of them)", max_T);

  Generator gen(cli.seed);
  const double peak = measure::gemm_peak_gflops(gen);
  if (csv) {
    fmt::print("0,gemm_peak,{:.2f},0\n", peak);
    if (sizes.back() != max_T) fmt::print(stderr, "08-efficient-attention-bench: measuring {}\n", ladder);
  } else {
    fmt::print("Chapter 8 benchmark: attention with d_k = {}, tiles of {} x {}, one core, seed {}\n", d_k, block, block,
               cli.seed);
    fmt::print("  measured on: {}\n", measure::machine_description());
    fmt::print("  this core's float matrix-product peak (Eigen, 1024 x 1024 x 1024, median): {:.1f} GFLOP/s\n", peak);
    fmt::print("  times are medians of at least 3 runs; extra memory is the peak resident size a call added beyond\n"
               "  its inputs and outputs\n");
    fmt::print("  sizes: {}\n\n", ladder);
    fmt::print("  {:>6}  {:<15} {:>11} {:>9} {:>7}  {:>12}\n", "T", "variant", "median ms", "GFLOP/s", "% peak",
               "extra memory");
  }

  std::vector<Row> rows;
  // The peak is one timing of a matrix product: on a busy machine it comes
  // out low and every share of it high (131 to 156% were printed once).
  // A share above 100% proves the peak wrong, so it is not printed.
  bool over_peak = false;
  auto record = [&](Row r) {
    if (csv) fmt::print("{},{},{:.4f},{}\n", r.T, r.variant, r.ms, r.extra ? *r.extra : -1);
    else {
      const double gflops = r.flops / (r.ms * 1e6), share = 100.0 * gflops / peak;
      over_peak = over_peak || share > 100.0;
      fmt::print("  {:>6}  {:<15} {:>11.3f} {:>9.1f} {:>7}  {:>12}\n", r.T, r.variant, r.ms, gflops,
                 share > 100.0 ? "n/a*" : fmt::format("{:.0f}%", share), mib(r.extra));
    }
    std::fflush(stdout);
    rows.push_back(std::move(r));
  };

  // Each variant's memory is measured after its timing runs: a function's
  // first calls touch pages of its machine code, of the stack under Eigen's
  // products and of the allocator's tables, which would count in the first
  // T's memory alone (the naive path measured 2.4 MB at T = 512 when that
  // came first, 2.0 MB when it came second; with one call at T = 64
  // beforehand, T = 256 measured first still came out a quarter higher on
  // Debian 13, and 0.13 times higher measured after the timing runs).
  for (int64_t T : sizes) {
    const Matrix Q = gen.randn(T, d_k), K = gen.randn(T, d_k), V = gen.randn(T, d_k), dO = gen.randn(T, d_k);
    const int64_t out_bytes = T * d_k * int64_t(sizeof(float));
    const double forward_flops = 4.0 * double(T) * double(T) * double(d_k);

    if (T <= naive_max) {
      auto naive = [&] { Attention a = attention(Q, K, V); };
      const double ms = measure::median_ms(naive, budget);
      record({T, "naive", ms, measure::extra_bytes(naive, out_bytes), forward_flops});
    }
    auto tiled = [&] { TiledAttention t = tiled_attention(Q, K, V, false, block); };
    const double tiled_ms = measure::median_ms(tiled, budget);
    record({T, "tiled", tiled_ms, measure::extra_bytes(tiled, out_bytes), forward_flops});

    auto causal = [&] { TiledAttention t = tiled_attention(Q, K, V, true, block); };
    const double causal_ms = measure::median_ms(causal, budget);
    record({T, "tiled_causal", causal_ms, measure::extra_bytes(causal, out_bytes), forward_flops / 2});

    const TiledAttention fwd = tiled_attention(Q, K, V, false, block);
    auto backward = [&] { AttentionGrads g = tiled_attention_backward(Q, K, V, fwd, dO, false, block); };
    const double backward_ms = measure::median_ms(backward, budget);
    record({T, "tiled_backward", backward_ms, measure::extra_bytes(backward, 3 * out_bytes), 2.5 * forward_flops});
  }

  std::optional<PyTorchRun> torch;
  if (pytorch) {
    torch = run_pytorch(torch_sizes, d_k, budget);
    if (torch)
      for (const Row& r : torch->rows) record(r);
  }
  if (csv) return;

  if (over_peak) {
    const double again = measure::gemm_peak_gflops(gen);
    // Measured again: a peak well above the first says the first was
    // disturbed; one near it says the row really ran at the peak's speed
    // (the peak is one product's timing, not a bound a kernel cannot touch).
    if (again > 1.05 * peak)
      fmt::print("\n  * n/a: faster than the peak measured at the start ({:.1f} GFLOP/s; {:.1f} measured again now), so "
                 "that\n    first measurement was disturbed (another process on this core?): no share of it is "
                 "printed.\n",
                 peak, again);
    else
      fmt::print("\n  * n/a: at or above the peak measured at the start ({:.1f} GFLOP/s; {:.1f} measured again now): "
                 "the\n    peak is one timing of a 1024^3 product, which a kernel can match; no share above 100% is "
                 "printed.\n",
                 peak, again);
  }
  std::string growth;
  std::vector<std::string> single;
  for (const char* v : {"naive", "tiled", "tiled_causal", "tiled_backward", "pytorch"}) {
    if (const auto b = slope(rows, v)) growth += fmt::format(" {} {:.2f}", v, *b);
    else if (std::count_if(rows.begin(), rows.end(), [&](const Row& r) { return r.variant == v; }) == 1)
      single.push_back(v);
  }
  if (growth.empty())
    fmt::print("\n  growth of time with T: not measured, one size only (give --max-seq-len at least twice "
               "--min-seq-len)\n");
  else
    fmt::print("\n  growth of time with T (exponent b of T^b, from the two largest sizes):{}{}\n", growth,
               single.empty() ? "" : fmt::format("; {} at one size only", fmt::join(single, ", ")));

  // The causal pass against the full one: close to half at large T.
  const Row* last_tiled = nullptr;
  const Row* last_causal = nullptr;
  for (const Row& r : rows) {
    if (r.variant == "tiled") last_tiled = &r;
    if (r.variant == "tiled_causal") last_causal = &r;
  }
  if (last_tiled && last_causal)
    fmt::print("  causal against full tiled forward at T = {}: {:.2f} of the time\n", last_tiled->T,
               last_causal->ms / last_tiled->ms);

  if (!pytorch) return;
  if (!torch) return;
  fmt::print("  PyTorch ran on {}, one thread\n", torch->blas.description());
  // Which sizes its rows cover, with or without a ratio: the largest T of
  // the ladder within --naive-max-seq-len, which need not be that option
  // itself ("up to T = 256, --naive-max-seq-len" read as if it were 256).
  if (torch_sizes.size() < sizes.size())
    fmt::print("  (PyTorch's plain attention ran up to T = {}, the largest T within --naive-max-seq-len {}; it holds "
               "T x T matrices)\n",
               torch_sizes.back(), naive_max);
  if (!torch->blas.optimised) {
    fmt::print("  no ratio printed: the reference BLAS is about 25x slower than the one a PyTorch user has.\n"
               "  {}\n",
               measure::kReferenceBlasAdvice);
    return;
  }
  fmt::print("  tiled forward against PyTorch (time of PyTorch / time of tiled):");
  std::map<int64_t, double> tiled_ms;
  for (const Row& r : rows)
    if (r.variant == "tiled") tiled_ms[r.T] = r.ms;
  for (const Row& r : torch->rows) fmt::print(" T={} {:.2f}x", r.T, r.ms / tiled_ms[r.T]);
  fmt::print("\n");
}

}  // namespace

int main(int argc, char** argv) {
  flush_subnormals_to_zero();  // exp(-inf) of a masked score is 0, not a slow subnormal (tensor.hpp)
  return run_program("08-efficient-attention-bench", [&] { run(argc, argv); });
}
