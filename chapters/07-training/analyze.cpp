// Chapter 7's analysis command: load a checkpoint the chapter program saved
// and show the attention of one head on a text of your choice (options
// `--checkpoint --text --layer --head`):
//
//   07-training-analyze --checkpoint build/checkpoints/corpus-causal.safetensors
//                       --text "the cat sat on the mat" --layer 0 --head 1
//
// It prints what the checkpoint holds, the head's weights, the model's next
// token after every position, the pattern analyzer's numbers and class against
// the uniform baseline, and the strongest links; it draws the head as a
// heatmap, every head of the layer as a grid, and the head as a flow
// diagram. Layers and heads are numbered from 0, as PyTorch indexes them and
// as the chapter prints them.
//
// Anything wrong (no such file, a truncated, corrupted or foreign file,
// weights so large that the model computes infinities, a word the model does
// not know, a text longer than the model's positions, a layer or head that
// does not exist) is one line and exit status 2. The strings the checkpoint
// holds are shown with control characters escaped (printable()).
#include "07-training/analysis.hpp"
#include "07-training/checkpoint.hpp"
#include "07-training/model.hpp"
#include "07-training/patterns.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/plot.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

using namespace sa;

namespace {

void run(int argc, char** argv) {
  std::string checkpoint;  // default: build/checkpoints/corpus-causal.safetensors
  std::string text = "the cat sat on the mat";
  int64_t layer = 0, head = 0, window = 3;
  Cli cli("07-training",
          "Chapter 7's analysis command: load a checkpoint saved by the chapter program (07-training) and show "
          "the attention of one head on a text: weights, next-token predictions, pattern numbers, strongest "
          "links, and figures.",
          "07-training-analyze");
  cli.add("--checkpoint", &checkpoint, "the checkpoint file (default: build/checkpoints/corpus-causal.safetensors)",
          "a file");
  cli.add("--text", &text, "the text to analyze, tokens separated by spaces");
  // Counted from 0, as PyTorch indexes them and as the whole book prints them.
  cli.add("--layer", &layer, "the layer, counted from 0", IntRange{0, 1000});
  cli.add("--head", &head, "the head, counted from 0", IntRange{0, 1000});
  cli.add("--window", &window, "local focus counts the keys within this distance of the query", IntRange{0, 1000});
  // One forward pass of a saved model over one text: the checkpoint loader's
  // limits bound it, so there is no budget to override.
  cli.without_budget();
  cli.parse(argc, argv);
  if (checkpoint.empty()) {
    checkpoint = default_checkpoint_dir() + "/corpus-causal" + std::string(kCheckpointExtension);
    std::error_code ec;  // (one the system cannot look at is load_checkpoint's to name)
    if (!std::filesystem::exists(checkpoint, ec) && !ec)
      throw UsageError(fmt::format("no checkpoint at {} yet: `./book run 7` saves it there", shown_path(checkpoint)));
  }

  const Checkpoint ckpt = load_checkpoint(checkpoint);
  const ModelConfig& cfg = ckpt.config;
  if (layer >= cfg.n_layers)
    throw UsageError(fmt::format("--layer {}, but the model has {} layer{} (0..{})", layer, cfg.n_layers,
                                 cfg.n_layers == 1 ? "" : "s", cfg.n_layers - 1));
  if (head >= cfg.n_heads)
    throw UsageError(fmt::format("--head {}, but the model has {} head{} per layer (0..{})", head, cfg.n_heads,
                                 cfg.n_heads == 1 ? "" : "s", cfg.n_heads - 1));
  const std::vector<int64_t> ids = encode_text_option(text, ckpt.tokens, cli.given("--text"));
  const int64_t n = int64_t(ids.size());
  if (n > cfg.max_seq)
    throw UsageError(fmt::format("the text has {} tokens, but the model knows only {} positions", n, cfg.max_seq));
  std::vector<std::string> labels;
  for (int64_t id : ids) labels.push_back(ckpt.tokens[size_t(id)]);

  // The model on the text, before anything is printed. Finite weights can
  // still be too large to compute with (3e38 overflows the first product):
  // refuse them in one line rather than print NaN.
  auto model = model_from(ckpt);
  const int64_t l = layer, h = head;
  const auto too_large = [&] {
    float largest = 0;
    for_each_tensor(ckpt.params, [&](const std::string&, std::span<const float> t) {
      for (float x : t) largest = std::max(largest, std::abs(x));
    });
    return CheckpointError(fmt::format("checkpoint '{}': the model computes infinities or NaN on this text (its "
                                       "largest weight is {:.3g} in magnitude): these are not a trained model's "
                                       "weights",
                                       printable(checkpoint), largest));
  };
  Matrix logits, P;
  try {
    logits = model->forward(ids, 1);
    P = head_weights(*model, l, 0, h);
  } catch (const std::invalid_argument&) {  // a softmax that met NaN
    throw too_large();
  }
  if (!logits.allFinite() || !P.allFinite()) throw too_large();

  chapter_title("Chapter 7: what one attention head of a saved model does");
  fmt::print("  checkpoint  {}\n", printable(shown_path(checkpoint)));
  fmt::print("  note        {}\n", printable(ckpt.note));
  fmt::print("  model       vocabulary {}, {} positions, d_model {}, {} layer{} of {} head{} (d_k {}), d_ff {}, {}\n",
             cfg.vocab, cfg.max_seq, cfg.d_model, cfg.n_layers, cfg.n_layers == 1 ? "" : "s", cfg.n_heads,
             cfg.n_heads == 1 ? "" : "s", cfg.d_k(), cfg.d_ff, cfg.causal ? "causal" : "bidirectional");
  fmt::print("  parameters  {}\n", parameter_count(ckpt.params));
  fmt::print("  text        {}   ids [{}]\n", fmt::join(labels, " "), fmt::join(ids, ", "));

  step(1, fmt::format("The weights of layer {}, head {}", layer, head));
  print_labelled(fmt::format("layer {}, head {}", layer, head), P, labels, labels,
                 {.precision = 2, .max_rows = 24, .max_cols = 24}, {1, n, n});
  say(cfg.causal ? "Causal: query i sees keys 0..i, so the upper triangle is exactly 0."
                 : "Bidirectional: every query sees every key, the ones after it included.");

  step(2, "What the model predicts after each position");
  {
    // The prefix each prediction follows; long ones keep their end.
    std::vector<std::string> prefixes;
    size_t width = 0;
    for (int64_t i = 0; i < n; ++i) {
      std::string text = fmt::format("{}", fmt::join(labels.begin(), labels.begin() + i + 1, " "));
      if (text.size() > 40) text = "..." + text.substr(text.size() - 37);
      prefixes.push_back("'" + text + "'");
      width = std::max(width, prefixes.back().size());
    }
    for (int64_t i = 0; i < n; ++i) {
      const auto z = logits.row(i).array();
      const Eigen::ArrayXf p = (z - z.maxCoeff()).exp();
      Eigen::Index best = 0;
      p.maxCoeff(&best);
      const bool matches = i + 1 < n && best == ids[size_t(i + 1)];
      fmt::print("  after {:<{}} -> {:<8} p = {:.2f}{}\n", prefixes[size_t(i)], width, ckpt.tokens[size_t(best)],
                 p(best) / p.sum(), matches ? "   (the text's next token)" : "");
    }
  }
  if (!cfg.causal)
    say("This model is bidirectional: position i also reads the tokens after it, so where the text has a next "
        "token the prediction may simply be read from it (see the chapter's task 2).");

  step(3, "The pattern analyzer's numbers");
  const PatternStats st = attention_pattern(P, window);
  const PatternStats uni = attention_pattern(uniform_weights(n, cfg.causal), window);
  fmt::print("  {:<26} {:>8} {:>8} {:>9} {:>9}   {}\n", "", "entropy", "focus", "diagonal",
             fmt::format("local {}", window), "class");
  fmt::print("  {:<26} {:8.3f} {:8.3f} {:9.3f} {:9.3f}   {}\n", fmt::format("layer {}, head {}", layer, head),
             st.entropy, st.focus, st.diagonal, st.local, pattern_name(classify_pattern(st)));
  fmt::print("  {:<26} {:8.3f} {:8.3f} {:9.3f} {:9.3f}   {}\n", "uniform (learned nothing)", uni.entropy, uni.focus,
             uni.diagonal, uni.local, pattern_name(classify_pattern(uni)));
  fmt::print("  weight on the next token: {:.3f}\n", next_token_weight(P));

  step(4, "The strongest links");
  const std::vector<Link> links = strongest_links(P, 5, cfg.causal);
  if (links.empty())
    say("None to show: under the causal mask every query of this text sees only itself, or itself and nothing "
        "else it could choose, so each weight is a forced 1 (a text of one token). Give a longer --text.");
  for (const Link& k : links)
    fmt::print("  '{}' (position {}) -> '{}' (position {})  {:.2f}  {}\n", labels[size_t(k.query)], k.query,
               labels[size_t(k.key)], k.key, k.weight, link_direction(k));

  gap();
  Figures figures(cli);
  const std::string quoted = fmt::format("\"{}\"", fmt::join(labels, " "));
  figures.draw("analyze_head.png", [&](const std::string& path) {
    plot::Heatmap hm;
    hm.title = fmt::format("Layer {}, head {} on {}", layer, head, quoted);
    hm.values = P;
    hm.row_labels = labels;
    hm.col_labels = labels;
    hm.xlabel = "key (attended to)";
    hm.ylabel = "query";
    hm.vmin = 0;
    hm.vmax = 1;
    hm.cblabel = "weight";
    return plot::heatmap(path, hm);
  });
  figures.draw("analyze_layer.png", [&](const std::string& path) {
    std::vector<plot::Heatmap> panels;
    for (int64_t k = 0; k < cfg.n_heads; ++k) {
      const Matrix P = head_weights(*model, l, 0, k);
      const PatternStats s = attention_pattern(P, window);
      plot::Heatmap hm =
          plot::weights_heatmap(fmt::format("head {}: entropy {:.2f}, focus {:.2f}", k, s.entropy, s.focus), P, labels);
      hm.annotate = false;
      panels.push_back(std::move(hm));
    }
    return plot::heatmap_grid(path, fmt::format("Every head of layer {} on {}", layer, quoted), 1, int(cfg.n_heads),
                              panels, 340);
  });
  figures.draw("analyze_flow.png", [&](const std::string& path) {
    return plot::flow(path, fmt::format("Layer {}, head {}: who attends to whom", layer, head), 1, 1,
                      {{quoted, P, labels, labels}}, 0.05, 420);
  });
  figures.summary();
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("07-training-analyze", [&] { run(argc, argv); });
}
