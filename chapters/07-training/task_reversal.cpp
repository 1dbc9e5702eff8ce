// Chapter 7, task 1: the chapter's model trained to reverse a
// sequence: the task and the model, one training step taken apart (loss,
// every gradient, a finite-difference spot check, what Adam's first step
// does), the training run one line per epoch, and what the trained heads do.
#include "07-training/analysis.hpp"
#include "07-training/checkpoint.hpp"
#include "07-training/model.hpp"
#include "07-training/patterns.hpp"
#include "07-training/program.hpp"
#include "07-training/reversal.hpp"
#include "07-training/rope.hpp"
#include "07-training/training.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/gradcheck.hpp"
#include "sa/plot.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sa::ch7 {

namespace {

// What task 1 is and how its model is built and trained, from the options
// (reversal_setup below).
struct ReversalSetup {
  ReversalTask task;
  ModelConfig cfg;
  AdamConfig adam_cfg;
};

struct EpochRecord {
  double loss, test_loss, train_acc, test_acc, seconds;
};

// Head ablation: each head switched off in turn (its rows of W_o zeroed,
// reversal.hpp), the held-out accuracy measured without it. A head the task
// needs costs accuracy when it goes; a head that learned nothing useful
// costs none.
struct Ablation {
  int64_t layer, head;
  double accuracy;  // held-out token accuracy without this head, %
};

std::vector<Ablation> ablate_heads(TinyTransformer& model, const ReversalData& test, const ReversalTask& task,
                                   const Score& trained) {
  const ModelConfig& cfg = model.config();
  say(fmt::format("Switch one head off at a time (its d_k output columns no longer reach W_o: the rows of W_o that "
                  "read them are zeroed) and measure the held-out token accuracy again, {:.2f}% with every head:",
                  trained.percent()));
  std::vector<int64_t> ids, targets;
  std::vector<Ablation> out;
  for (int64_t l = 0; l < cfg.n_layers; ++l)
    for (int64_t h = 0; h < cfg.n_heads; ++h) {
      const double acc = evaluate_without_head(model, l, h, test, task, ids, targets).percent();
      out.push_back({l, h, acc});
      fmt::print("  without layer {}, head {}:  {:6.2f}%   ({:+6.2f} points)  {}\n", l, h, acc,
                 acc - trained.percent(), text_bar(acc / 100.0, 20));
    }
  const auto worst = std::min_element(out.begin(), out.end(),
                                      [](const Ablation& a, const Ablation& b) { return a.accuracy < b.accuracy; });
  evaluate(model, test, task, ids, targets);  // leave the full model's forward for the figures, as before
  int64_t harmless = 0;
  for (const Ablation& a : out) harmless += trained.percent() - a.accuracy < 1.0;
  say(fmt::format("Losing layer {}, head {} costs the most ({:.2f} points); {} of the {} heads can go for less than "
                  "a point{}. Attention weights show where a head looks; ablation shows whether the model needs "
                  "what it finds there.",
                  worst->layer, worst->head, trained.percent() - worst->accuracy, harmless, out.size(),
                  harmless == int64_t(out.size()) && out.size() > 1
                      ? ": no head is needed alone, the others cover for any one of them"
                      : ""));
  return out;
}

// Step "One training step, taken apart", part 1: the gradient backward
// left in each tensor (block 0 and the tensors outside the blocks).
void print_gradients(const TinyTransformer& demo) {
  say("backward: the forward's layers in reverse order, each one's gradient from its cache. Cross-entropy "
      "gives dlogits = (softmax - onehot) / n on the counted rows and 0 on the others; the residual "
      "stream adds each block's branch gradient to the gradient passing straight through.");
  fmt::print("  {:<20} {:>8} {:>12}\n", "gradient of", "values", "largest |g|");
  for_each_tensor(demo.grads, [&](const std::string& name, std::span<const float> g) {
    if (name.rfind("blocks.", 0) == 0 && name.rfind("blocks.0.", 0) != 0) return;
    float largest = 0;
    for (float x : g) largest = std::max(largest, std::abs(x));
    fmt::print("  {:<20} {:>8} {:>12.3e}\n", name, g.size(), largest);
  });
}

// Part 2: a finite-difference spot check: in a few tensors, the weight with
// the largest gradient.
void spot_check_gradients(TinyTransformer& demo, const std::vector<int64_t>& ids, const std::vector<int64_t>& targets,
                          int64_t B) {
  say("Spot check: move one weight by +-h (h = 1e-2) and compare the change of the loss with the "
      "gradient backward computed. In each tensor below, the weight with the largest gradient:");
  std::vector<std::string> names;
  std::vector<std::span<float>> weights, gradients;
  for_each_tensor(demo.params, [&](const std::string& n, std::span<float> t) {
    names.push_back(n);
    weights.push_back(t);
  });
  for_each_tensor(demo.grads, [&](const std::string&, std::span<float> t) { gradients.push_back(t); });
  demo.forward(ids, B);
  const float loss = demo.loss(targets);
  double largest_difference = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    if (names[k] != "tok" && names[k] != "blocks.0.qkv.W" && names[k] != "blocks.1.W_o.W" &&
        names[k] != "blocks.1.ln2.gamma" && names[k] != "head.b")
      continue;
    size_t at = 0;
    for (size_t i = 0; i < gradients[k].size(); ++i)
      if (std::abs(gradients[k][i]) > std::abs(gradients[k][at])) at = i;
    const double numeric = central_difference(weights[k][at], 1e-2f, [&] {
      demo.forward(ids, B);
      return double(demo.loss(targets));
    });
    fmt::print("  {:<20} entry {:4}  backward {:+.6f}   (L(w+h) - L(w-h)) / 2h = {:+.6f}\n", names[k], at,
               gradients[k][at], numeric);
    largest_difference = std::max(largest_difference, std::abs(numeric - double(gradients[k][at])));
  }
  // float32 numbers near the loss are `spacing` apart: each of the two
  // losses is off by up to half of it, and the difference is divided by 2h.
  const double spacing = double(std::nextafter(loss, INFINITY) - loss);
  const double loss_rounding = spacing / (2 * 1e-2);
  // Which digits of the differences come out depends on the CPU (the loss's
  // last bit does), so they are printed against the bound they meet.
  say(fmt::format("The loss, {:.3f}, is a float32 number, and float32 numbers near it are {:.1e} apart; that "
                  "rounding divided by 2h = 0.02 is {:.1e}. {} The hidden tests check every layer's gradients this "
                  "way, and the whole model's against PyTorch's autograd.",
                  loss, spacing, loss_rounding,
                  largest_difference <= 10 * loss_rounding
                      ? fmt::format("Every difference is below ten times that, {:.1e}: they are the loss's "
                                    "rounding, not the gradients' error.",
                                    10 * loss_rounding)
                      : fmt::format("The largest difference, {:.1e}, is more than ten times that: the rest is "
                                    "the loss's curvature over +-h (terms in h^2 that a central difference does "
                                    "not cancel).",
                                    largest_difference)));
}

// Part 3: what Adam's first step does to the weights, and to the loss on
// the same batch (`loss`: before the step).
void show_adam_first_step(TinyTransformer& demo, Adam& demo_adam, const std::vector<int64_t>& ids,
                          const std::vector<int64_t>& targets, int64_t B, double lr, float loss) {
  demo.forward(ids, B);
  demo.loss(targets);
  demo.backward();
  const Params before = demo.params;
  demo_adam.step();
  // Sort the weights: moved, unmoved with a zero gradient, and unmoved
  // although their gradient was not zero (an lr so small that the step is
  // below half the float32 spacing at the weight: rounding gives it back).
  float largest_move = 0;
  int64_t moved = 0, total = 0, zero_gradient = 0, near_lr = 0;
  float largest_g_off_lr = 0;  // the largest |g| among the weights that moved, but not by lr
  std::vector<std::string> zero_in;  // the tensors holding zero-gradient weights
  std::vector<std::span<const float>> a, b, g;
  std::vector<std::string> names;
  for_each_tensor(before, [&](const std::string& n, std::span<const float> t) {
    names.push_back(n);
    a.push_back(t);
  });
  for_each_tensor(demo.params, [&](const std::string&, std::span<const float> t) { b.push_back(t); });
  for_each_tensor(demo.grads, [&](const std::string&, std::span<const float> t) { g.push_back(t); });
  for (size_t k = 0; k < a.size(); ++k) {
    int64_t zero_here = 0;
    for (size_t i = 0; i < a[k].size(); ++i) {
      const float move = std::abs(b[k][i] - a[k][i]);
      largest_move = std::max(largest_move, move);
      moved += move > 0;
      if (move > 0 && std::abs(move - lr) <= 0.01 * lr)
        ++near_lr;
      else if (move > 0)
        largest_g_off_lr = std::max(largest_g_off_lr, std::abs(g[k][i]));
      zero_here += move == 0 && g[k][i] == 0;
      ++total;
    }
    zero_gradient += zero_here;
    if (zero_here > 0) zero_in.push_back(fmt::format("{} in {}", zero_here, names[k]));
  }
  const int64_t rounded_away = total - moved - zero_gradient;
  fmt::print("  Adam step 1: {} of {} weights moved, the largest by {:.3e} (lr = {})\n", moved, total, largest_move,
             lr);
  say(fmt::format("At step 1 the bias corrections make m/(1-b1) = g and v/(1-b2) = g^2, so a weight moves by "
                  "lr g / (|g| + eps): by lr, whatever its gradient's size, unless |g| is not far above Adam's eps "
                  "= 1e-8. Here {} of the {} weights that moved moved by lr to within 1%{}.",
                  near_lr, moved,
                  near_lr == moved ? ""
                  // (Their |g| itself is not printed: at that size its digits depend on the CPU.)
                  : largest_g_off_lr < 99 * 1e-8
                      ? fmt::format("; the other {} have |g| below 99 eps = 9.9e-07, where eps takes more than "
                                    "1% of the step",
                                    moved - near_lr)
                      : fmt::format("; the other {} moved by another amount, as float32 rounds a step of lr at "
                                    "their weight's size",
                                    moved - near_lr)));
  if (zero_gradient > 0)
    say(fmt::format("{} weights did not move because their gradient is exactly zero ({}): embedding rows of tokens "
                    "absent from the batch, position rows no input reaches, or parameters the loss does not depend "
                    "on.",
                    zero_gradient, fmt::join(zero_in, ", ")));
  if (rounded_away > 0)
    say(fmt::format("{} weights with a non-zero gradient did not move: their step, lr g / (|g| + eps) with "
                    "lr = {}, is less than half the float32 spacing at their value (a |g| far below eps, or a "
                    "tiny lr), so the update rounds back to the old weight.",
                    rounded_away, lr));
  demo.forward(ids, B);
  fmt::print("  loss on the same batch after the step: {:.4f} (was {:.4f})\n", demo.loss(targets), loss);
}

// Step "One training step, taken apart": on a twin of the model (same seed,
// same weights), so the real training run stays step for step PyTorch's.
void show_one_training_step(const Options& o, uint64_t seed, const ReversalSetup& setup, const ReversalData& train) {
  const ReversalTask& task = setup.task;
  const int64_t T = task.input_len(), D = task.digits;
  Generator twin_gen(seed);
  TinyTransformer demo(setup.cfg, twin_gen);
  Adam demo_adam(demo.params, demo.grads, setup.adam_cfg);
  std::vector<int64_t> idx(size_t(std::min(o.batch, o.train))), ids, targets;
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);
  make_batch(train, idx, task, ids, targets);
  const int64_t B = int64_t(idx.size());
  demo.forward(ids, B);
  const float loss = demo.loss(targets);
  fmt::print("  forward:  logits (batch, seq, vocab) = ({}, {}, {}), loss {:.4f} over {} counted positions\n", B,
             T, o.vocab, loss, B * D);
  demo.backward();
  print_gradients(demo);
  spot_check_gradients(demo, ids, targets, B);
  show_adam_first_step(demo, demo_adam, ids, targets, B, o.lr, loss);
}

// Step "The trained model on unseen sequences": greedy generation, one token
// at a time: SEP and everything after it come from the model itself.
void show_generation(TinyTransformer& model, const ReversalData& test, const Options& o, int64_t D) {
  std::vector<int64_t> prompt;
  for (int64_t i = 0; i < o.test; ++i) {
    const auto s = test.sample(i);
    prompt.insert(prompt.end(), s.begin(), s.begin() + D + 1);
  }
  std::vector<int64_t> seqs = prompt;
  for (int64_t k = 0; k < D; ++k) {
    const int64_t len = D + 1 + k;
    const Matrix& logits = model.forward(seqs, o.test);
    std::vector<int64_t> next;
    for (int64_t i = 0; i < o.test; ++i) {
      Eigen::Index best = 0;
      logits.row(i * len + len - 1).maxCoeff(&best);
      next.push_back(int64_t(best));
    }
    std::vector<int64_t> grown;
    for (int64_t i = 0; i < o.test; ++i) {
      grown.insert(grown.end(), seqs.begin() + i * len, seqs.begin() + (i + 1) * len);
      grown.push_back(next[size_t(i)]);
    }
    seqs = std::move(grown);
  }
  int64_t exact = 0;
  const int64_t full = D * 2 + 1;
  for (int64_t i = 0; i < o.test; ++i) {
    const auto s = test.sample(i);
    exact += std::equal(s.begin(), s.end(), seqs.begin() + i * full);
  }
  for (int64_t i = o.sample; i < std::min(o.test, o.sample + 3); ++i) {
    const auto s = test.sample(i);
    const std::span<const int64_t> mine(seqs.data() + i * full, size_t(full));
    fmt::print("  held-out {:3}: {}  ->  {}   {}\n", i, join_tokens(s.first(size_t(D + 1))),
               join_tokens(mine.subspan(size_t(D + 1))),
               std::equal(s.begin(), s.end(), mine.begin()) ? "right" : "WRONG");
  }
  fmt::print("  {} of {} held-out sequences reversed exactly ({:.1f}%), generating one token at a time\n", exact,
             o.test, 100.0 * double(exact) / double(o.test));
}

// Step "Three ways to say where a token is", part 1: RoPE's relative
// property, measured. One random q and one random k of a head's width are
// written into every row of a sequence of max_seq positions and turned by
// rope_forward; the score Q_p · K_(p+k) (in double) should not depend on p.
void show_rope_relative_property(uint64_t seed, const ModelConfig& cfg) {
  const int64_t d_k = cfg.d_k(), n = cfg.max_seq;
  Generator gen(seed);
  const Matrix q = gen.randn(1, d_k), k = gen.randn(1, d_k);
  Matrix QKV = Matrix::Zero(n, 3 * d_k);
  for (int64_t p = 0; p < n; ++p) {
    QKV.block(p, 0, 1, d_k) = q;
    QKV.block(p, d_k, 1, d_k) = k;
  }
  rope_forward(QKV, 1, 1);
  auto score = [&](int64_t i, int64_t j) {
    double s = 0.0;
    for (int64_t c = 0; c < d_k; ++c) s += double(QKV(i, c)) * double(QKV(j, d_k + c));
    return s;
  };
  std::vector<int64_t> offsets;
  for (int64_t off : {int64_t(0), int64_t(1), int64_t(2), int64_t(3), n / 2, n - 1})
    if (off < n && std::find(offsets.begin(), offsets.end(), off) == offsets.end()) offsets.push_back(off);
  const double qk = double(q.norm()) * double(k.norm());
  say(fmt::format("RoPE first. A random q and k of d_k = {} (|q| |k| = {:.3f}), turned by rope_forward to every "
                  "position 0..{}; for each offset k, the score of q at p with k at p + k, over every p:",
                  d_k, qk, n - 1));
  fmt::print("  {:>8}  {:>12}  {:>36}\n", "offset k", "score(0, k)", "largest |score(p, p + k) - score(0, k)|");
  // float32 rounding of the turned vectors is about 1e-7 of |q| |k|.
  const double bound = rounding_bound(qk);
  double worst = 0.0, lo = score(0, offsets[0]), hi = lo;
  for (int64_t off : offsets) {
    double spread = 0.0;
    for (int64_t p = 0; p + off < n; ++p) spread = std::max(spread, std::abs(score(p, p + off) - score(0, off)));
    worst = std::max(worst, spread);
    lo = std::min(lo, score(0, off));
    hi = std::max(hi, score(0, off));
    fmt::print("  {:>8}  {:>12.6f}  {:>36}\n", off, score(0, off), rounding(spread, bound));
  }
  say(fmt::format("Moving the pair along the sequence, the largest change of its score is {}, {}. Across "
                  "the {} offsets in the table the score runs from {:.4f} to {:.4f}: {}",
                  rounding(worst, bound),
                  worst <= bound ? "float32 rounding: the score depends on the offset, not on p"
                                 : "more than float32 rounding explains",
                  offsets.size(), lo, hi,
                  hi - lo > 1e-3 * qk ? "the offset does reach the score, with no position table anywhere."
                                      : "for this q and k the offsets hardly differ."));
}

// Step "Three ways to say where a token is", part 2: the reversal task
// trained once per position encoding, from the same seed, on the same data
// in the same batch order, epoch by epoch side by side.
struct PositionRun {
  PositionEncoding position;
  std::vector<double> test_acc, test_loss;  // after each epoch
  double seconds = 0;
  std::optional<int64_t> reached_99;
};

// One model of the comparison, with its own Adam, as it trains.
struct Trainee {
  PositionRun run;
  std::unique_ptr<TinyTransformer> model;
  std::unique_ptr<Adam> adam;
};

// One trainee per encoding, each drawn from a generator of its own with
// the same seed.
std::vector<Trainee> make_trainees(const std::vector<PositionEncoding>& encodings, uint64_t seed,
                                   const ModelConfig& cfg, const AdamConfig& adam_cfg) {
  std::vector<Trainee> trainees;
  for (PositionEncoding e : encodings) {
    ModelConfig c = cfg;
    c.position = e;
    Generator gen(seed);
    Trainee t{{e, {}, {}, 0.0, {}}, std::make_unique<TinyTransformer>(c, gen), nullptr};
    t.adam = std::make_unique<Adam>(t.model->params, t.model->grads, adam_cfg);
    trainees.push_back(std::move(t));
  }
  return trainees;
}

// Trains the trainees `epochs` epochs side by side, one line per epoch:
// each epoch's batch order is shared by them all.
void train_side_by_side(const Options& o, uint64_t seed, int64_t epochs, std::vector<Trainee>& trainees,
                        const ReversalData& train, const ReversalData& test, const ReversalTask& task) {
  const int64_t batches = (o.train + o.batch - 1) / o.batch;
  std::string header = fmt::format("  {:>5}", "epoch");
  for (const Trainee& t : trainees) header += fmt::format("  {:>12}", position_name(t.run.position));
  fmt::print("{}\n", header);
  Generator order(seed + 1);  // one permutation per epoch, shared by the models
  Generator masks(seed + 2);  // attention dropout's draws, if --dropout asks for it (as for the model above)
  std::vector<int64_t> ids, targets, test_ids, test_targets;
  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    const std::vector<int64_t> perm = order.randperm(o.train);
    std::string line = fmt::format("  {:>5}", epoch);
    for (Trainee& t : trainees) {
      const auto start = Clock::now();
      for (int64_t b = 0; b < batches; ++b) {
        const int64_t begin = b * o.batch, end = std::min(o.train, begin + o.batch);
        make_batch(train, std::span<const int64_t>(perm).subspan(size_t(begin), size_t(end - begin)), task, ids,
                   targets);
        const StepStats s =
            train_step(*t.model, *t.adam, ids, targets, end - begin, {.p = o.reversal_dropout(), .gen = &masks});
        if (!std::isfinite(s.loss))
          throw std::runtime_error(fmt::format("the {} model's loss became {} at epoch {}: training diverged",
                                               position_name(t.run.position), s.loss, epoch));
      }
      const Score held = evaluate(*t.model, test, task, test_ids, test_targets);
      t.run.seconds += seconds_since(start);
      t.run.test_acc.push_back(held.percent());
      t.run.test_loss.push_back(held.loss);
      if (!t.run.reached_99 && held.percent() >= 99.0) t.run.reached_99 = epoch;
      line += fmt::format("  {:>11.2f}%", held.percent());
    }
    fmt::print("{}\n", line);
  }
}

// The verdict, from the numbers: ranked by the accuracy as printed (two
// decimals), ties said as ties.
void say_position_verdict(const std::vector<PositionRun>& runs, int64_t epochs, const ReversalTask& task) {
  std::vector<const PositionRun*> ranked;
  for (const PositionRun& r : runs) ranked.push_back(&r);
  auto shown = [](double acc) { return std::round(acc * 100.0) / 100.0; };
  std::stable_sort(ranked.begin(), ranked.end(), [&](const PositionRun* a, const PositionRun* b) {
    return shown(a->test_acc.back()) > shown(b->test_acc.back());
  });
  std::string order_text;
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (i > 0)
      order_text += shown(ranked[i]->test_acc.back()) == shown(ranked[i - 1]->test_acc.back()) ? " = " : " > ";
    order_text += fmt::format("{} ({:.2f}%)", position_name(ranked[i]->position), ranked[i]->test_acc.back());
  }
  say(fmt::format("After {} epoch{}, held-out token accuracy: {}. This is one seed, and the order can change "
                  "with --seed or --position-epochs.",
                  epochs, epochs == 1 ? "" : "s", order_text));
  // (With one digit there is one query, and nothing changes with p.)
  if (task.digits > 1)
    say(fmt::format("Note what reversal asks: query p (from SEP on) copies the token at position {} - p, 2p - {} "
                    "behind it. That distance changes with p, so relative offsets alone do not say where to look: "
                    "a copying head must also know where its query is, whatever the encoding.",
                    2 * task.digits - 1, 2 * task.digits - 1));
}

std::vector<PositionRun> compare_position_encodings(const Options& o, uint64_t seed, const ModelConfig& cfg,
                                                    const AdamConfig& adam_cfg, const ReversalData& train,
                                                    const ReversalData& test, const ReversalTask& task) {
  std::vector<PositionEncoding> encodings{PositionEncoding::learned, PositionEncoding::sinusoidal};
  if (cfg.d_k() % 2 == 0) encodings.push_back(PositionEncoding::rope);
  else
    say(fmt::format("RoPE turns pairs of features, and d_k = {} is odd: only the other two train below.", cfg.d_k()));
  const int64_t epochs = o.position_epochs;  // main.cpp keeps it at most o.epochs
  say(fmt::format("Now the task, trained {} times for {} epoch{} (--position-epochs, at most --epochs): each model "
                  "from seed {} (the learned one is the model trained above, as it started), on the same data in "
                  "the same batch order. Held-out token accuracy after each epoch:",
                  encodings.size(), epochs, epochs == 1 ? "" : "s", seed));
  std::vector<Trainee> trainees = make_trainees(encodings, seed, cfg, adam_cfg);
  train_side_by_side(o, seed, epochs, trainees, train, test, task);
  std::vector<PositionRun> runs;
  for (Trainee& t : trainees) runs.push_back(std::move(t.run));
  for (const PositionRun& r : runs)
    fmt::print("  {:<10}  held-out loss {:.4f}  accuracy {:6.2f}%  {}  trained in {:.2f} s\n",
               position_name(r.position), r.test_loss.back(), r.test_acc.back(),
               r.reached_99 ? fmt::format("99% at epoch {:2}", *r.reached_99) : std::string("99% not reached"),
               r.seconds);
  say_position_verdict(runs, epochs, task);
  return runs;
}

void draw_reversal_figures(Figures& figures, const Options& o, const TinyTransformer& model, const ReversalData& test,
                           int64_t T, int64_t D, const std::vector<plot::Heatmap>& untrained_panels,
                           const std::vector<EpochRecord>& history, const std::vector<HeadScore>& heads) {
  std::vector<std::string> labels;
  for (int64_t p = 0; p < T; ++p) labels.push_back(token_label(test.sample(o.sample)[size_t(p)]));
  figures.draw("attention_untrained.png", [&](const std::string& path) {
    return plot::heatmap_grid(path, fmt::format("Attention before training, held-out sample {} (rows: layers)", o.sample),
                              int(o.layers), int(o.heads), untrained_panels, 360);
  });
  figures.draw("attention_trained.png", [&](const std::string& path) {
    return plot::heatmap_grid(path,
                              fmt::format("Attention after {} epochs, held-out sample {} (rows: layers)", o.epochs,
                                          o.sample),
                              int(o.layers), int(o.heads), heatmap_panels(model, o.sample, labels), 360);
  });
  figures.draw("loss.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Training loss (mean cross-entropy over the reversed half)";
    p.xlabel = "epoch";
    p.ylabel = "loss (log scale)";
    p.logy = true;
    plot::Series tr{"train (mean over the epoch's steps)", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series he{"held-out (after the epoch)", {}, {}, plot::Series::Style::LinesPoints};
    for (size_t e = 0; e < history.size(); ++e) {
      tr.x.push_back(double(e + 1));
      tr.y.push_back(history[e].loss);
      he.x.push_back(double(e + 1));
      he.y.push_back(history[e].test_loss);
    }
    p.series = {tr, he};
    return plot::lines(path, p);
  });
  figures.draw("accuracy.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Token accuracy on the reversed half";
    p.xlabel = "epoch (log scale: the climb happens in the first ten)";
    p.logx = true;
    p.ylabel = "accuracy (%)";
    p.ymin = 0;
    p.ymax = 101;
    plot::Series tr{"train (before each update)", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series he{"held-out (after the epoch)", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series goal{"99%", {1.0, double(history.size())}, {99.0, 99.0}, plot::Series::Style::Dashed};
    for (size_t e = 0; e < history.size(); ++e) {
      tr.x.push_back(double(e + 1));
      tr.y.push_back(history[e].train_acc);
      he.x.push_back(double(e + 1));
      he.y.push_back(history[e].test_acc);
    }
    p.series = {tr, he, goal};
    return plot::lines(path, p);
  });
  figures.draw("heads.png", [&](const std::string& path) {
    plot::BarChart c;
    c.title = "Where each head puts its largest weight, queries after SEP";
    c.ylabel = "fraction of queries (%)";
    plot::BarGroup mirror{fmt::format("mirror position {} - p", 2 * D), {}},
        source{fmt::format("source position {} - p", 2 * D - 1), {}};
    for (const HeadScore& s : heads) {
      c.categories.push_back(fmt::format("L{} H{}", s.layer, s.head));
      mirror.values.push_back(std::round(1000 * s.mirror) / 10);  // one decimal on the bar labels
      source.values.push_back(std::round(1000 * s.source) / 10);
    }
    c.groups = {mirror, source};
    return plot::bars(path, c);
  });

}

void draw_ablation_and_position_figures(Figures& figures, const Options& o, const Score& trained,
                                        const std::vector<Ablation>& ablations,
                                        const std::vector<PositionRun>& position_runs) {
  figures.draw("head_ablation.png", [&](const std::string& path) {
    plot::BarChart c;
    c.title = "Held-out token accuracy with one head switched off";
    c.ylabel = "held-out token accuracy (%)";
    plot::BarGroup without{"without this head", {}};
    for (const Ablation& a : ablations) {
      c.categories.push_back(fmt::format("L{} H{}", a.layer, a.head));
      without.values.push_back(std::round(100 * a.accuracy) / 100);
    }
    c.groups = {without};
    c.hlines = {{trained.percent(), "every head"}, {100.0 / double(o.vocab - 2), "chance"}};
    return plot::bars(path, c);
  });
  figures.draw("positional_encodings.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Held-out token accuracy by position encoding (same seed, data and batch order)";
    p.xlabel = "epoch";
    p.ylabel = "held-out token accuracy (%)";
    p.ymin = 0;
    p.ymax = 101;
    for (const PositionRun& r : position_runs) {
      plot::Series s{position_name(r.position), {}, r.test_acc, plot::Series::Style::LinesPoints};
      for (size_t e = 0; e < r.test_acc.size(); ++e) s.x.push_back(double(e + 1));
      p.series.push_back(std::move(s));
    }
    const double last = double(position_runs.front().test_acc.size());
    p.series.push_back(
        {"chance", {1.0, std::max(2.0, last)}, {100.0 / double(o.vocab - 2), 100.0 / double(o.vocab - 2)},
         plot::Series::Style::Dashed});
    return plot::lines(path, p);
  });
}

// ===========================================================================
// Task 1's steps, in the order run_reversal calls them.
// ===========================================================================

// The task, the model's shape and Adam's settings, from the options;
// refuses bad ones before anything prints.
ReversalSetup reversal_setup(const Options& o) {
  ReversalSetup s;
  s.task.digits = o.digits;
  s.task.vocab = o.vocab;
  s.cfg.vocab = o.vocab;
  s.cfg.max_seq = s.task.sample_len();
  s.cfg.d_model = o.d_model;
  s.cfg.n_heads = o.heads;
  s.cfg.n_layers = o.layers;
  s.cfg.d_ff = 4 * o.d_model;
  s.cfg.validate();  // refuses d_model not divisible by heads, before anything prints
  if (o.sample >= o.test)
    throw UsageError(fmt::format("--sample {} but there are only {} held-out samples", o.sample, o.test));
  s.adam_cfg.lr = o.lr;
  return s;
}

}  // namespace

void check_reversal_options(const Options& o) { reversal_setup(o); }

std::vector<CheckpointTarget> reversal_checkpoints(const Options& o) {
  const ReversalSetup setup = reversal_setup(o);
  uint64_t token_bytes = 0;
  for (int64_t id = 0; id < o.vocab; ++id) token_bytes += token_label(id).size() + 1;
  return {{o.checkpoint_dir + "/reversal.safetensors", checkpoint_size_bound(setup.cfg, token_bytes)}};
}

namespace {

void print_reversal_title(const Options& o, uint64_t seed) {
  fmt::print("Task 1: reversal of {} tokens, vocabulary {}, d_model {}, {} heads, {} layers, batch {}, Adam lr {}, "
             "{} epochs, seed {}{}\n",
             o.digits, o.vocab, o.d_model, o.heads, o.layers, o.batch, o.lr, o.epochs, seed,
             o.reversal_dropout() > 0 ? fmt::format(", attention dropout {}", o.reversal_dropout()) : "");
}

// The tokens of held-out sample o.sample, as the figures and tables label them.
std::vector<std::string> sample_labels(const Options& o, const ReversalData& test, int64_t T) {
  std::vector<std::string> labels;
  for (int64_t p = 0; p < T; ++p) labels.push_back(token_label(test.sample(o.sample)[size_t(p)]));
  return labels;
}

// Step "The task: reverse a sequence".
void step_the_task(const Options& o, const ReversalTask& task, const ReversalData& train) {
  const int64_t T = task.input_len(), D = task.digits;
  say(fmt::format("A sample is {} random tokens from 2..{}, the separator SEP (token 1), and the same tokens "
                  "reversed. The model reads all but the last token and predicts the next one at every "
                  "position; only the {} predictions after SEP count.",
                  D, o.vocab - 1, D));
  for (int64_t i = 0; i < std::min<int64_t>(3, o.train); ++i) {
    const auto s = train.sample(i);
    fmt::print("  sample {}  {}\n", i, join_tokens(s));
  }
  std::vector<int64_t> ids, targets;
  const std::vector<int64_t> first{0};
  make_batch(train, first, task, ids, targets);
  std::vector<std::string> shown_targets;
  for (int64_t t : targets) shown_targets.push_back(t == kIgnore ? "-" : token_label(t));
  fmt::print("  input     {}\n", join_tokens(ids));
  fmt::print("  target    {}    (- = kIgnore: not in the loss)\n", fmt::join(shown_targets, " "));
  print_shape("training set", {o.train, task.sample_len()});
  print_shape("held-out set", {o.test, task.sample_len()});
  print_shape("one batch of inputs", {std::min(o.batch, o.train), T}, "(batch, seq)");
}

// Step "The model and its parameters".
void step_the_model(const Options& o, const ReversalSetup& setup, const TinyTransformer& model) {
  const ModelConfig& cfg = setup.cfg;
  const int64_t T = setup.task.input_len();
  fmt::print("  ids -> token embedding + position embedding   (batch, {}, {})\n", T, o.d_model);
  fmt::print("  {} x pre-norm block:\n", o.layers);
  fmt::print("        x = x + W_o attention(LayerNorm(x) [W_q | W_k | W_v])   causal, {} heads of d_k {}\n", o.heads,
             cfg.d_k());
  fmt::print("        x = x + W2 GELU(W1 LayerNorm(x) + b1) + b2               d_ff {}\n", cfg.d_ff);
  fmt::print("  -> LayerNorm -> linear head                        logits (batch, {}, {})\n", T, o.vocab);
  const std::vector<Shape> shapes = tensor_shapes(model.params);
  size_t k = 0;
  for_each_tensor(model.params, [&](const std::string& name, std::span<const float> t) {
    const Shape& shape = shapes[k++];
    if (name.rfind("blocks.", 0) == 0 && name.rfind("blocks.0.", 0) != 0) return;  // one block is enough
    fmt::print("  {:<20} {:<10} {:>6}\n", name, shape_str(shape), t.size());
  });
  if (o.layers == 2) fmt::print("  (blocks.1 the same)\n");
  if (o.layers > 2) fmt::print("  (blocks.1 .. blocks.{} the same)\n", o.layers - 1);
  fmt::print("  {:<31} {:>6} parameters\n", "total", parameter_count(model.params));
  say("Drawn from the generator in the order the PyTorch twin (tests/reference/ch07_training.py) creates "
      "them: same seed, same initial weights, bit for bit. Attention weights start as N(0, 0.02^2), so "
      "every score is near 0 and every head starts out almost uniform.");
}

// Step "Before training": the untrained model on the held-out set. Returns
// the heads' weights on the shown sample, for the before/after figure.
std::vector<plot::Heatmap> step_before_training(const Options& o, const ReversalTask& task, TinyTransformer& model,
                                                const ReversalData& test) {
  const int64_t T = task.input_len(), D = task.digits;
  std::vector<int64_t> ids, targets;
  const Score untrained = evaluate(model, test, task, ids, targets);
  const std::vector<plot::Heatmap> untrained_panels = heatmap_panels(model, o.sample, sample_labels(o, test, T));
  print_shape("logits", {o.test, D, o.vocab}, "(batch, reversed positions, vocab), the held-out set in one forward");
  fmt::print("  held-out loss {:.4f}   (a uniform guess over the {} tokens: ln {} = {:.4f})\n", untrained.loss,
             o.vocab, o.vocab, std::log(double(o.vocab)));
  fmt::print("  held-out token accuracy {:.2f}%   (chance: {:.2f}%)\n", untrained.percent(), 100.0 / double(o.vocab - 2));
  const Matrix w = head_weights(model, 0, o.sample, 0);
  fmt::print("  layer 0, head 0, query {} (the first reversed prediction) attends to keys 0..{}:\n", D, D);
  fmt::print("    {}\n", format_row(w.leftCols(D + 1), D));
  say(fmt::format("Close to 1/{} = {:.4f} each: the causal mask lets query {} see {} keys, and the scores "
                  "are all near zero.",
                  D + 1, 1.0 / double(D + 1), D, D + 1));
  return untrained_panels;
}

// The training run's record: one line per epoch, and when held-out
// accuracy first reached 99%.
struct TrainingRun {
  std::vector<EpochRecord> history;
  std::optional<int64_t> reached_99;
  double reached_99_seconds = 0;
  int64_t steps = 0;
  double seconds = 0;
};

// The real run: o.epochs passes over the training set, each in a fresh
// order drawn from `gen` (the PyTorch twin's), printing one line per epoch.
TrainingRun train_reversal_model(const Options& o, const ReversalSetup& setup, Generator& gen, TinyTransformer& model,
                                 const ReversalData& train, const ReversalData& test) {
  const ReversalTask& task = setup.task;
  const int64_t batches = (o.train + o.batch - 1) / o.batch;
  // A fresh Adam for the real run.
  Adam adam(model.params, model.grads, setup.adam_cfg);
  Progress progress(o.epochs, batches);
  TrainingRun run;
  std::vector<int64_t> ids, targets, test_ids, test_targets;
  const auto start = Clock::now();
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    const std::vector<int64_t> perm = gen.randperm(o.train);
    double loss_sum = 0;
    int64_t correct = 0, counted = 0;
    for (int64_t b = 0; b < batches; ++b) {
      const int64_t begin = b * o.batch, end = std::min(o.train, begin + o.batch);
      make_batch(train, std::span<const int64_t>(perm).subspan(size_t(begin), size_t(end - begin)), task, ids,
                 targets);
      const StepStats s = train_step(model, adam, ids, targets, end - begin, {.p = o.reversal_dropout(), .gen = &gen});
      if (!std::isfinite(s.loss))
        throw std::runtime_error(fmt::format("the loss became {} at epoch {}: training diverged", s.loss, epoch));
      loss_sum += s.loss;
      correct += s.correct;
      counted += s.counted;
      ++run.steps;
      progress.update(epoch, b + 1, seconds_since(start), run.steps);
    }
    const Score held = evaluate(model, test, task, test_ids, test_targets);
    const double elapsed = seconds_since(start);
    run.history.push_back(
        {loss_sum / double(batches), held.loss, 100.0 * double(correct) / double(counted), held.percent(), elapsed});
    progress.clear();
    fmt::print("  epoch {:3}/{}  loss {:.4f}  train {:6.2f}%  held-out {:6.2f}%  {:6.2f} s\n", epoch, o.epochs,
               run.history.back().loss, run.history.back().train_acc, held.percent(), elapsed);
    if (!run.reached_99 && held.percent() >= 99.0) {
      run.reached_99 = epoch;
      run.reached_99_seconds = elapsed;
    }
  }
  run.seconds = seconds_since(start);
  return run;
}

// Step "Training". Returns the per-epoch record, for the figures.
std::vector<EpochRecord> step_training(const Options& o, const ReversalSetup& setup, Generator& gen,
                                       TinyTransformer& model, const ReversalData& train, const ReversalData& test) {
  const int64_t batches = (o.train + o.batch - 1) / o.batch;
  say(fmt::format("{} epochs of {} steps (the last batch of an epoch has {} samples). Loss is the mean over "
                  "the epoch's steps; train accuracy is measured on each batch before its update, held-out "
                  "accuracy after the epoch. Token accuracy counts the {} reversed positions.{}",
                  o.epochs, batches, o.train - (batches - 1) * o.batch, setup.task.digits,
                  o.reversal_dropout() > 0
                      ? fmt::format(" Every step drops attention weights with p = {} (chapter 6), so its loss and "
                                    "train accuracy are those of the model with weights missing; held-out "
                                    "accuracy is measured with dropout off.",
                                    o.reversal_dropout())
                      : ""));
  TrainingRun run = train_reversal_model(o, setup, gen, model, train, test);
  if (run.reached_99)
    fmt::print("  held-out accuracy reached 99% at epoch {} ({:.2f} s); {} steps in {:.2f} s, {:.2f} ms a step\n",
               *run.reached_99, run.reached_99_seconds, run.steps, run.seconds, 1e3 * run.seconds / double(run.steps));
  else
    fmt::print("  held-out accuracy did not reach 99% in {} epochs; {} steps in {:.2f} s\n", o.epochs, run.steps,
               run.seconds);
  return std::move(run.history);
}

// Step "What each head learned", part 1: for every head, how often its
// largest weight falls on the mirror position and on the source position.
void print_head_scores(const std::vector<HeadScore>& heads, int64_t D, int64_t test_count) {
  say(fmt::format("For every query p after SEP, where does the head put its largest weight? On the mirror "
                  "position {} - p (the input token equal to the query's own, the check that first comes to mind), or on the "
                  "source position {} - p (the token the query has to write next)? Over all {} held-out "
                  "samples:",
                  2 * D, 2 * D - 1, test_count));
  fmt::print("  {:<16} {:>8}  {:<20}  {:>8}  {:<20}\n", "", "mirror", "", "source", "");
  for (const HeadScore& s : heads)
    fmt::print("  layer {}, head {}  {:7.1f}%  {}  {:7.1f}%  {}\n", s.layer, s.head, 100 * s.mirror,
               text_bar(s.mirror, 20), 100 * s.source, text_bar(s.source, 20));
}

// Step "What each head learned", part 2: the head that finds the source
// most often, named and shown on the sample.
void show_copying_head(const Options& o, const std::vector<HeadScore>& heads, const TinyTransformer& model,
                       const ReversalData& test, int64_t T) {
  const HeadScore* best = &heads.front();
  for (const HeadScore& s : heads)
    if (s.source > best->source) best = &s;
  // A head that finds the source most of the time has learned to copy;
  // after too few epochs none has, and the heatmap shows no anti-diagonal.
  // Largest is not enough: a head that splits its weight nearly evenly
  // has a largest weight somewhere too. Copying puts most of it there
  // (0.6: clearly more than the 0.5 of a two-way split).
  if (best->source >= 0.9 && best->source_weight >= 0.6)
    say(fmt::format("Layer {}, head {} is the copying head: it attends to the source position {:.1f}% of "
                    "the time, with a mean weight of {:.2f} there. In the heatmap below it draws the "
                    "anti-diagonal that reversal needs.",
                    best->layer, best->head, 100 * best->source, best->source_weight));
  else if (best->source >= 0.9)
    say(fmt::format("Layer {}, head {} puts its largest weight on the source position {:.1f}% of the time, but "
                    "only {:.2f} of its weight on average: it barely prefers the source, which is not copying "
                    "yet, and the heatmap below has no sharp anti-diagonal. More epochs (--epochs) let the heads "
                    "learn it.",
                    best->layer, best->head, 100 * best->source, best->source_weight));
  else
    say(fmt::format("No head copies yet: the best, layer {}, head {}, attends to the source position only "
                    "{:.1f}% of the time, and the heatmap below has no clear anti-diagonal. More epochs "
                    "(--epochs) let the heads learn it.",
                    best->layer, best->head, 100 * best->source));
  const Matrix w = head_weights(model, best->layer, o.sample, best->head);
  const std::vector<std::string> labels = sample_labels(o, test, T);
  print_labelled(fmt::format("layer {}, head {}, held-out sample {}", best->layer, best->head, o.sample), w,
                 labels, labels, {.precision = 2, .max_rows = 16, .max_cols = 16});
}

// Step "What each head learned", part 3: the pattern analyzer's numbers for
// every head on the sample, against a uniform causal head.
void print_reversal_analyzer_rows(const Options& o, const TinyTransformer& model, int64_t T) {
  say(fmt::format("The pattern analyzer on the same sample, every head (the numbers and classes are "
                  "explained with task 2's table; 'uniform' is a head that learned nothing):"));
  fmt::print("  {:<18} {:<9}  {:>7} {:>6} {:>8} {:>8}  {:<15}  {:>8}  {}\n", "head", "", "entropy", "focus",
             "diagonal", "local 3", "class", "local 1", "class (window 1)");
  print_analyzer_row("uniform, causal", "", uniform_weights(T, true));
  for (int64_t l = 0; l < o.layers; ++l)
    for (int64_t h = 0; h < o.heads; ++h)
      print_analyzer_row(fmt::format("layer {}, head {}", l, h), "trained", head_weights(model, l, o.sample, h));
}

// What step "What each head learned" found, for the figures and the checkpoint.
struct LearnedHeads {
  Score trained;                  // held-out score of the trained model
  std::vector<HeadScore> heads;   // where each head looks
  std::vector<Ablation> ablations;
};

// Step "What each head learned".
LearnedHeads step_what_each_head_learned(const Options& o, const ReversalTask& task, TinyTransformer& model,
                                         const ReversalData& test) {
  LearnedHeads learned;
  std::vector<int64_t> ids, targets;
  learned.trained = evaluate(model, test, task, ids, targets);
  learned.heads = analyze_heads(model, o.test, task);
  print_head_scores(learned.heads, task.digits, o.test);
  fmt::print("  held-out token accuracy {:.2f}%\n", learned.trained.percent());
  show_copying_head(o, learned.heads, model, test, task.input_len());
  print_reversal_analyzer_rows(o, model, task.input_len());
  learned.ablations = ablate_heads(model, test, task, learned.trained);
  return learned;
}

// Step "Save the trained model: a checkpoint".
void step_save_checkpoint(const Options& o, uint64_t seed, const ReversalSetup& setup, TinyTransformer& model,
                          const ReversalData& test, const Score& trained) {
  const ReversalTask& task = setup.task;
  Checkpoint ckpt;
  ckpt.config = setup.cfg;
  for (int64_t id = 0; id < o.vocab; ++id) ckpt.tokens.push_back(token_label(id));
  ckpt.note = fmt::format("task 1, reversal of {} tokens: {} epochs from seed {}, held-out token accuracy {:.2f}%",
                          task.digits, o.epochs, seed, trained.percent());
  ckpt.params = model.params;
  say("A safetensors file, which PyTorch and the Hugging Face tools read: the length of a JSON header that "
      "gives each tensor's name, dtype, shape and place, and holds the configuration, the vocabulary, a note "
      "and CRC-32s; then the parameters as little-endian float32. Reading it back checks each of those "
      "before it trusts a single size (checkpoint.hpp).");
  // The held-out set as one batch, as evaluate lays it out: the logits of
  // the model saved and of the model read back are compared on it.
  std::vector<int64_t> all(size_t(o.test)), test_ids, test_targets;
  for (int64_t i = 0; i < o.test; ++i) all[size_t(i)] = i;
  make_batch(test, all, task, test_ids, test_targets);
  save_and_verify(ckpt, o.checkpoint_dir + "/reversal.safetensors", model, test_ids, o.test);
  const auto s = test.sample(o.sample);
  fmt::print("  look at it:  {} --checkpoint {} --text \"{}\" --layer 0 --head 0\n",
             shown_path(sibling_program("07-training-analyze")),
             shown_path(o.checkpoint_dir + "/reversal.safetensors"), join_tokens(s.first(size_t(task.input_len()))));
}

// Step "Three ways to say where a token is": RoPE's relative property, then
// the task trained once per position encoding.
std::vector<PositionRun> step_position_encodings(const Options& o, uint64_t seed, const ReversalSetup& setup,
                                                 const ReversalData& train, const ReversalData& test) {
  say("Attention alone cannot tell [A, B, C] from [C, A, B]: permute the tokens and the weights permute with "
      "them. The model above adds a learned row per position to each token (GPT-2's way). Chapter 1's fixed "
      "sines and cosines can be added instead (the original Transformer's), with nothing to learn. Rotary "
      "embeddings (RoPE, used by LLaMA and GPT-NeoX) add nothing: in every block they turn each pair of "
      "features of Q and K by an angle proportional to the position (rope.hpp, an exercise).");
  if (setup.cfg.d_k() % 2 == 0) show_rope_relative_property(seed, setup.cfg);
  return compare_position_encodings(o, seed, setup.cfg, setup.adam_cfg, train, test, setup.task);
}

}  // namespace

void run_reversal(const Options& o, const Cli& cli, Figures& figures, Steps& next_step) {
  const ReversalSetup setup = reversal_setup(o);
  const int64_t T = setup.task.input_len(), D = setup.task.digits;
  print_reversal_title(o, cli.seed);

  // One generator, used in the PyTorch twin's order: model, training data,
  // held-out data, then one permutation per epoch.
  Generator gen(cli.seed);
  TinyTransformer model(setup.cfg, gen);
  const ReversalData train = make_reversal_data(gen, o.train, setup.task);
  const ReversalData test = make_reversal_data(gen, o.test, setup.task);

  next_step("The task: reverse a sequence");
  step_the_task(o, setup.task, train);
  next_step("The model and its parameters");
  step_the_model(o, setup, model);
  next_step("Before training");
  const std::vector<plot::Heatmap> untrained_panels = step_before_training(o, setup.task, model, test);
  next_step("One training step, taken apart");
  show_one_training_step(o, cli.seed, setup, train);
  next_step("Training");
  const std::vector<EpochRecord> history = step_training(o, setup, gen, model, train, test);
  next_step("The trained model on unseen sequences");
  show_generation(model, test, o, D);
  next_step("What each head learned");
  const LearnedHeads learned = step_what_each_head_learned(o, setup.task, model, test);
  next_step("Save the trained model: a checkpoint");
  step_save_checkpoint(o, cli.seed, setup, model, test, learned.trained);
  next_step("Three ways to say where a token is");
  const std::vector<PositionRun> position_runs = step_position_encodings(o, cli.seed, setup, train, test);

  gap();
  fmt::print("Drawing figures\n");
  draw_reversal_figures(figures, o, model, test, T, D, untrained_panels, history, learned.heads);
  draw_ablation_and_position_figures(figures, o, learned.trained, learned.ablations, position_runs);
}

}  // namespace sa::ch7
