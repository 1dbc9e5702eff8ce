// Chapter 9's benchmark (not a test): how fast the GPT trains and writes,
// on one core.
//
//   - the median time of one training step of the chapter's model (a batch
//     drawn, forward, loss, backward, clipping, AdamW), after a warm-up;
//   - its speed in GFLOP/s, with the operations it counts, against this
//     core's float matrix-product peak measured in the same run;
//   - with --pytorch, the PyTorch twin's median step on one thread
//     (tests/reference/ch09_gpt_twin.py --bench), measured in the same run
//     so the ratio compares like with like;
//   - characters a second when generating, with and without chapter 8's
//     key/value cache.
//
// Wall-clock times and the thread's CPU time are both reported: on a busy
// machine the CPU time is the one that does not count other programs' turns.
// Pin it to one core for steadier numbers: taskset -c 0 09-gpt-bench
#include "09-gpt/steps.hpp"  // the chapter's Options: its data folder and model sizes

#include "sa/cli.hpp"
#include "sa/measure.hpp"
#include "sa/print.hpp"
#include "sa/pytorch_peer.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace sa;
using measure::Times;

namespace {

struct BenchOptions {
  ch9::Options model;  // --batch, --seq-len, --d-model, --n-heads, --n-layers: the chapter's defaults
  int64_t steps = 50, warmup = 5;
  int64_t gen_chars = 256;
  bool pytorch = false;
  int64_t torch_steps = 50;
  // With --pytorch, the two are timed in turns, this program then the twin,
  // `rounds` times: the speed of a shared core drifts over seconds, and a
  // ratio of two neighbouring measurements follows it where one
  // measurement of each would not.
  int64_t rounds = 3;
};

// Generation is timed this many times each way, in turns (see
// time_generation).
constexpr int kGenerationRuns = 5;
const std::string kPrompt = "And God said";  // the chapter's prompt (step 11)

// The operations of one training step that are matrix products, a
// multiply-add counted as 2, and a backward as twice its forward (a
// gradient for the input and one for the weights):
//
//   linear = 6 × W × B·T, W = n_layers · 12·d² + vocab · d
//            (per block: the Q, K, V projections 3d², W_o d², the
//            feed-forward's two layers 4d² each; then the output layer,
//            which is the token embedding read transposed)
//   attention = 3 × n_layers × B × 4·T²·d
//            (per sequence and layer, summed over the heads: the scores
//            Q Kᵀ and the weighted sum P V, 2·T²·d each, forward; twice that
//            backward)
//
// Biases, LayerNorm, GELU, softmax and AdamW are left out: small beside the
// products, and not what a GEMM peak measures. The attention is counted in
// full, every T × T entry, as PyTorch computes it. This program's tiles of 32
// skip the blocks above the diagonal (one of four at seq_len 64), and its
// backward computes the scores a second time; neither is counted, so the two
// programs' GFLOP/s divide the same count: the model's products, as "model
// FLOPs utilisation" counts them. At the default sizes that count is about
// 1% above the products done (10.5 T²·d done per layer and sequence against
// 12 T²·d counted, 0.038 of 3.963 GFLOP).
struct StepCount {
  double linear = 0, attention = 0;
  double total() const { return linear + attention; }
};

StepCount step_count(const GptConfig& c, int64_t batch) {
  const double d = double(c.d_model), T = double(c.seq_len), B = double(batch), L = double(c.n_layers);
  const double weights = L * 12.0 * d * d + double(c.vocab_size) * d;
  return {6.0 * weights * B * T, 3.0 * L * B * 4.0 * T * T * d};
}

// The whole run against the budget, before any work, at the chapter
// program's rates (steps.hpp: kOperationsPerSecond for the products,
// kSecondsPerToken for what is not a product), plus a cost per head: each
// head of each sequence is a call of chapter 8's tiled attention, forward
// and backward, with its copies, allocations and softmax, the chapter
// program's head_call_seconds (26 us at seq_len 64, 650 us at 512).
// Then: the timed and warm-up steps, generation both ways (without the
// cache each character is a forward over its whole context, a third of a
// step's work on one sequence), the peak measurements, and the twin (about
// the C++ step, plus Python's start). With --pytorch, every round times
// this program's steps and the twin's again: --rounds 20 --torch-steps 1000
// was estimated at 4 min, one round's worth, and ran about 25.
// On the reference BLAS the twin's step took 0.90 to 0.95 s against 70 ms
// on OpenBLAS, 4.6 times what the estimate below gives it on OpenBLAS (1.5
// times this program's step, 0.2 s): --torch-steps 1000, estimated at 4 min,
// would have taken 16.
constexpr double kTwinSlowdownOnReferenceBlas = 6.0;

// `twin_slowdown`: 1, or kTwinSlowdownOnReferenceBlas once require_pytorch
// has said which BLAS the twin will run on.
RunEstimate estimate(const BenchOptions& o, double twin_slowdown = 1.0) {
  const GptConfig c = o.model.model_config();
  const double tokens = double(o.model.batch * o.model.seq_len);
  const double head_calls = double(o.model.batch * c.n_heads * c.n_layers);
  const double d = double(c.d_model), L = double(c.n_layers), V = double(c.vocab_size);
  const double params = double(ch9::gpt_parameter_count(c));
  const double work = step_count(c, o.model.batch).total() / ch9::kOperationsPerSecond +
                      tokens * ch9::kSecondsPerToken + head_calls * ch9::head_call_seconds(c.seq_len);
  // And each parameter's own cost (ch9::kSecondsPerParameterStep): AdamW and
  // the gradient's passes in a step, the weights read in a forward call
  // (d_model 2048 on one character: 134 ms a step, 10.6 ms a character,
  // where the operations count 10 and 3.4).
  const double step = work + params * ch9::kSecondsPerParameterStep;
  const double forward_one_sequence = work / double(o.model.batch) / 3.0 + params * ch9::kSecondsPerParameterRead;
  const double rounds = o.pytorch ? double(o.rounds) : 1.0;
  RunEstimate e;
  e.seconds = rounds * double(o.steps + o.warmup) * step +
              2.0 * kGenerationRuns * double(o.gen_chars) * forward_one_sequence + 2.0 +
              5.0 /* the text, read and checked */ +
              (o.pytorch ? rounds * (10.0 + twin_slowdown * 1.5 * double(o.torch_steps + 5) * step) : 0.0);
  // Parameters, gradients and AdamW's moments; one step's activations; the
  // text's ids and the text (as the chapter program estimates them).
  e.bytes = 16.0 * params + 4.0 * tokens * (L * 30.0 * d + 4.0 * V) + 9.0 * 4.2e6;
  // Every option the estimate depends on (a head's cost does not shrink
  // with its width: --n-heads 64 can pass the budget alone).
  e.options = fmt::format(
      "--steps {} --warmup {} --batch {} --seq-len {} --d-model {} --n-heads {} --n-layers {} --gen-chars {}{}",
      o.steps, o.warmup, o.model.batch, o.model.seq_len, o.model.d_model, o.model.n_heads, o.model.n_layers,
      o.gen_chars, o.pytorch ? fmt::format(" --torch-steps {} --rounds {}", o.torch_steps, o.rounds) : "");
  if (twin_slowdown > 1.0) e.options += " with PyTorch on the reference BLAS";
  return e;
}

BenchOptions parse(Cli& cli, int argc, char** argv) {
  BenchOptions o;
  cli.add("--steps", &o.steps, "training steps timed for the median", IntRange{3, 100000});
  cli.add("--warmup", &o.warmup, "untimed steps first (the workspaces are allocated in the first)",
          IntRange{0, 10000});
  cli.add("--batch", &o.model.batch, "sequences in a training batch", IntRange{1, ch9::kMaxBatch});
  cli.add("--seq-len", &o.model.seq_len, "the context: characters a sequence holds", IntRange{1, 4096});
  cli.add("--d-model", &o.model.d_model, "the model's width", IntRange{1, 4096});
  cli.add("--n-heads", &o.model.n_heads, "attention heads (d_model must be divisible by it)", IntRange{1, 4096});
  cli.add("--n-layers", &o.model.n_layers, "transformer blocks", IntRange{1, 64});
  cli.add("--gen-chars", &o.gen_chars,
          fmt::format("characters generated after the prompt, with the cache and without, {} times in turns",
                      kGenerationRuns),
          IntRange{1, 100000});
  cli.add_flag("--pytorch", &o.pytorch,
               "also time the PyTorch twin's step (needs /usr/bin/python3 with torch; the twin is the default "
               "model, so the size options are refused with it)");
  cli.add("--torch-steps", &o.torch_steps, "steps timed for PyTorch's median", IntRange{3, 10000});
  cli.add("--rounds", &o.rounds,
          "with --pytorch: rounds of this program's steps then the twin's, in turns; the ratio is their median",
          IntRange{1, 20});
  cli.without_figures();  // a benchmark draws nothing
  cli.parse(argc, argv);
  for (const char* flag : {"--torch-steps", "--rounds"})
    if (cli.given(flag) && !o.pytorch)
      throw UsageError(fmt::format("{} times the PyTorch twin, which runs only with --pytorch: give both", flag));
  // The twin's --bench builds the chapter's default model; a ratio against
  // another size would compare two different models.
  if (o.pytorch)
    for (const char* size : {"--batch", "--seq-len", "--d-model", "--n-heads", "--n-layers"})
      if (cli.given(size))
        throw UsageError(fmt::format("--pytorch times the twin's default model, so {} cannot be changed with it "
                                     "(drop {}, or drop --pytorch)",
                                     size, size));
  o.model.model_config().validate();  // d_model divisible by n_heads
  cli.check_budget(estimate(o));
  // Then, once torch is known to be there, the twin's time on the BLAS it
  // will run on.
  if (o.pytorch && !measure::require_pytorch().optimised)
    cli.check_budget(estimate(o, kTwinSlowdownOnReferenceBlas));
  return o;
}

// The chapter's text as ids (prepared into build/data on the first run, as
// the chapter program does): batches drawn from it, as the twin draws
// them, and the prompt.
struct TextIds {
  std::vector<int64_t> train, prompt;
};

TextIds load_ids(const BenchOptions& o) {
  const ch9::Text text = ch9::load_text(o.model.data_dir);
  const CharVocab vocab = build_vocab(text.train);
  return {encode(vocab, text.train), encode(vocab, kPrompt)};
}

// 1. The training step: the same loop as the chapter's run (at a fixed
//    learning rate; the schedule costs nothing), each step on a fresh batch.
//    The batch is drawn inside the timed step, as the twin's loop does.
Times time_training_step(Gpt& model, const TextIds& ids, const BenchOptions& o, Generator& gen) {
  AdamWConfig adamw;  // nanoGPT's: betas (0.9, 0.99), weight decay 0.1
  GptAdamW opt(model.params, model.grads, adamw);
  constexpr double kClip = 1.0;
  Batch b;
  auto step = [&] {
    sample_batch(ids.train, o.model.batch, o.model.seq_len, gen, b);
    gpt_train_step(model, opt, b, adamw.lr, kClip);
  };
  for (int64_t i = 0; i < o.warmup; ++i) step();
  std::vector<Times> t;
  for (int64_t i = 0; i < o.steps; ++i) {
    const Times t0 = measure::times_now();
    step();
    t.push_back(measure::times_now() - t0);
  }
  return measure::median(t);
}

// 2. Generation, each way from the same seed, in turns: a run with the
//    cache, then one without, kGenerationRuns times. As with the twin's
//    rounds, the speed of a shared core drifts over seconds, and the ratio
//    of two neighbouring runs follows the drift where the ratio of two
//    medians taken a second apart does not. Also whether both ways wrote the
//    same characters (they should: the cache only skips work).
struct GenerationTimes {
  Times cached, uncached;     // the medians of the runs
  std::vector<double> gains;  // each turn's wall time without the cache over its time with it
  bool same = true;
};

GenerationTimes time_generation(Gpt& model, const TextIds& ids, const BenchOptions& o, uint64_t seed) {
  GenerationTimes r;
  std::vector<int64_t> written[2];  // [0] with the cache, [1] without
  std::vector<Times> t[2];
  warm_up(model, ids.prompt);
  for (int run = 0; run < kGenerationRuns; ++run) {
    for (const int way : {0, 1}) {
      GenerationOptions g;
      g.new_tokens = o.gen_chars;
      g.use_cache = way == 0;
      Generator gen(seed);
      const Times t0 = measure::times_now();
      written[way] = generate(model, ids.prompt, g, gen);
      t[way].push_back(measure::times_now() - t0);
    }
    r.gains.push_back(t[1].back().wall / t[0].back().wall);
  }
  r.cached = measure::median(t[0]);
  r.uncached = measure::median(t[1]);
  r.same = written[0] == written[1];
  return r;
}

// 3. The twin's median step (its lines "pytorch_step_ms <ms>" and
//    "pytorch_step_cpu_ms <ms>", its thread's CPU time), or why it could not
//    be timed.
struct TwinStep {
  double ms = 0, cpu_ms = 0;  // cpu_ms: 0 if it did not say
  measure::PeerBlas blas;
  std::vector<std::string> said;  // its other lines, shown as they are
};

std::optional<TwinStep> time_twin(int64_t steps, const std::string& data_dir, std::string& failure) {
  // The twin reads the text this program read: its build folder's data/,
  // which is build/data only for the default build (not build-portable, or
  // a folder per instruction set).
  const measure::PeerOutput out = measure::run_pytorch_peer("tests/reference/ch09_gpt_twin.py",
                                                            {"--bench", std::to_string(steps), "--data-dir", data_dir});
  TwinStep twin{0, 0, out.blas, {}};
  bool timed = false;
  for (const std::string& line : out.lines) {
    if (std::sscanf(line.c_str(), "pytorch_step_ms %lf", &twin.ms) == 1) timed = true;
    else if (std::sscanf(line.c_str(), "pytorch_step_cpu_ms %lf", &twin.cpu_ms) == 1) continue;
    else twin.said.push_back(line);
  }
  if (!timed || !out.succeeded()) {
    failure = measure::peer_failure(out);
    return std::nullopt;
  }
  return twin;
}

// Whether PyTorch's time over this program's is within 5% of 1.
bool about_as_fast(double r) { return r > 0.95 && r < 1.05; }

// How this program's time compares with PyTorch's, given r = PyTorch's
// time over this program's (above 1: this program is faster), in words that
// say which way: "this program 1.4x faster", "this program 1.2x slower", or
// within 5% "about as fast (1.03x)".
std::string ratio_words(double r) {
  if (about_as_fast(r)) return fmt::format("about as fast as PyTorch ({:.2f}x)", r);
  if (r >= 1.0) return fmt::format("this program {:.1f}x faster", r);
  return fmt::format("this program {:.1f}x slower", 1.0 / r);
}

// One decimal: a share of 69.6% is not 70% (the chapter's goal).
std::string share_of_peak(double gflops, double peak) { return measure::share_of_peak(gflops, peak, 1); }

// What the run measured, for the printing below.
struct Results {
  Times step;  // the median training step of the first round (print_step's)
  std::vector<Times> rounds;  // with --pytorch: each round's median step
  // The GEMM peak (GFLOP/s, by the wall clock) before the steps and after
  // the generation.
  double peak_before = 0, peak_after = 0;
  double peak() const { return std::max(peak_before, peak_after); }
  // With --pytorch: the round whose twin step ran longest by the wall clock
  // against its CPU time, and that ratio (0: not measured).
  int64_t twin_worst_round = 0;
  double twin_worst_over = 0;
};

void print_step(const Times& step, const StepCount& count, const GptConfig& cfg, const BenchOptions& o,
                double peak) {
  // In ms with two decimals, as the rounds with the twin print them; a small
  // model's step under a millisecond with three significant digits, which
  // the GFLOP/s below can be recomputed from.
  const auto ms = [](double seconds) {
    return 1e3 * seconds < 1 ? fmt::format("{:.3g}", 1e3 * seconds) : fmt::format("{:.2f}", 1e3 * seconds);
  };
  fmt::print("  one training step (batch {} x {}: forward, loss, backward, clip, AdamW): median {} ms "
             "wall, {} ms CPU, over {} steps {}\n",
             o.model.batch, count_of(cfg.seq_len, "character"), ms(step.wall), ms(step.cpu), o.steps,
             o.warmup == 0 ? std::string("with no warm-up") : "after " + count_of(o.warmup, "warm-up step"));
  fmt::print("  counted: {:.4g} GFLOP a step = linear layers and tied output layer, 6 x {} weights x {} "
             "({:.4g}) + attention scores and weighted sums, forward and backward, 12 x layers x batch x seq_len² x "
             "d_model ({:.4g})\n",
             count.total() / 1e9, cfg.n_layers * 12 * cfg.d_model * cfg.d_model + cfg.vocab_size * cfg.d_model,
             count_of(o.model.batch * cfg.seq_len, "token"), count.linear / 1e9, count.attention / 1e9);
  const double gflops = count.total() / (1e9 * step.wall);
  fmt::print("  {:.1f} GFLOP/s, {} of {:.1f} GFLOP/s (Eigen, 1024^3, measured in this run)\n", gflops,
             share_of_peak(gflops, peak), peak);
}

void print_generation(const GenerationTimes& g, const BenchOptions& o) {
  const double with = double(o.gen_chars) / g.cached.wall, without = double(o.gen_chars) / g.uncached.wall;
  fmt::print("  generation, {} after \"{}\" ({} runs each way, in turns; medians):\n",
             count_of(o.gen_chars, "character"), kPrompt, kGenerationRuns);
  fmt::print("    with the key/value cache:  {:8.0f} characters a second ({} wall, {} CPU)\n", with,
             timing_str(g.cached.wall), timing_str(g.cached.cpu));
  fmt::print("    without it:                {:8.0f} characters a second ({} wall, {} CPU): {}\n", without,
             timing_str(g.uncached.wall), timing_str(g.uncached.cpu), cache_gain(measure::median(g.gains), with / without));
  fmt::print("    (the median of the {} turns' ratios; turns from {:.1f}x to {:.1f}x)\n", kGenerationRuns,
             *std::min_element(g.gains.begin(), g.gains.end()), *std::max_element(g.gains.begin(), g.gains.end()));
  if (!g.same)
    fmt::print("    (the two ways wrote different characters: they should not; see tests/common/test_ch09_generation.cpp)\n");
}

// The twin's step against this program's: by the wall clock, as the other
// benchmarks compare, and by CPU time, which leaves out the turns other
// programs took (the two wall clocks count them at different moments). No
// ratio against the reference BLAS: nobody runs PyTorch on it.
std::optional<TwinStep> print_twin(const BenchOptions& o, Results& r, const StepCount& count, Gpt& model,
                                   const TextIds& ids, Generator& gen) {
  // One round is no turns and no median: it says what it is.
  const bool one_round = o.rounds == 1;
  fmt::print("  PyTorch twin (tests/reference/ch09_gpt_twin.py --bench {}), {}:\n", o.torch_steps,
             one_round ? std::string("one round, after this program's steps")
                       : fmt::format("{} rounds in turns with this program", o.rounds));
  std::vector<double> ratios, cpu_ratios;
  std::optional<TwinStep> twin;
  for (int64_t round = 0; round < o.rounds; ++round) {
    // This program's steps of the first round were timed before (r.step).
    if (round > 0) r.rounds.push_back(time_training_step(model, ids, o, gen));
    std::string failure;
    twin = time_twin(o.torch_steps, o.model.data_dir, failure);
    if (!twin) {
      fmt::print("  the twin could not be timed: {}\n", failure);
      return twin;
    }
    if (round == 0) {
      for (const std::string& line : twin->said) fmt::print("    {}\n", line);
      fmt::print("  PyTorch's products ran on {}, one thread\n", twin->blas.description());
    }
    const Times& ours = r.rounds.back();
    fmt::print("    round {}: PyTorch {:.2f} ms ({:.2f} CPU), this program {:.2f} ms ({:.2f} CPU)\n", round + 1,
               twin->ms, twin->cpu_ms, 1e3 * ours.wall, 1e3 * ours.cpu);
    ratios.push_back(twin->ms / (1e3 * ours.wall));
    if (twin->cpu_ms > 0) {
      cpu_ratios.push_back(twin->cpu_ms / (1e3 * ours.cpu));
      if (twin->ms / twin->cpu_ms > r.twin_worst_over) {
        r.twin_worst_over = twin->ms / twin->cpu_ms;
        r.twin_worst_round = round + 1;
      }
    }
  }
  if (!twin->blas.optimised) {
    fmt::print("  no ratio printed: the reference BLAS is many times slower than the one a PyTorch user has. {}\n",
               measure::kReferenceBlasAdvice);
    return twin;
  }
  // The median of the rounds' ratios, said as ratio_words says a ratio.
  const double ratio = measure::median(ratios);
  fmt::print("  PyTorch's step{}: median {:.2f} ms ({:.1f} GFLOP/s by the same count)\n",
             one_round ? "" : " in the last round", twin->ms, count.total() / (1e6 * twin->ms));
  // The rounds' range in the median's own direction: after "1.3x slower",
  // rounds "from 0.78x to 0.80x" (PyTorch's time over this program's) read as
  // if the other way round, so a slower median gives the rounds as slower too.
  const double lowest = *std::min_element(ratios.begin(), ratios.end());
  const double highest = *std::max_element(ratios.begin(), ratios.end());
  const bool slower = ratio < 1 && !about_as_fast(ratio);
  const std::string range = slower ? fmt::format("rounds from {:.2f}x to {:.2f}x slower", 1.0 / highest, 1.0 / lowest)
                                   : fmt::format("rounds from {:.2f}x to {:.2f}x", lowest, highest);
  if (one_round) fmt::print("  the ratio by the wall clock: {}\n", ratio_words(ratio));
  else fmt::print("  the median of the rounds' ratios by the wall clock: {} ({})\n", ratio_words(ratio), range);
  if (cpu_ratios.size() == ratios.size())
    fmt::print("  by CPU time: {}\n", ratio_words(measure::median(cpu_ratios)));
  return twin;
}

// When the figures above are not to be trusted. A step's wall time well
// over its CPU time means other programs had this core for part of it: in
// any round, this program's or the twin's (which runs later: the load may
// differ), so every round is looked at, and the worst one named. Two peaks
// far apart mean one of them was interrupted.
void print_warnings(const Results& r, const std::optional<TwinStep>& twin, const StepCount& count,
                    Generator& peak_gen) {
  size_t worst = 0;  // this program's round with the most wall time over CPU time
  for (size_t k = 1; k < r.rounds.size(); ++k)
    if (r.rounds[k].wall / r.rounds[k].cpu > r.rounds[worst].wall / r.rounds[worst].cpu) worst = k;
  const Times& step = r.rounds[worst];
  const std::string in_round = r.rounds.size() > 1 ? fmt::format(" in round {}", worst + 1) : "";
  if (step.wall > 1.1 * step.cpu) {
    const double cpu_peak = measure::gemm_peak_cpu_gflops(peak_gen), cpu_gflops = count.total() / (1e9 * step.cpu);
    fmt::print("  unreliable: a step's wall time was {:.0f}% over its CPU time{}: other programs took turns on this "
               "core. By its CPU time a step runs at {:.1f} GFLOP/s, {} of {:.1f} GFLOP/s measured by CPU time too; "
               "the wall-clock figures are slower than this program is, and a ratio to PyTorch by the wall clock "
               "is only as good as the load was steady\n",
               100.0 * (step.wall / step.cpu - 1.0), in_round, cpu_gflops, share_of_peak(cpu_gflops, cpu_peak),
               cpu_peak);
  }
  if (twin && r.twin_worst_over > 1.1)
    fmt::print("  unreliable: the twin's wall time was {:.0f}% over its CPU time{}: other programs took turns on "
               "this core while it ran, so the ratio by CPU time is the steadier one\n",
               100.0 * (r.twin_worst_over - 1.0),
               r.rounds.size() > 1 ? fmt::format(" in round {}", r.twin_worst_round) : "");
  if (std::abs(r.peak_before - r.peak_after) > 0.1 * r.peak())
    fmt::print("  unreliable: the GEMM peak came out {:.1f} GFLOP/s before the steps and {:.1f} after: the share "
               "above is against the higher\n",
               r.peak_before, r.peak_after);
}

void run(int argc, char** argv) {
  Cli cli("09-gpt",
          "Benchmark of chapter 9's GPT on one core: the median training step of the chapter's model (4 layers, 4 "
          "heads, d_model 128, seq_len 64, batch 12 unless given), its GFLOP/s against this core's matrix-product "
          "peak, generation with and without the key/value cache, and with --pytorch the PyTorch twin's step.",
          "09-gpt-bench");
  const BenchOptions o = parse(cli, argc, argv);
  const TextIds ids = load_ids(o);  // a missing package or damaged text: one line, before any output
  const GptConfig cfg = o.model.model_config();
  const StepCount count = step_count(cfg, o.model.batch);

  fmt::print("Chapter 9 benchmark: GPT of {}, {}, d_model {}, seq_len {}, batch {}, seed {}\n",
             count_of(cfg.n_layers, "layer"), count_of(cfg.n_heads, "head"), cfg.d_model, cfg.seq_len, o.model.batch,
             cli.seed);
  fmt::print("  measured on: {}, one thread\n", measure::machine_description());

  // The peak before and after the steps and generation: on a busy machine
  // one of them comes out low, and the higher is the nearer to what the
  // core can do.
  Results r;
  Generator peak_gen(cli.seed);
  r.peak_before = measure::gemm_peak_gflops(peak_gen);
  Generator gen(cli.seed);  // the weights, then the batches: the twin's order
  Gpt model(cfg, gen);
  r.step = time_training_step(model, ids, o, gen);
  r.rounds.push_back(r.step);
  const GenerationTimes generation = time_generation(model, ids, o, cli.seed);
  r.peak_after = measure::gemm_peak_gflops(peak_gen);

  print_step(r.step, count, cfg, o, r.peak());
  print_generation(generation, o);
  std::optional<TwinStep> twin;
  if (o.pytorch) twin = print_twin(o, r, count, model, ids, gen);
  print_warnings(r, twin, count, peak_gen);
}

}  // namespace

int main(int argc, char** argv) {
  flush_subnormals_to_zero();  // exp(-inf) of a masked score is 0, not a slow subnormal (tensor.hpp)
  return run_program("09-gpt-bench", [&] { run(argc, argv); });
}
