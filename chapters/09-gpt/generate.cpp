// Chapter 9's generation command, `./book generate`: load the GPT the
// chapter program trained and saved, and write text after a prompt:
//
//   09-gpt-generate --prompt "And Jesus said" --tokens 300 --temperature 0.8 --top-k 20 --seed 7
//
// It generates with chapter 8's key/value cache (GptDecoder), then the
// first characters again without it (each a whole forward over its
// context), and prints both speeds. Anything wrong (no checkpoint, a
// damaged one or another model's, an empty prompt, a character the model
// never saw, a temperature of 0 or less, a top-k of 0 or above the
// vocabulary) is one line and exit status 2, before any work.
#include "09-gpt/checkpoint.hpp"
#include "09-gpt/model.hpp"
#include "09-gpt/steps.hpp"

#include "sa/cli.hpp"
#include "sa/paths.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::ch9;

namespace {

// The speed without the cache is measured on this many characters at most:
// each costs a whole forward, 10 to 16 times a cached one (by the vector
// width: chapter 9 README, "Speed"), and the comparison needs no more.
constexpr int64_t kCompared = 256;

// The cost of generating `tokens` characters after a prompt of
// `prompt_tokens` with the cache, then the first `compared` of them again
// without it, for the checkpoint's model: with run_estimate's rates
// (steps.hpp), before any work.
RunEstimate generation_estimate(const GptConfig& config, int64_t prompt_tokens, int64_t tokens, int64_t compared) {
  const double d = double(config.d_model), layers = double(config.n_layers), T = double(config.seq_len),
               V = double(config.vocab_size);
  const double params = double(gpt_parameter_count(config));
  // One forward call that computes `rows` new rows reading a context of
  // `context` tokens: the products of a third of a training step a row,
  // what is not a product, each head's and layer's cost of a call, and
  // reading every weight once (a call of one row is bound by that: 0.21 ns a
  // parameter, three times what its products count).
  double seconds = 0;
  auto forward = [&](int64_t rows, int64_t context) {
    const double r = double(rows), c = double(context);
    seconds += r * (2.0 * params + 4.0 * layers * c * d) / kOperationsPerSecond + r * kSecondsPerToken / 3.0 +
               layers * (double(config.n_heads) * head_call_seconds(rows, context) + kSecondsPerLayerStep) / 3.0 +
               params * kSecondsPerParameterRead;
  };
  // generate's own walk (context_start): the warm-up forward over the
  // prompt's context, then with the cache one row a character and the
  // whole context at each restart, without it the whole context each time.
  const int64_t seq_len = config.seq_len;
  forward(std::min(prompt_tokens, seq_len), std::min(prompt_tokens, seq_len));
  int64_t start = -1;
  for (int64_t i = 0; i < tokens; ++i) {
    const int64_t n = prompt_tokens + i, from = context_start(n, seq_len), context = n - from;
    forward(from != start ? context : 1, context);
    start = from;
    if (i < compared) forward(context, context);
  }
  RunEstimate e;
  e.seconds = seconds;
  // The checkpoint's bytes as read and what they unpack into (the weights
  // and AdamW's two moments: 12 bytes a parameter each), the model (4), one
  // forward's activations over a whole context and the caches. (Measured:
  // 1.8 GB at 75 M parameters, 24 bytes a parameter; 16 had been counted.)
  e.bytes = 28.0 * params + 4.0 * T * (layers * 30.0 * d + 4.0 * V) + 8.0 * layers * T * d;
  e.options = fmt::format("--tokens {} with the checkpoint's model ({}, {}, d_model {}, seq_len {})", tokens,
                          count_of(config.n_layers, "layer"), count_of(config.n_heads, "head"), config.d_model,
                          config.seq_len);
  return e;
}

void run(int argc, char** argv) {
  std::string checkpoint = default_gpt_checkpoint(/*quick=*/false), prompt = "And God said";
  int64_t tokens = 300, top_k = kVocabSize;
  double temperature = 0.8;
  Cli cli("09-gpt",
          "Chapter 9's trained GPT writes: text after --prompt, from the checkpoint `./book run 9` saved, with "
          "chapter 8's key/value cache; then the first characters again without it, and both speeds.",
          "09-gpt-generate");
  cli.without_figures();
  cli.add("--checkpoint", &checkpoint, "the trained model (a .safetensors file `./book run 9` saved)", "a file");
  cli.add("--prompt", &prompt, "the text to continue (characters of the model's vocabulary)",
          "at least one character of the model's vocabulary");
  cli.add("--tokens", &tokens, "characters to generate after the prompt", IntRange{1, 100000});
  cli.add("--temperature", &temperature, "divides the logits: below 1 sharpens, above 1 flattens",
          RealRange{kMinTemperature, 100});
  cli.add("--top-k", &top_k,
          "keep only the k likeliest characters (unless given: the model's whole vocabulary, 63 characters for the "
          "Bible)",
          IntRange{1, 1000000, "the model's vocabulary size"});
  cli.parse(argc, argv);

  // Everything is checked before any work: the file, then the prompt and
  // top-k against the vocabulary it holds.
  // (A file the system cannot look at, a loop of symbolic links or a name too
  // long, is the reader's to name: it was an exception, exit 1.)
  std::error_code ec;
  if (!std::filesystem::exists(checkpoint, ec) && !ec) {
    if (cli.given("--checkpoint"))
      throw UsageError(fmt::format("--checkpoint {}: no such file", shown_path(checkpoint)));
    // A --quick run saves under its own name: say so when there is one.
    const std::string quick = default_gpt_checkpoint(/*quick=*/true);
    throw UsageError(fmt::format("no checkpoint at {}: train the GPT first with ./book run 9 (a few minutes on one "
                                 "core){}",
                                 shown_path(checkpoint),
                                 std::filesystem::exists(quick, ec)
                                     ? fmt::format(", or use the --quick run's: --checkpoint {}", shown_path(quick))
                                     : std::string()));
  }
  GptCheckpoint ckpt = load_gpt_checkpoint(checkpoint);
  const CharVocab vocab{utf8_chars("the checkpoint's vocabulary", ckpt.vocabulary)};
  const int64_t vocab_size = vocab.size();
  if (cli.given("--top-k") && top_k > vocab_size)
    throw UsageError(fmt::format("--top-k {} is above the model's vocabulary of {} characters", top_k, vocab_size));
  if (!cli.given("--top-k")) top_k = vocab_size;
  const std::vector<char32_t> chars = utf8_chars("--prompt", prompt);
  for (size_t i = 0; i < chars.size(); ++i)
    if (std::find(vocab.chars.begin(), vocab.chars.end(), chars[i]) == vocab.chars.end())
      throw UsageError(fmt::format("--prompt: character {} at position {} is not in the model's vocabulary of {} "
                                   "characters",
                                   char_name(chars[i]), i, vocab_size));

  // The model is the checkpoint's, whatever its size: its cost is known
  // only now (a model of 8 layers of width 512 writes a few hundred
  // characters a second with the cache, a few dozen without).
  cli.check_budget(generation_estimate(ckpt.config, int64_t(chars.size()), tokens, std::min(tokens, kCompared)));

  Generator discarded(0);  // the model's initial weights, replaced at once by the checkpoint's
  Gpt model(ckpt.config, discarded);
  model.params = std::move(ckpt.params);
  const std::vector<int64_t> ids = encode(vocab, prompt);
  fmt::print("{}: {}, {}, d_model {}, seq_len {}, {} characters, trained {}\n", shown_path(checkpoint),
             count_of(ckpt.config.n_layers, "layer"), count_of(ckpt.config.n_heads, "head"), ckpt.config.d_model,
             ckpt.config.seq_len, vocab_size, count_of(ckpt.iteration, "iteration"));
  fmt::print("{} after {}, temperature {}, top-k {}, seed {}\n", count_of(tokens, "character"),
             quoted_prompt(prompt, chars.size()), temperature, top_k, cli.seed);
  if (const std::string note = long_prompt_note(int64_t(ids.size()), ckpt.config.seq_len); !note.empty())
    fmt::print("{}\n", note);
  fmt::print("\n");

  GenerationOptions g;
  g.new_tokens = tokens;
  g.temperature = temperature;
  g.top_k = top_k;
  Generator gen(cli.seed);
  warm_up(model, ids);
  auto t0 = Clock::now();
  const std::vector<int64_t> text = generate(model, ids, g, gen);
  const double cached = seconds_since(t0);
  print_generated(text_after_prompt(decode(vocab, text), ids.size()));

  // The same draws without the cache, on the first characters only.
  g.new_tokens = std::min(tokens, kCompared);
  g.use_cache = false;
  Generator again(cli.seed);
  t0 = Clock::now();
  const std::vector<int64_t> plain = generate(model, ids, g, again);
  const double uncached = seconds_since(t0);
  const double with = double(tokens) / cached, without = double(g.new_tokens) / uncached;
  fmt::print("\nwith the key/value cache:    {:8.0f} characters a second ({} in {})\n", with, tokens,
             timing_str(cached));
  fmt::print("without it (whole context):  {:8.0f} characters a second ({} in {}): {}\n", without,
             g.new_tokens, timing_str(uncached), cache_gain(with / without));
  if (!std::equal(plain.begin(), plain.end(), text.begin()))
    fmt::print("(the two runs part where float32 rounding, summed in another order, moved a draw)\n");
}

}  // namespace

int main(int argc, char** argv) {
  flush_subnormals_to_zero();  // exp(-inf) of a masked score is 0, not a slow subnormal (tensor.hpp)
  return run_program("09-gpt-generate", [&] { run(argc, argv); });
}
