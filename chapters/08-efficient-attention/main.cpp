// Chapter 8: the cost of attention, and how to beat it.
//
// Measures chapter 3's attention growing with seq_len², then computes the
// same output without the (seq_len, seq_len) matrix: online softmax, tiled
// attention (FlashAttention's schedule) with its causal variant and its
// backward, generation with a key/value cache, and two cheaper attentions
// (local and linear). Small examples print every value; the run at
// --seq-len measures time and memory. The steps live in steps_*.cpp.
#include "08-efficient-attention/steps.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/measure.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>

using namespace sa;
using namespace sa::ch8;

namespace {

void run(int argc, char** argv) {
  Options o;
  Cli cli("08-efficient-attention",
          "Chapter 8: the cost of attention (time and memory against seq_len), online softmax, tiled attention "
          "forward and backward with its causal variant, generation with a key/value cache, and local and linear "
          "attention.");
  cli.add("--seq-len", &o.seq_len, "tokens of the large run (steps 3 to 5 and 7)", IntRange{16, kMaxSeqLen});
  cli.add("--d-k", &o.d_k, "columns of Q, K and V in steps 1, 3 to 5 and 7", IntRange{1, 512});
  cli.add("--block", &o.block,
          "rows and columns of a tile in the large run (unless given: 128, or for a --seq-len below that the "
          "largest power of two up to half of it, so that the sequence holds at least two tiles; at least 8, as "
          "step 1 runs seq_len 8192 in at most 1024 x 1024 tiles)",
          IntRange{8, 4096});
  cli.add("--window", &o.window, "keys a query sees in local attention (step 7)", IntRange{1, kMaxSeqLen});
  cli.add("--gen-tokens", &o.gen_tokens, "tokens generated to time the key/value cache (step 6)", IntRange{8, 1024});
  cli.add("--reversal-epochs", &o.reversal_epochs, "epochs of chapter 7's reversal task per window (step 7)",
          IntRange{1, 100});
  cli.parse(argc, argv);
  // A tile larger than the sequence is refused when asked for (check_work);
  // for a short --seq-len the default shrinks instead, to at least two tiles
  // a side (one tile would be the naive computation). The header prints it.
  if (!cli.given("--block") && o.seq_len < o.block) o.block = int64_t(std::bit_floor(uint64_t(o.seq_len / 2)));
  check_work(o);
  cli.check_budget(estimate_run(o));

  Figures figures(cli);
  Generator gen(cli.seed);
  chapter_title("Chapter 8: the cost of attention, and how to beat it");
  fmt::print("seq_len {}, d_k {}, block {}, window {}, gen-tokens {}, seed {}\n", o.seq_len, o.d_k, o.block,
             o.window, o.gen_tokens, cli.seed);
  fmt::print("(times are this machine's, on one core, medians of at least 3 runs)\n(measured on: {})\n",
             measure::machine_description());
  const Small small = make_small(gen);
  const Large large = make_large(gen, o);

  step(1, "The quadratic, measured");
  quadratic_cost(cli.seed, o, figures);

  step(2, "Online softmax: one pass, a running maximum and sum");
  online_softmax_demo(small, figures);

  step(3, "Tiled attention: blocks of queries against blocks of keys");
  tiled_forward_demo(small, large, o);

  step(4, "Causal tiled attention: skip what the mask hides");
  causal_demo(small, large, o, figures);

  step(5, "The backward pass, recomputed tile by tile");
  backward_demo(small, large, o);

  step(6, "Generation with a key/value cache");
  kv_cache_demo(cli.seed, o, figures);

  step(7, "Cheaper attentions: local and linear");
  cheaper_demo(small, large, o, figures);
  local_on_reversal(cli.seed, o.reversal_epochs, figures);

  step(8, "Attention against recurrent and convolutional layers");
  compare_layers(o);

  figures.summary();
}

}  // namespace

int main(int argc, char** argv) {
  flush_subnormals_to_zero();  // exp(-inf) of a masked score is 0, not a slow subnormal (tensor.hpp)
  return run_program("08-efficient-attention", [&] { run(argc, argv); });
}
