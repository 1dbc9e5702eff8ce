// Chapter 9: the trained model saved after step 10, and --resume, which
// continues a run from that file (the format: checkpoint.hpp).
#include "09-gpt/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>

namespace sa::ch9 {

namespace {

// The model's options, the checkpoint's field each must equal.
struct ModelOption {
  const char* flag;
  const char* name;
  int64_t Options::*option;
  int64_t GptConfig::*field;
};
constexpr ModelOption kModelOptions[] = {{"--seq-len", "seq_len", &Options::seq_len, &GptConfig::seq_len},
                                         {"--d-model", "d_model", &Options::d_model, &GptConfig::d_model},
                                         {"--n-heads", "n_heads", &Options::n_heads, &GptConfig::n_heads},
                                         {"--n-layers", "n_layers", &Options::n_layers, &GptConfig::n_layers}};

// The characters of the training text in id order (sorted, once each), as
// build_vocab makes them, but without the tokenizer: it is an exercise, and
// the check runs before anything is printed.
std::string text_vocabulary(const Text& text) {
  const std::vector<char32_t> chars = utf8_chars("train.txt", text.train);
  const std::set<char32_t> sorted(chars.begin(), chars.end());
  return vocabulary_text(CharVocab{std::vector<char32_t>(sorted.begin(), sorted.end())});
}

std::vector<uint32_t> bits_of(const GptParams& p) {
  std::vector<uint32_t> out;
  visit_gpt_parameters(p, [&](const std::string&, const auto& t, const GptTensor&) {
    for (int64_t i = 0; i < t.size(); ++i) out.push_back(std::bit_cast<uint32_t>(t.data()[i]));
  });
  return out;
}

}  // namespace

GptCheckpoint resume_checkpoint(Options& o, Cli& cli) {
  std::error_code ec;
  if (!std::filesystem::exists(o.checkpoint, ec)) {
    // The run that makes it: the same --quick and --checkpoint as this one.
    const std::string train = fmt::format("./book run 9{}{}", o.quick ? " --quick" : "",
                                          cli.given("--checkpoint") ? " --checkpoint " + shown_path(o.checkpoint) : "");
    throw UsageError(fmt::format("--resume: no checkpoint at {}: train first with `{}` (it saves the trained model "
                                 "there){}",
                                 shown_path(o.checkpoint), train,
                                 cli.given("--checkpoint") ? "" : ", or name one with --checkpoint PATH"));
  }
  GptCheckpoint ckpt = load_gpt_checkpoint(o.checkpoint);
  const std::string name = o.checkpoint;
  const auto fail = [&](const std::string& why) {
    return CheckpointError(fmt::format("checkpoint '{}': {}", printable(shown_path(name), 300), why));
  };
  if (!ckpt.has_optimizer)
    throw fail("it holds the model only, without AdamW's state and the training generator's: a run cannot "
               "resume from it");
  // The model's size: from the checkpoint unless given, and then the same.
  for (const ModelOption& m : kModelOptions) {
    const int64_t saved = ckpt.config.*m.field;
    if (cli.given(m.flag) && o.*m.option != saved)
      throw fail(fmt::format("a model of {} {}, but {} {} was given: leave {} out to resume it", m.name, saved,
                             m.flag, o.*m.option, m.flag));
    o.*m.option = saved;
  }
  // The batches, the schedule's peak and the dropout: the first run's, so
  // that the resumed run is the rest of that run (files of an older book
  // did not record them: then they are the options').
  if (ckpt.training) {
    const GptCheckpoint::Training& t = *ckpt.training;
    if (cli.given("--batch") && o.batch != t.batch)
      throw fail(fmt::format("trained with batches of {}, but --batch {} was given: the resumed run draws the batches "
                             "the first would have drawn next; leave --batch out to resume it",
                             t.batch, o.batch));
    if (cli.given("--lr") && o.lr != t.lr)
      throw fail(fmt::format("trained with --lr {}, but --lr {} was given: the schedule goes on from the first run's "
                             "peak; leave --lr out to resume it",
                             t.lr, o.lr));
    if (cli.given("--dropout") && o.dropout != t.dropout)
      throw fail(fmt::format("trained with --dropout {}, but --dropout {} was given: leave --dropout out to resume it",
                             t.dropout, o.dropout));
    o.batch = t.batch;
    o.lr = t.lr;
    o.dropout = t.dropout;
  }
  // The seed chooses the validation batches (seed + 1): a resumed run keeps
  // the first run's, so that its losses continue the same curve.
  if (cli.given("--seed") && cli.seed != ckpt.seed)
    throw fail(fmt::format("trained with --seed {}, but --seed {} was given: its validation batches come from the "
                           "seed; leave --seed out to resume it",
                           ckpt.seed, cli.seed));
  cli.seed = ckpt.seed;
  if (ckpt.iteration >= o.iters)
    throw fail(ckpt.iteration == o.iters
                   ? fmt::format("already trained {} of {} iterations; give --iters above {} to train it further",
                                 ckpt.iteration, o.iters, ckpt.iteration)
                   : fmt::format("already trained {} iterations, more than --iters {}; give --iters above {} to train "
                                 "it further",
                                 ckpt.iteration, o.iters, ckpt.iteration));
  // The text's SHA-256 is known before the text is read: load_text refuses
  // any other.
  require_same_model(ckpt, {o.model_config(), ckpt.vocabulary, kTextSha256}, shown_path(name));
  o.start_iteration = ckpt.iteration;
  return ckpt;
}

void require_resumable(const GptCheckpoint& ckpt, const Options& o, const Text& text) {
  require_same_model(ckpt, {o.model_config(), text_vocabulary(text), kTextSha256}, shown_path(o.checkpoint));
}

void resume_demo(Gpt& model, Generator& gen, const GptCheckpoint& ckpt, const Options& o) {
  model.params = ckpt.params;
  gen.set_state(ckpt.generator);
  fmt::print("  --resume: the weights above are replaced by those of {}: {} of {} iterations done (seed {}), with "
             "AdamW's moments (step {}) and the state of the generator that drew the training batches\n",
             shown_path(o.checkpoint), ckpt.iteration, ckpt.iters, ckpt.seed, ckpt.adamw_step);
  if (!ckpt.note.empty()) fmt::print("  its note: {}\n", printable(ckpt.note, 200));
}

void loaded_loss_demo(Gpt& model, const TokenData& data, const Options& o, uint64_t seed) {
  const double loss = validation_loss(model, data, o, seed);
  const double uniform = std::log(double(model.config().vocab_size));
  say(fmt::format("The model read back has trained {} already. Its loss on the {} of {} x {} characters that "
                  "step 10 measures on:",
                  count_of(o.start_iteration, "iteration"),
                  count_of(o.eval_iters, "validation batch", "validation batches"), o.batch, model.config().seq_len));
  fmt::print("  validation loss {:.4f} nats per character; ln({}) = {:.4f}, where training started\n", loss,
             model.config().vocab_size, uniform);
}

void save_run_checkpoint(const Options& o, const Gpt& model, const OptimizerState& opt, const Generator& gen,
                         const CharVocab& vocab, uint64_t seed) {
  GptCheckpoint ckpt;
  ckpt.config = model.config();
  ckpt.vocabulary = vocabulary_text(vocab);
  ckpt.text_sha256 = kTextSha256;
  ckpt.iteration = o.iters;
  ckpt.iters = o.iters;
  ckpt.seed = seed;
  ckpt.note = fmt::format("chapter 9's GPT on the King James Bible: {} iterations of batch {}{}", o.iters, o.batch,
                          o.start_iteration ? fmt::format(", resumed at iteration {}", o.start_iteration) : "");
  ckpt.params = model.params;
  ckpt.has_optimizer = true;
  ckpt.adam_m = opt.m;
  ckpt.adam_v = opt.v;
  ckpt.adamw_step = opt.steps;
  ckpt.training = GptCheckpoint::Training{o.batch, o.lr, o.dropout};
  ckpt.generator = gen.state();
  // The file this run wrote is read back and compared before it takes the
  // name (chapter 7's check_before_rename): a checkpoint that would not
  // resume this run exactly is never left behind.
  uintmax_t bytes = 0;
  save_gpt_checkpoint(o.checkpoint, ckpt, [&](const std::string& written) {
    const GptCheckpoint back = load_gpt_checkpoint(written);
    if (bits_of(back.params) != bits_of(ckpt.params) || bits_of(back.adam_m) != bits_of(ckpt.adam_m) ||
        bits_of(back.adam_v) != bits_of(ckpt.adam_v) || back.generator != ckpt.generator)
      throw std::runtime_error("the checkpoint read back is not the state saved; it was not saved");
    std::error_code ec;
    bytes = std::filesystem::file_size(written, ec);
  });
  const int64_t n = parameter_count(model.params);
  fmt::print("  saved  {}  ({}: {} parameters and AdamW's two moments of each, float32; the training generator's "
             "state; read back bit for bit)\n",
             shown_path(o.checkpoint), bytes_str(double(bytes)), n);
  // The options that find this file again: --resume reads the run's
  // default checkpoint (--quick's own under --quick), generate the full
  // run's.
  const std::string run_default = default_gpt_checkpoint(o.quick);
  const auto unless = [&](const std::string& default_path) {
    return o.checkpoint == default_path ? std::string() : " --checkpoint " + shown_path(o.checkpoint);
  };
  fmt::print("  continue it with{}{} --resume --iters N (N above {}), write with it (./book generate{}), or read it "
             "from Python (README, \"The checkpoint\")\n",
             o.quick ? " --quick" : "", unless(run_default), o.iters, unless(default_gpt_checkpoint(/*quick=*/false)));
}

}  // namespace sa::ch9
