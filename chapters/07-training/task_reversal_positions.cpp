// Chapter 7, task 1, step "Three ways to say where a token is": RoPE's
// relative property, measured, then the task trained once per position
// encoding (learned, sinusoidal, RoPE), side by side. (PositionRun, what
// part 2 hands to the figures, is in task_reversal.hpp.)
#include "07-training/model.hpp"
#include "07-training/program.hpp"
#include "07-training/reversal.hpp"
#include "07-training/rope.hpp"
#include "07-training/task_reversal.hpp"

#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sa::ch7 {

namespace {

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
void train_side_by_side(const ReversalOptions& o, uint64_t seed, int64_t epochs, std::vector<Trainee>& trainees,
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
            train_step(*t.model, *t.adam, ids, targets, end - begin, {.p = o.dropout, .gen = &masks});
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

std::vector<PositionRun> compare_position_encodings(const ReversalOptions& o, uint64_t seed, const ModelConfig& cfg,
                                                    const AdamConfig& adam_cfg, const ReversalData& train,
                                                    const ReversalData& test, const ReversalTask& task) {
  std::vector<PositionEncoding> encodings{PositionEncoding::learned, PositionEncoding::sinusoidal};
  if (cfg.d_k() % 2 == 0) encodings.push_back(PositionEncoding::rope);
  else
    say(fmt::format("RoPE turns pairs of features, and d_k = {} is odd: only the other two train below.", cfg.d_k()));
  const int64_t epochs = o.position_epochs;  // main.cpp keeps it at most o.epochs
  say(fmt::format("Now the task, trained {} times for {} epoch{} (--position-epochs, at most --epochs): each model "
                  "from seed {} (the learned one starts from the weights the training above started from), on the "
                  "same data, "
                  "all {} in one batch order of their own (drawn from seed {}, so the learned one's accuracies are "
                  "not those above). Held-out token accuracy after each epoch:",
                  encodings.size(), epochs, epochs == 1 ? "" : "s", seed, encodings.size(), seed + 1));
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

}  // namespace

// Step "Three ways to say where a token is": RoPE's relative property, then
// the task trained once per position encoding.
std::vector<PositionRun> step_position_encodings(const ReversalOptions& o, uint64_t seed, const ReversalSetup& setup,
                                                 const ReversalData& train, const ReversalData& test) {
  say("Attention alone cannot tell [A, B, C] from [C, A, B]: permute the tokens and the weights permute with "
      "them. The model above adds a learned row per position to each token (GPT-2's way). Chapter 1's fixed "
      "sines and cosines can be added instead (the original Transformer's), with nothing to learn. Rotary "
      "embeddings (RoPE, used by LLaMA and GPT-NeoX) add nothing: in every block they turn each pair of "
      "features of Q and K by an angle proportional to the position (rope.hpp, an exercise).");
  if (setup.cfg.d_k() % 2 == 0) show_rope_relative_property(seed, setup.cfg);
  return compare_position_encodings(o, seed, setup.cfg, setup.adam_cfg, train, test, setup.task);
}

}  // namespace sa::ch7
