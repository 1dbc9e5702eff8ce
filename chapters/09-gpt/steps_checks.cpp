// Chapter 9, before step 1: every option, file and folder of the run
// checked, so that a bad one is one line on stderr (status 2) before any
// work and before anything is printed.
#include "09-gpt/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sa::ch9 {

CheckedRun check_run(Options& o, Cli& cli) {
  if (o.quick) {
    if (!cli.given("--iters")) o.iters = Options::kQuickIters;
    if (!cli.given("--eval-interval")) o.eval_interval = Options::kQuickEvalInterval;
    if (!cli.given("--eval-iters")) o.eval_iters = Options::kQuickEvalIters;
    if (!cli.given("--checkpoint")) o.checkpoint = default_gpt_checkpoint(/*quick=*/true);
  }
  // --resume: the checkpoint read and checked against the options first (a
  // missing, damaged or foreign file is one line, before any work).
  CheckedRun run;
  std::optional<GptCheckpoint>& resumed = run.resumed;
  if (o.resume) resumed = resume_checkpoint(o, cli);
  o.model_config().validate();  // d_model divisible by n_heads
  // The checkpoint's readers (--resume, ./book generate) take files of at
  // most 1 GiB: a model whose file would be larger is refused now, even with
  // --i-know-it-is-big (it trained, and its save failed after the training).
  if (const uint64_t bytes = gpt_checkpoint_size_bound(o.model_config()); bytes > kMaxCheckpointFile)
    throw UsageError(fmt::format("--seq-len {} --d-model {} --n-layers {} make a model of {} parameters, whose "
                                 "checkpoint (with AdamW's two moments) would take about {}: more than the {} GiB a "
                                 "checkpoint may have (--resume and ./book generate read no larger file); give a "
                                 "smaller --d-model or --n-layers",
                                 o.seq_len, o.d_model, o.n_layers, gpt_parameter_count(o.model_config()),
                                 bytes_str(double(bytes)), kMaxCheckpointFile >> 30));
  cli.check_budget(run_estimate(o));
  // The default folder is made on the first run; a folder the reader names
  // must exist, so that a typo never leaves 8 MB of text somewhere else.
  // (A folder the system cannot look at, a loop of symbolic links, is
  // require_writable_dir's to name.)
  std::error_code ec;
  if (cli.given("--data-dir") && !o.data_dir.empty() && !std::filesystem::is_directory(o.data_dir, ec) && !ec)
    throw UsageError(fmt::format("--data-dir '{}' is not a folder (create it, or leave --data-dir out for {})",
                                 o.data_dir, shown_path(Options{}.data_dir)));
  // A folder that holds the prepared text already is only read (a shared,
  // read-only copy is fine; load_text checks it and says when a file must be
  // written again); one the text is to be prepared in must take 16 MB.
  const auto holds = [&](const char* file) {
    return std::filesystem::is_regular_file(std::filesystem::path(o.data_dir) / file, ec);
  };
  const bool prepared = holds("kjv.txt") && holds("train.txt") && holds("val.txt");
  if (!prepared) require_writable_dir("--data-dir", o.data_dir, 16.0 * 1024 * 1024);
  // The trained model must have somewhere to go: checked before training.
  require_checkpoint_targets("--checkpoint", {{o.checkpoint, gpt_checkpoint_size_bound(o.model_config())}});
  // The text is read (or prepared) and checked before anything is printed:
  // a missing package or a damaged file is one line on stderr. So is a
  // prompt with a character the training text lacks (checked without the
  // tokenizer, an exercise that may not be written yet).
  run.text = load_text(o.data_dir);
  const Text& text = run.text;
  if (resumed) require_resumable(*resumed, o, text);
  run.prompt = utf8_chars("--prompt", o.prompt);
  const std::vector<char32_t>& prompt = run.prompt;
  for (size_t i = 0; i < prompt.size(); ++i) {
    std::string bytes;
    append_utf8(bytes, prompt[i]);
    if (text.train.find(bytes) == std::string::npos)
      throw UsageError(fmt::format("--prompt: character {} at position {} is not in the vocabulary of train.txt",
                                   char_name(prompt[i]), i));
  }
  return run;
}

}  // namespace sa::ch9
