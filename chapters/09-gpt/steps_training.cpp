// Chapter 9, steps 4 and 5: the learning-rate schedule, gradient clipping
// and AdamW, the parts of training that are new after chapter 7.
#include "09-gpt/steps.hpp"

#include "sa/plot.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace sa::ch9 {

std::string warmup_words(const LrSchedule& s) {
  if (s.warmup_iters == 0) return fmt::format("no warm-up (lr = {:g} from the first iteration)", s.lr);
  return fmt::format("a warm-up over {} to lr = {:g}", count_of(s.warmup_iters, "iteration"), s.lr);
}

void schedule_demo(const LrSchedule& run, int64_t first, Figures& figures) {
  const LrSchedule s;  // nanoGPT's shakespeare_char on a CPU: 2000 iterations, lr 1e-3 to 1e-4, 100 of warm-up
  say(fmt::format("nanoGPT's character-level recipe on a CPU changes its step size as it trains (learning_rate, "
                  "nanoGPT's get_lr): a linear warm-up over the first {} iterations, while Adam's moment estimates "
                  "are still poor, then half a cosine from lr = {:g} down to min_lr = {:g} at iteration {}, and "
                  "min_lr after it.",
                  s.warmup_iters, s.lr, s.min_lr, s.lr_decay_iters));
  fmt::print("  {:>9}  {:>12}\n", "iteration", "lr");
  for (int64_t it : {0, 1, 49, 99, 100, 101, 550, 1050, 1550, 1999, 2000, 2001})
    fmt::print("  {:>9}  {:>12.6e}\n", it, learning_rate(it, s));
  say("The warm-up counts from 1 (lr / 101 at iteration 0), so the first step already moves the weights; "
      "iteration 100 is the top, where the cosine starts, and halfway through the decay (iteration 1050) the "
      "rate is halfway between lr and min_lr.");
  const bool same = run.lr == s.lr && run.min_lr == s.min_lr && run.warmup_iters == s.warmup_iters &&
                    run.lr_decay_iters == s.lr_decay_iters;
  const std::string from = first ? fmt::format(" from iteration {} on (--resume)", first) : "";
  if (same)
    say(fmt::format("Step 10 trains with this schedule{}.", from));
  else
    say(fmt::format("Step 10 trains{} with the same shape over {}: {}, then the cosine down to min_lr = {:g} at "
                    "iteration {}.",
                    from, count_of(run.lr_decay_iters, "iteration"), warmup_words(run), run.min_lr,
                    run.lr_decay_iters));

  // The figure draws the schedule step 10 trains with (the recipe's in the
  // default run), a tenth past its end.
  figures.draw("lr_schedule.png", [&](const std::string& path) {
    std::vector<double> x, y;
    const int64_t last = run.lr_decay_iters + run.lr_decay_iters / 10 + 1;
    for (int64_t it = 0; it <= last; it += std::max<int64_t>(1, last / 440)) {
      x.push_back(double(it));
      y.push_back(learning_rate(it, run));
    }
    plot::LinePlot p;
    // ("decay to 2000" read as a learning rate of 2000: the iteration is named)
    p.title = fmt::format("Learning rate against iteration: warm-up of {}, cosine decay from {:g} to {:g} at "
                          "iteration {}{}",
                          count_of(run.warmup_iters, "iteration"), run.lr, run.min_lr, run.lr_decay_iters,
                          same ? "" : " (this run's schedule)");
    p.xlabel = "iteration";
    p.ylabel = "learning rate";
    // (one curve: no legend, which would only repeat the axis's name; a
    // line, as 440 markers hid the corner at the warm-up's end)
    p.series = {{"", x, y, plot::Series::Style::Lines}};
    return plot::lines(path, p);
  });
}

void optimizer_demo() {
  // Two gradient tensors of 3 and 4 values, norms 5 and 12: together 13.
  std::vector<float> g1 = {3, 0, 4}, g2 = {0, 12, 0, 0};
  say("Gradient clipping (clip_grad_norm, as torch.nn.utils.clip_grad_norm_): the norm of every gradient "
      "taken together, and when it is above max_norm one factor for all of them, so the update keeps its "
      "direction. Two tensors, (3, 0, 4) of norm 5 and (0, 12, 0, 0) of norm 12, clipped to max_norm 1:");
  const double total = clip_grad_norm({std::span<float>(g1), std::span<float>(g2)}, 1.0);
  fmt::print("  global norm {:.4f}; after clipping: ({:.4f}, {:.4f}, {:.4f}) and ({:.4f}, {:.4f}, {:.4f}, {:.4f})\n",
             total, g1[0], g1[1], g1[2], g2[0], g2[1], g2[2], g2[3]);
  double after = 0;
  for (float x : g1) after += double(x) * x;
  for (float x : g2) after += double(x) * x;
  fmt::print("  their norm now {:.4f}\n", std::sqrt(after));
  say("Both were divided by 13, which keeps the update's direction. Clipped one tensor at a time, the first "
      "would be divided by 5 and the second by 12: another direction.");

  say("AdamW (adamw_step; Loshchilov & Hutter): chapter 7's Adam, but the weight decay shrinks the weights "
      "themselves, θ ← θ (1 − lr λ), instead of entering the gradient. One weight of 1 and one of -2, with "
      "gradients 0 and 0.5, lr 0.1 and λ = 0.5, ten steps:");
  AdamWConfig cfg;
  cfg.lr = 0.1;
  cfg.weight_decay = 0.5;
  std::vector<float> p = {1.0f, -2.0f}, g = {0.0f, 0.5f}, m(2, 0.0f), v(2, 0.0f);
  for (int64_t t = 1; t <= 10; ++t) adamw_step(p, g, m, v, t, cfg);
  fmt::print("  after 10 steps: {:.4f} and {:.4f}\n", p[0], p[1]);
  // The same ten steps with the decay in the gradient instead (L2, what
  // torch.optim.Adam(weight_decay=λ) does): chapter 7's Adam on g + λθ.
  std::vector<float> p_l2 = {1.0f, -2.0f}, m_l2(2, 0.0f), v_l2(2, 0.0f);
  for (int64_t t = 1; t <= 10; ++t) {
    std::vector<float> g_l2 = g;
    for (size_t i = 0; i < g_l2.size(); ++i) g_l2[i] += float(cfg.weight_decay) * p_l2[i];
    adam_step(p_l2, g_l2, m_l2, v_l2, t, AdamConfig{cfg.lr, cfg.beta1, cfg.beta2, cfg.eps});
  }
  fmt::print("  with λθ in the gradient instead (L2): {:.4f} and {:.4f}\n", p_l2[0], p_l2[1]);
  say(fmt::format("The weight without gradient decayed by (1 − 0.05)^10 = {:.4f} and nothing else: Adam's "
                  "division by sqrt(v) never sees the decay. The weight of -2 ends where it started only because "
                  "of these numbers: each step Adam moves it by about lr = 0.1 against its gradient, and the decay "
                  "pulls it back by lr λ 2 = 0.1. As L2, λθ is a gradient like any other: Adam divides it by "
                  "sqrt(v), so both weights move by about lr each step, whatever their size, and the first falls "
                  "from 1 to {:.4f} in ten steps. In the GPT, matrices decay and biases and LayerNorm's parameters "
                  "do not (nanoGPT's rule).",
                  std::pow(0.95, 10), p_l2[0]));
}

}  // namespace sa::ch9
