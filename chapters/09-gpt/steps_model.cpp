// Chapter 9, steps 7 to 9: the GPT, its loss before training, and one
// training step's shapes.
#include "09-gpt/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <cmath>
#include <type_traits>

namespace sa::ch9 {

namespace {

template <class T>
std::string tensor_shape(const T& t) {
  if constexpr (std::decay_t<T>::RowsAtCompileTime == 1)
    return fmt::format("({})", t.cols());
  else
    return fmt::format("({}, {})", t.rows(), t.cols());
}

std::string init_str(const GptTensor& spec) {
  switch (spec.init) {
    case GptTensor::ones: return "ones";
    case GptTensor::zeros: return "zeros";
    default: return fmt::format("N(0, {:.4f}²)", spec.stddev);
  }
}

}  // namespace

void model_demo(const Gpt& model) {
  const GptConfig& c = model.config();
  // (nanoGPT's recipe only when the sizes are its own: options may change them)
  const GptConfig recipe;
  const bool is_recipe = c.n_layers == recipe.n_layers && c.n_heads == recipe.n_heads &&
                         c.d_model == recipe.d_model && c.seq_len == recipe.seq_len;
  say(fmt::format("The GPT: chapter 7's pre-norm blocks with chapter 8's causal tiled attention, {}: {}, "
                  "{}, d_model {}, seq_len {} (the context), "
                  "d_ff = 4 d_model = {}. The output layer is the token embedding itself (weight tying): the "
                  "logits are y tokᵀ. Its parameter table, the one list that initialisation, AdamW, clipping and "
                  "the PyTorch twin read:",
                  is_recipe ? "nanoGPT's character-level recipe for a CPU" : "sizes of your choosing",
                  count_of(c.n_layers, "layer"), count_of(c.n_heads, "head"), c.d_model, c.seq_len, c.d_ff()));
  fmt::print("  {:<20} {:>11} {:>8}  {:<16} {}\n", "tensor", "shape", "values", "starts as", "decays");
  visit_gpt_parameters(model.params, [&](const std::string& name, const auto& t, const GptTensor& spec) {
    // Every block has the same ten tensors: the first is shown.
    if (name.rfind("blocks.", 0) == 0 && name.rfind("blocks.0.", 0) != 0) return;
    fmt::print("  {:<20} {:>11} {:>8}  {:<16} {}\n", name, tensor_shape(t), t.size(), init_str(spec),
               spec.decay ? "yes" : "no");
    if (name == "blocks.0.fc2.b" && c.n_layers == 2)
      fmt::print("  {:<20} the same ten tensors in the other block\n", "blocks.1");
    else if (name == "blocks.0.fc2.b" && c.n_layers > 2)
      fmt::print("  {:<20} the same ten tensors in each of the {} other blocks\n",
                 fmt::format("blocks.1 to {}", c.n_layers - 1), c.n_layers - 1);
  });
  const int64_t n = parameter_count(model.params);
  fmt::print("  parameters: {} ({} without the position table, as nanoGPT counts them)\n", n,
             n - model.params.pos.size());
  say("W_o and fc2 write into the residual stream, so they start smaller, 0.02 / √(2 n_layers): the stream adds "
      "two of them per block, and this keeps its variance from growing with depth (GPT-2). AdamW decays the "
      "matrices and not the vectors (step 5's rule). The token embedding starts at 0.02 too, not at "
      "nn.Embedding's N(0, 1): it is also the output layer, and rows of norm √d_model would give logits of that "
      "size.");
  if (c.d_model == 1)
    say("With d_model 1, every LayerNorm gives its shift β whatever comes in (one number minus its own mean is 0): "
        "no block and no head sees which characters came before, every head's weights stay even, and training "
        "can only learn how often each character comes.");
}

double validation_loss(Gpt& model, const TokenData& data, const Options& o, uint64_t seed) {
  Generator eval_gen(seed + 1);
  return estimate_loss(model, data.val, o.batch, o.eval_iters, eval_gen);
}

double initial_loss_demo(Gpt& model, const TokenData& data, const Options& o, uint64_t seed) {
  const double loss = validation_loss(model, data, o, seed);
  const double uniform = std::log(double(model.config().vocab_size));
  say(fmt::format("Before any training the logits are small (every weight matrix is drawn with a spread of 0.02 "
                  "or less), so the model spreads its probability almost evenly over the {} characters. Its loss "
                  "on {} of {} x {} characters:",
                  model.config().vocab_size, count_of(o.eval_iters, "validation batch", "validation batches"),
                  o.batch, model.config().seq_len));
  // (+ 0.0: a difference that rounds to zero prints 0.0000, not -0.0000)
  const double difference = std::round((loss - uniform) * 1e4) / 1e4 + 0.0;
  fmt::print("  validation loss {:.4f} nats per character; ln({}) = {:.4f}; the difference {:.4f}\n", loss,
             model.config().vocab_size, uniform, difference);
  say("A loss well above ln(vocab_size) at the start would mean logits that are confidently wrong: a bad "
      "initialisation, such as an embedding of N(0, 1) read back as the output layer.");
  return loss;
}

void one_step_demo(Gpt& model, const TokenData& data, const Options& o, uint64_t seed) {
  const GptConfig& c = model.config();
  // A batch of its own (seed + 2): the run in step 10 then draws the same
  // batches as the twin, whose generator this step does not touch.
  Generator gen(seed + 2);
  Batch b;
  sample_batch(data.train, o.batch, c.seq_len, gen, b);
  say(fmt::format("One forward and backward, with no update, on a batch of {} of {} + 1 characters at {} of "
                  "train.txt "
                  "(nanoGPT's get_batch: one torch.randint draw each). The targets are the inputs shifted by one: "
                  "every position learns its next character.",
                  count_of(o.batch, "window"), c.seq_len, o.batch == 1 ? "a random offset" : "random offsets"));
  const auto t0 = Clock::now();
  model.forward(b.x, o.batch);
  const float loss = model.loss(b.y);
  const double forward_seconds = seconds_since(t0);
  const auto t1 = Clock::now();
  model.backward();
  const double backward_seconds = seconds_since(t1);
  const int64_t B = o.batch, T = c.seq_len, d = c.d_model, H = c.n_heads;
  // A batch of one window has one offset: printed once, not as 'the first two'.
  fmt::print("  ids, targets      ({}, {})          {}\n", B, T,
             b.offsets.size() > 1 ? fmt::format("offsets of the first two: {}, {}", b.offsets[0], b.offsets[1])
                                  : fmt::format("offset: {}", b.offsets[0]));
  fmt::print("  x = tok[ids] + pos ({}, {}, {})\n", B, T, d);
  fmt::print("  each block:  qkv ({}, {}, {}); per sequence and head Q, K, V ({}, {}) -> tiled_attention -> "
             "output ({}, {}) and lse ({}); {}\n",
             B, T, 3 * d, T, c.d_k(), T, c.d_k(), T, count_of(B * H, "call"));
  fmt::print("               fc1 ({}, {}, {}) -> GELU -> fc2 ({}, {}, {})\n", B, T, c.d_ff(), B, T, d);
  fmt::print("  logits = y tokᵀ   ({}, {}, {});  loss {:.4f}\n", B, T, c.vocab_size, loss);
  std::vector<std::span<float>> grads = tensor_spans(model.grads);
  double sq = 0;
  for (const auto& g : grads)
    for (float x : g) sq += double(x) * x;
  fmt::print("  gradients: {} tensors, the table's shapes; global norm {:.4f}\n", grads.size(), std::sqrt(sq));
  fmt::print("  forward and loss {}, backward {} (the first call: buffers are allocated)\n",
             milliseconds_str(forward_seconds), milliseconds_str(backward_seconds));
  say("The backward runs the forward's layers in reverse, as chapter 7's model does; each head's attention "
      "goes back through chapter 8's tiled_attention_backward, which rebuilds the weights from the forward's "
      "log-sum-exp instead of storing them. tok's gradient is the sum of its two uses: the rows the embedding "
      "looked up, and the output layer's d_logitsᵀ y.");
}

}  // namespace sa::ch9
