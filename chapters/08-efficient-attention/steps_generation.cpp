// Chapter 8, step 6: generating text with chapter 7's causal model, from
// scratch and with a key/value cache.
#include "07-training/corpus.hpp"
#include "07-training/model.hpp"
#include "08-efficient-attention/generation.hpp"
#include "sa/measure.hpp"
#include "08-efficient-attention/steps.hpp"

#include "sa/paths.hpp"
#include "sa/plot.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sa::ch8 {

namespace {

// A causal model of the shape of chapter 7's corpus models: one block, d_model 64, 4 heads.
ModelConfig corpus_model_config(const Corpus& corpus, int64_t max_seq) {
  ModelConfig c;
  c.vocab = corpus.vocab.size();
  c.max_seq = max_seq;
  c.d_model = 64;
  c.n_heads = 4;
  c.n_layers = 1;
  c.d_ff = 4 * c.d_model;
  c.causal = true;
  return c;
}

// Chapter 7's training of the corpus model: 20 epochs, batches of at most 8
// sentences of one length, Adam lr 3e-3, attention dropout 0.1 with its
// masks from a generator of their own (seed + 1), every sentence.
void train_on_corpus(TinyTransformer& model, Generator& gen, Generator& masks, const Corpus& corpus) {
  AdamConfig cfg;
  cfg.lr = 3e-3;
  Adam adam(model.params, model.grads, cfg);
  std::vector<int64_t> all(corpus.sentences.size()), ids, targets;
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  for (int epoch = 0; epoch < 20; ++epoch)
    for (const auto& batch : corpus_batches(gen, corpus, all, 8)) {
      make_next_token_batch(corpus, batch, ids, targets);
      train_step(model, adam, ids, targets, int64_t(batch.size()), {.p = kCorpusDropout, .gen = &masks});
    }
}

// The words up to the first end token ("."), which ends a sentence.
std::string words(const Corpus& corpus, const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) {
    s += (s.empty() ? "" : " ") + corpus.vocab.word(id);
    if (corpus.vocab.word(id) == kEndToken) break;
  }
  return s;
}

// Per-token times of generating `n` tokens after a one-token prompt, both ways.
struct TokenTimes {
  std::vector<double> scratch_ms, cached_ms;
  bool identical = true;
};

TokenTimes time_generation(TinyTransformer& model, int64_t n) {
  TokenTimes t;
  std::vector<int64_t> tokens{0};
  CachedDecoder decoder(model, n);
  RowVector cached_logits;
  for (int64_t i = 0; i < n; ++i) {
    double t0 = measure::seconds_now();
    const Matrix& logits = model.forward(tokens, 1);
    const int64_t next = argmax(logits.row(logits.rows() - 1));
    model.forget_workspaces();  // (freeing is part of running from scratch)
    t.scratch_ms.push_back(1e3 * (measure::seconds_now() - t0));
    t0 = measure::seconds_now();
    cached_logits = decoder.step(tokens.back());
    t.cached_ms.push_back(1e3 * (measure::seconds_now() - t0));
    t.identical = t.identical && argmax(cached_logits) == next;
    tokens.push_back(next);
  }
  return t;
}

// The median of v[from, to).
double median_of(const std::vector<double>& v, size_t from, size_t to) {
  return measure::median(std::vector<double>(v.begin() + long(from), v.begin() + long(to)));
}

}  // namespace

void kv_cache_demo(uint64_t seed, const Options& o, Figures& figures) {
  Generator gen(seed);
  const Corpus corpus = load_corpus((source_dir() / "chapters/07-training/corpus.txt").string());
  say("A language model writes one token at a time, and each new token needs the whole text so far as input. "
      "Run from scratch, every step recomputes the keys and values of every earlier token, which a causal mask "
      "guarantees have not changed. The key/value cache keeps them: one KVCache per block and head, the new "
      "token's k and v appended (kv_append), its query attending over the rows in use (kv_attend).");
  ModelConfig cfg = corpus_model_config(corpus, corpus.max_len());
  TinyTransformer model(cfg, gen);
  const double t0 = measure::seconds_now();
  Generator masks(seed + 1);
  train_on_corpus(model, gen, masks, corpus);
  fmt::print("  a causal model of the shape of chapter 7's corpus models ({} block, d_model {}, {} heads, {} positions), "
             "trained here on all {} sentences (chapter 7 holds some out) from this program's seed, 20 epochs, "
             "attention dropout {}: {:.2f} s\n",
             cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.max_seq, corpus.sentences.size(), kCorpusDropout,
             measure::seconds_now() - t0);
  print_shape("per block and head: KVCache K, V", {cfg.max_seq, cfg.d_k()}, "(capacity, d_k), rows 0..size-1 in use");

  const std::vector<int64_t> prompt = corpus.vocab.ids({"the", "cat"});
  const int64_t new_tokens = cfg.max_seq - int64_t(prompt.size());
  const std::vector<int64_t> scratch = generate_from_scratch(model, prompt, new_tokens);
  const std::vector<int64_t> cached = generate_with_cache(model, prompt, new_tokens);
  fmt::print("  prompt \"the cat\", {} tokens more, the most likely one each time (shown up to the sentence's end):\n",
             new_tokens);
  fmt::print("    from scratch:    {}\n", words(corpus, scratch));
  fmt::print("    with the cache:  {}\n", words(corpus, cached));
  fmt::print("  the same tokens: {}\n", scratch == cached ? "yes" : "NO");

  // The cost as the text grows: the same model shape with a longer position
  // table, untrained (the cost does not depend on what the weights learned).
  const int64_t n = o.gen_tokens;
  TinyTransformer long_model(corpus_model_config(corpus, n), gen);
  const TokenTimes t = time_generation(long_model, n);
  say(fmt::format("Cost per token as the text grows: {} tokens from a one-token prompt, with an untrained model of "
                  "the same shape and {} positions (time does not depend on the weights). From scratch, the step at "
                  "length n runs every layer over all n rows (n^2 d_k in attention, n d_model^2 in the "
                  "projections); with the cache it runs one row, and only its attention reads all n keys.",
                  n, n));
  fmt::print("  {:>6}  {:>14}  {:>14}\n", "length", "from scratch", "with cache");
  std::vector<double> lengths, scratch_ms, cached_ms;
  // Lengths 8, 16, 32, ... and n itself, the last row, when it is not one of them.
  std::vector<int64_t> shown;
  for (int64_t len = 8; len <= n; len *= 2) shown.push_back(len);
  if (shown.empty() || shown.back() != n) shown.push_back(n);
  for (int64_t len : shown) {
    const size_t from = size_t(len - len / 4), to = size_t(len);  // median of the last quarter of tokens up to len
    lengths.push_back(double(len));
    scratch_ms.push_back(median_of(t.scratch_ms, from - 1, to));
    cached_ms.push_back(median_of(t.cached_ms, from - 1, to));
    fmt::print("  {:>6}  {:>14}  {:>14}\n", len, fmt::format("{:.4f} ms", scratch_ms.back()),
               fmt::format("{:.4f} ms", cached_ms.back()));
  }
  double total_scratch = 0, total_cached = 0;
  for (double v : t.scratch_ms) total_scratch += v;
  for (double v : t.cached_ms) total_cached += v;
  fmt::print("  all {} tokens: from scratch {:.4g} ms, with the cache {:.4g} ms; the same tokens: {}\n", n,
             total_scratch, total_cached, t.identical ? "yes" : "NO");
  std::vector<double> fit_len, fit_scratch, fit_cached;
  for (size_t i = 0; i < lengths.size(); ++i)
    if (lengths[i] >= 64) {
      fit_len.push_back(lengths[i]);
      fit_scratch.push_back(scratch_ms[i]);
      fit_cached.push_back(cached_ms[i]);
    }
  if (fit_len.size() >= 2)
    say(fmt::format("Fitted over lengths 64 to {}, the time per new token grows as n^{:.2f} from scratch and as "
                    "n^{:.2f} with the cache; the whole text costs the sum of them.",
                    n, fitted_exponent(fit_len, fit_scratch), fitted_exponent(fit_len, fit_cached)));

  // One length is no growth: the figure of time against length needs two.
  if (lengths.size() < 2) {
    if (figures.enabled())
      say(
          fmt::format("One length ({}) is measured, so there is no growth to draw: kv_cache.png is drawn from "
                      "--gen-tokens 9 on.",
                      n));
    return;
  }
  figures.draw("kv_cache.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("Time to generate one token against the length of the text (d_model {}, {} block)",
                          cfg.d_model, cfg.n_layers);
    p.xlabel = "tokens so far (log scale)";
    p.ylabel = "time per new token (ms, median of the last quarter; log scale)";
    p.logx = p.logy = true;
    p.series = {{"from scratch (chapter 7's forward)", lengths, scratch_ms},
                {"with the key/value cache", lengths, cached_ms}};
    return plot::lines(path, p);
  });
}

}  // namespace sa::ch8
