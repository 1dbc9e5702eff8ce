#!/usr/bin/env bash
# ctest label `inputs`: chapter programs run at the ends of their options'
# ranges (one token, one head, thousands of heads, ...) finish with status 0,
# draw figures of a size a viewer opens, and say what is true for that input.
# Each case: `run PROGRAM OPTIONS...`, then what its output must hold
# (`holds TEXT`) or must not hold (`lacks TEXT`).
set -uo pipefail
bin="$1"
scratch="$2/edge-runs"
failed=0 ran=0
rm -rf "$scratch"
mkdir -p "$scratch"
out="$scratch/stdout" err="$scratch/stderr"
current=""

fail() {
  failed=$((failed + 1))
  echo "FAIL: $current: $*"
}

run() {
  current="$*"
  ran=$((ran + 1))
  timeout 120 "$bin/$1" "${@:2}" >"$out" 2>"$err"
  local status=$?
  [ "$status" -eq 0 ] || fail "status $status, expected 0; stderr: $(head -c 400 "$err")"
}

# The output as one line, spaces collapsed: a sentence matches wherever the
# program wrapped it.
flat() { tr -s ' \n' '  ' <"$out"; }
holds() { flat | grep -qF -- "$1" || fail "its output lacks: $1"; }
lacks() { ! flat | grep -qF -- "$1" || fail "its output holds: $1"; }

# A PNG's width and height, from its IHDR chunk (bytes 16 to 23).
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{print $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'; }

# Chapter 1 with one number a token.
run 01-qkv-projection --d-model 1 --d-k 1 --text hello --no-plots
holds "One row of 1 number per vocabulary word"
run 01-qkv-projection --no-plots
holds "One row of 64 numbers per vocabulary word"
# No figure is drawn, so no step names one.
lacks "qkv_flow.png"
lacks "pe_similarity.png"
holds "come back in phase."

# Chapter 2 with d_k 1: dividing by sqrt(1) makes nothing smaller.
run 02-scaling --d-k 1 --samples 2 --max-d-k 4 --no-plots
holds "Q K^T / 1. Same shape, same order of the entries in every row, the same numbers"
lacks "smaller numbers"
run 02-scaling --samples 2 --max-d-k 4 --no-plots
holds "Q K^T / 8. Same shape, same order of the entries in every row, smaller numbers."
# One d_k in the experiment is not a range.
holds "experiment: d_k 4, 2 samples each"
lacks "d_k 4 ... 4"

# Chapter 3's step 8: a share of rows that rounds to 0.0% is counted.
run 03-softmax --samples 3000 --no-plots
holds "with at most 1 row in 3000 that small."
lacks "0.0% of rows"
run 03-softmax --no-plots
holds "with at most 0.1% of rows that small."

# Chapters 2 and 3 with the fewest keys or samples: "both scores", "1 row, the 6 scores".
run 02-scaling --keys 2 --samples 2 --max-d-k 4 --no-plots
holds "1/2 = 0.500 when both scores are equal"
run 03-softmax --samples 1 --no-plots
holds "For each d_k: 1 row, the 6 scores"

# Chapter 4: a table that stops at 16 heads says how many it left out.
run 04-multi-head --n-heads 64 --no-plots
holds "... (48 more heads)"
[ "$(grep -cF -- "... (48 more heads)" "$out")" -eq 3 ] || fail "steps 4, 10 and 13 should each say '... (48 more heads)'"

# Chapter 4 with one number a token, one head, one token and a batch of one:
# counts in the singular.
run 04-multi-head --d-model 1 --n-heads 1 --batch 1 --text solo --no-plots
holds "the view cuts each row of 1 number into one piece of 1"
holds "the view's row stride: 1 float (the seq stride above)"
holds "Every output column is a weighted sum over the one column of the one head's output"
holds "chapter 3's single attention over the one column, for comparison"
holds "Sequence 0 is the sentence, alone (--batch 1). The batch is one matrix of batch x seq = 1 row, so"
run 04-multi-head --n-heads 64 --text "a b" --no-plots
holds "Each dot product now has d_k = 1 term, so"
run 04-multi-head --no-plots
holds "Sequence 0 is the sentence, followed by 1 random N(0, 1) sequence of 6 tokens. The batch is one matrix of batch x seq = 12 rows"

# Chapter 5 over one token: the sequence of length 1 has no <pad> query.
run 05-causal-mask --text hi --lengths 1,0 --no-plots
holds "but here their outputs did not change: in a sequence of length 0 a <pad> query sees no key at all"
lacks "in a sequence of length 1 a <pad> query"
run 05-causal-mask --text "a b" --lengths 1,0 --no-plots
holds "in a sequence of length 1 a <pad> query sees one key, weighted 1 whatever it asks, and in a sequence of length 0"

# Chapter 5: the per-head figure draws the first 16 heads, whatever their
# number (4093 heads, a prime, made one row of 4093 panels gnuplot refused).
run 05-causal-mask --d-model 4093 --n-heads 4093 --plots-dir "$scratch/05"
png="$scratch/05/multihead_causal.png"
if [ -s "$png" ]; then
  read -r width height < <(png_size "$png")
  [ "$width" -le 8000 ] && [ "$height" -le 8000 ] || fail "multihead_causal.png is $width x $height pixels"
else
  fail "no multihead_causal.png"
fi

# Chapter 5 with a batch of one sequence.
run 05-causal-mask --lengths 0 --no-plots
holds "Step 7. Padding masks: a batch of 1 sequence of length 0"
run 05-causal-mask --no-plots
holds "Step 7. Padding masks: a batch of 3 sequences of lengths 6, 4, 2"
holds "its first 2 positions treated as left padding"

# Chapter 5's step 9 over two words: one position of left padding.
run 05-causal-mask --text "hi there" --no-plots
holds "its first position treated as left padding"

# Chapter 6, step 6: at p = 0.5 a token keeps half of its connections on
# average, which is not "most" of its context.
run 06-dropout --p 0.5 --draws 100 --no-plots
lacks "every token still sees most of its context"
holds "At p = 0.5 a token keeps only 50% of its connections on average"
# ...and near p = 1 a share that rounds to 0 at whole percents is still shown.
run 06-dropout --p 0.999 --draws 10 --no-plots
holds "At p = 0.999 a token keeps only 0.1% of its connections on average"
# Step 4 there: after 10 draws no weight has survived, and the RMS error is far
# below the prediction; more draws do not simply make it fall.
lacks "more --draws show it fall"
holds "at this p a weight survives once in 1/(1-p) = 1000 draws on average"
run 06-dropout --p 0.1 --draws 100 --no-plots
holds "every token still sees most of its context"

# Chapter 6, steps 2 and 7 at the ends: p = 0 and p = 1 draw nothing (as
# PyTorch's F.dropout), and the side of the gradient count that has no
# weights is left out, not printed as 0/0.
run 06-dropout --p 0 --draws 100 --no-plots
holds "At p = 0 nothing is drawn"
lacks "one 64-bit random number"
lacks "0/0"
run 06-dropout --p 1 --draws 100 --no-plots
holds "At p = 1 nothing is drawn"
lacks "one 64-bit random number"
lacks "0/0"
holds "exactly 0 where dropped: 36/36"

# Chapter 7, step 4: the weights Adam's first step moved by other than lr
# are explained by eps, not by float32 rounding at the weight's size, in the
# default model (one of them has |g| = 9.90092e-07 on an AVX-512 core: just
# above 99 eps, and its step 1.00001% short of lr). At 100% after 9 epochs,
# step 7 does not call it no better than chance.
run 07-training --task reversal --epochs 9 --checkpoint-dir "$scratch/checkpoints" --no-plots
holds "where eps takes 1% of the step or more"
lacks "as float32 rounds a step of lr at their weight's size"
lacks "no better than chance"

# Chapter 7, step 7: a model still at chance (3 epochs on a small set) needs
# no head because it has learned nothing, not because the others cover.
run 07-training --task reversal --epochs 3 --train 300 --test 20 --digits 3 --vocab 5 --d-model 8 --heads 2 \
  --layers 1 --seed 5 --checkpoint-dir "$scratch/checkpoints" --no-plots
holds "no better than chance (33.33%)"
lacks "the others cover for any one of them"

# Chapter 7 with --vocab 3: one digit value, so chance is 100% and no head
# is needed; the program says why instead of "no better than chance (100.00%)".
run 07-training --task reversal --epochs 1 --train 50 --test 5 --digits 1 --vocab 3 --d-model 2 --heads 1 \
  --layers 1 --position-epochs 1 --checkpoint-dir "$scratch/checkpoints" --no-plots
holds "(chance: 100.00%, one digit value to write)"
holds "with one digit value to write the task needs no head"
lacks "no better than chance (100.00%)"

# Chapter 7, step 2 with one head a block: "1 head", not "1 heads".
run 07-training --task reversal --epochs 1 --train 8 --test 4 --heads 1 --position-epochs 1 \
  --checkpoint-dir "$scratch/checkpoints" --no-plots
holds "causal, 1 head of d_k 32"
lacks "1 heads"

# Chapter 7, steps 10 and 12 with --corpus-batch 1: one sentence a batch.
run 07-training --task corpus --corpus-batch 1 --corpus-epochs 1 --checkpoint-dir "$scratch/checkpoints" --no-plots
holds "a batch of 1 such sentence, inputs"
holds "batches of at most 1 sentence of one length"

# Chapter 7, step 10 with a corpus of the reader's that is all predictable:
# the causal model reaches 100%, so "no model reaches 100% here" is false;
# and its sentences all have 7 tokens, not "7 to 7".
for i in $(seq 16); do echo "the cat sat on the mat"; done >"$scratch/same.txt"
run 07-training --task corpus --corpus "$scratch/same.txt" --corpus-epochs 2 \
  --checkpoint-dir "$scratch/checkpoints" --no-plots
lacks "no model reaches 100% here"
holds "no model reaches 100% on it, unless it cheats"
holds "16 sentences of 7 tokens with the end token"

# Chapter 7, step 14 with heads hardly trained: their entropy is within a
# percent of a uniform head's, not "0% to 0% below" it.
run 07-training --task corpus --corpus-epochs 1 --corpus-lr 0.00001 --checkpoint-dir "$scratch/checkpoints" \
  --no-plots
holds "the heads' entropy is less than 1% below a uniform head's"
lacks "0% to 0%"
# Their tallest bars and focus moved by less than the digits printed: no bar
# "stands above" an untrained one that prints alike, no focus "rose" by +0.0%.
holds "and none stands above the tallest bar of any untrained head of its model"
holds "The focus of none of the 8 heads rose."

# Figures at the ends of the options' ranges: what they draw and say, read
# from their gnuplot scripts (kept next to them with SA_PLOT_KEEP_SCRIPT).
figures="$scratch/figures"
drawn() { SA_PLOT_KEEP_SCRIPT=1 run "$@" --plots-dir "$figures"; }
script_holds() { grep -qF -- "$2" "$figures/$1.gp" || fail "$1's script lacks: $2"; }
script_lacks() { ! grep -qF -- "$2" "$figures/$1.gp" || fail "$1's script holds: $2"; }

# Chapter 1 at d_model 1: one column, one wave, not "fast waves first, slow
# waves later".
drawn 01-qkv-projection --d-model 1 --d-k 1 --text hello
script_lacks positional_waves.png "fast waves first"
script_holds positional_waves.png "The one column of the positional encoding at d_model 1"
# At d_model 4096 the encoding's heatmap draws one pair of columns in 16
# rather than 4096 columns of a fourth of a pixel.
drawn 01-qkv-projection --d-model 4096 --d-k 1 --text hello
script_holds positional_encoding.png "one (sin, cos) pair in 16 drawn"

# Chapter 5 with one token: nothing lies above the diagonal, so the triptych
# names no -inf and no zero upper triangle.
drawn 05-causal-mask --text hello
script_holds causal_triptych.png "Causal masking of one token: its only key is itself, so nothing is hidden"
script_lacks causal_triptych.png "grey: -inf"
script_lacks causal_triptych.png "upper triangle 0"

# Chapter 2 with one token: its one pair has cos 1, and the line through it
# ends there, not at cos 1.05.
drawn 02-scaling --text hello --samples 2 --max-d-k 4 --keys 2
! grep -q '^1\.05 ' "$figures/dot_product_geometry.png.gp" || fail "dot_product_geometry.png draws a line to cos 1.05"
# Chapter 2 with 2 samples a d_k: variances far from their theory (0.0039
# at d_k 64) are drawn, not cut off below 0.5.
drawn 02-scaling --samples 2 --max-d-k 1024 --keys 2
low=$(sed -n 's/^set yrange \[\([^:]*\):.*/\1/p' "$figures/variance_vs_d_k.png.gp")
awk -v low="$low" 'BEGIN { exit !(low < 0.0039) }' || fail "variance_vs_d_k.png's y axis starts at $low, above 0.0039"

# Chapters 3 and 4 with one token: the bound log 1 = 0 lies on the axis, so
# no dashed line claims to show it.
drawn 03-softmax --text hello --samples 1
script_lacks entropy.png "dashed"
drawn 04-multi-head --text hello
script_lacks head_entropy_focus.png "dashed: a uniform row, log 1"

# Chapter 7 after one epoch: the 99% goal is a line across the accuracy
# plot, not a series from the first epoch to the last (of no length here).
drawn 07-training --task reversal --epochs 1 --train 50 --test 5 --digits 1 --vocab 3 --d-model 2 --heads 1 \
  --layers 1 --checkpoint-dir "$scratch/checkpoints"
script_holds accuracy.png "set label 1 '99%'"

# Chapter 8, step 1 where the resident memory cannot be measured: some
# systems do not let a program write /proc/self/clear_refs. Simulated with a
# read-only file mounted over it, which needs a mount namespace (root);
# skipped where there is none.
run_without_clear_refs() {
  current="$* (/proc/self/clear_refs read-only)"
  ran=$((ran + 1))
  : >"$scratch/clear_refs"
  timeout 120 unshare -m sh -c 'mount --bind "$1" /proc/$$/clear_refs && mount -o remount,ro,bind /proc/$$/clear_refs &&
    shift && exec "$@"' sh "$scratch/clear_refs" "$bin/$1" "${@:2}" >"$out" 2>"$err"
  local status=$?
  [ "$status" -eq 0 ] || fail "status $status, expected 0; stderr: $(head -c 400 "$err")"
}
if unshare -m sh -c 'mount --bind /dev/null /proc/$$/clear_refs' 2>/dev/null; then
  # The memory figure drew a measured 0 on a log axis and failed, ending the run.
  run_without_clear_refs 08-efficient-attention --seq-len 16 --gen-tokens 8 --reversal-epochs 1 \
    --plots-dir "$scratch/08"
  [ -s "$scratch/08/memory_vs_seq_len.png" ] || fail "no memory_vs_seq_len.png in $scratch/08"
  # Memory nothing measured is 'n/a', not a measured 0.
  holds "The extra memory is not measured on this system ('n/a')"
  lacks "0.0 bytes per score"
  lacks "extra memory 0.0 KiB"
  lacks "Extra memory: 0.0 KiB"
else
  echo "skipped: chapter 8 without /proc/self/clear_refs (no mount namespace here)"
fi

# Chapter 9, step 9 with a batch of one window of one character, one head.
run 09-gpt --iters 1 --batch 1 --seq-len 1 --d-model 1 --n-heads 1 --n-layers 1 --eval-iters 1 --gen-chars 1 \
  --checkpoint "$scratch/checkpoints/09-tiny.safetensors" --no-plots
holds "on a batch of 1 window of 1 + 1 characters at a random offset of train.txt"
holds "offset: "
lacks "offsets of the first two"
holds "and lse (1); 1 call"
# Its times are too short for '0.0 ms' and '0.0 s' to say anything.
lacks "0.0 ms"
lacks "0.0 s of"

# Chapter 9, step 12 with heads that moved far from even weights, but not onto
# the previous character (30 iterations at lr 1 put a head's whole weight on
# the first character of "In "): none stands out by the two measures, and
# the program does not call the weights "almost even".
run 09-gpt --iters 30 --eval-interval 30 --eval-iters 1 --seq-len 3 --d-model 3 --n-heads 3 --n-layers 2 \
  --batch 4 --lr 1 --gen-chars 1 --sample-chars 1 --checkpoint "$scratch/checkpoints/09-far.safetensors" --no-plots
holds "No head puts 1.5 times even weights' share on the previous character, but the weights are not even"
lacks "spread their weight almost evenly"
# "In " has no character after a space: no word-start head, so step 12 does
# not promise two heads.
holds "Step 12. What the trained heads read in a verse"
lacks "What two trained heads"
# The same with one head, which the sentence must not say puts 1.5 times the share.
run 09-gpt --iters 30 --eval-interval 30 --eval-iters 1 --seq-len 3 --d-model 3 --n-heads 1 --n-layers 1 \
  --batch 4 --lr 1 --gen-chars 1 --sample-chars 1 --checkpoint "$scratch/checkpoints/09-far1.safetensors" --no-plots
holds "The head does not put 1.5 times even weights' share on the previous character, but the weights are not even"

# Chapter 9, step 10 of a resumed run: a tiny model trained ITERS
# iterations, then resumed to MORE (`trained_then_resumed NAME ITERS MORE`).
trained_then_resumed() {
  local tiny=(--n-heads 2 --n-layers 1 --eval-iters 1 --gen-chars 1 --checkpoint "$scratch/checkpoints/09-$1.safetensors"
              --no-plots)
  run 09-gpt --iters "$2" --batch 2 --seq-len 8 --d-model 8 "${tiny[@]}"
  run 09-gpt --resume --iters "$3" "${tiny[@]}"
}
# A run too short for a warm-up (under 20 iterations): it is on the cosine
# with no warm-up, not past one of 0.
trained_then_resumed short 3 5
holds "at the schedule's rate: with no warm-up, on the cosine from"
lacks "warm-up of 0"
# Resumed for the last iteration of the cosine, where the rate already
# prints as min_lr: at its end, not "from 0.0001 down to 0.0001".
trained_then_resumed ended 400 401
holds "at the end of the cosine, at 0.0001"
lacks "from 0.0001 down to 0.0001"

# Chapter 9's benchmark without warm-up steps says so, not "after 0 warm-up".
run 09-gpt-bench --steps 3 --warmup 0 --gen-chars 1 --d-model 8 --n-heads 2 --n-layers 1 --batch 2 --seq-len 8
holds "over 3 steps with no warm-up"

# Chapter 8's benchmark: the first size's memory is the call's own, not also
# the pages a function's first call touches (they added about 0.3 MiB to the
# naive path's 0.5 MiB of scores and weights at T = 256, 1.6 times). Measured
# first, T = 256 must come within a quarter of T = 256 measured after T =
# 128: the call's own memory differs by the vector width (0.5 MiB with
# AVX-512, 0.75 with SSE2), the ratio does not.
naive_bytes_at_256() { awk -F, '$1 == 256 && $2 == "naive" { print $4 }' "$out"; }
run 08-efficient-attention-bench --min-seq-len 256 --max-seq-len 256 --budget 0 --csv
first=$(naive_bytes_at_256)
run 08-efficient-attention-bench --min-seq-len 128 --max-seq-len 256 --budget 0 --csv
second=$(naive_bytes_at_256)
awk -v a="$first" -v b="$second" 'BEGIN { exit !(a > 0 && b > 0 && a <= 1.25 * b) }' ||
  fail "the naive path's extra memory at T = 256 is $first bytes measured first, $second measured after T = 128"

# Chapter 8, step 8 at an n where self-attention's n^2 d is 1.4 times the
# recurrent layer's n d^2 (not '1 times'), and below n = d, where it is less.
run 08-efficient-attention --seq-len 90 --gen-tokens 8 --reversal-epochs 1 --no-plots
holds "at n = 90 it does 1.4 times the recurrent layer's work"
run 08-efficient-attention --seq-len 17 --gen-tokens 8 --reversal-epochs 1 --no-plots
holds "at n = 17 it still does only 0.27 of the recurrent layer's work; from n = 64 on it does more"

# The PyTorch peers' BLAS is the one their products call. With
# LD_LIBRARY_PATH at the reference BLAS, torch's products ran on it (20 times
# slower), but OpenBLAS's LAPACK was mapped too, and the benchmarks named
# OpenBLAS and its kernels, and printed ratios against the reference BLAS.
# Skipped without torch or without Debian's reference BLAS (libblas3).
have_torch=0
/usr/bin/python3 -c "import torch" 2>/dev/null && have_torch=1
reference_blas=/usr/lib/x86_64-linux-gnu/blas
if [ -e "$reference_blas/libblas.so.3" ] && [ "$have_torch" -eq 1 ]; then
  LD_LIBRARY_PATH="$reference_blas" run 08-efficient-attention-bench --pytorch --min-seq-len 16 --max-seq-len 16 \
    --budget 0
  holds "PyTorch ran on libblas.so.3"
  holds "(the reference BLAS)"
  lacks "(an optimised BLAS)"
  lacks "tiled forward against PyTorch"
  # OpenBLAS is installed here: the advice names what else chose the
  # reference BLAS, not only the package.
  holds "see that LD_LIBRARY_PATH and update-alternatives (libblas.so.3) let torch load it"
else
  echo "skipped: the PyTorch peer on the reference BLAS (no torch or no $reference_blas)"
fi

# Chapter 8's benchmark with PyTorch cut off by --naive-max-seq-len between
# two sizes: the note names the option's value, not the last T as if it
# were the option's.
if [ "$have_torch" -eq 1 ]; then
  run 08-efficient-attention-bench --pytorch --min-seq-len 16 --max-seq-len 32 --naive-max-seq-len 20 --budget 0
  holds "ran up to T = 16, the largest T within --naive-max-seq-len 20"
else
  echo "skipped: chapter 8's benchmark with PyTorch (no torch)"
fi

# Chapter 9's benchmark with one round against the twin: no turns, no
# median of the rounds' ratios and no range "from 1.22x to 1.22x".
if [ "$have_torch" -eq 1 ]; then
  run 09-gpt-bench --pytorch --rounds 1 --steps 3 --torch-steps 3 --warmup 0 --gen-chars 1
  holds "one round, after this program's steps"
  lacks "in turns with this program"
  lacks "rounds' ratios"
  lacks "rounds from"
  lacks "in the last round"
else
  echo "skipped: chapter 9's benchmark against the twin (no torch)"
fi

echo "$ran runs, $failed failed"
[ "$failed" -eq 0 ]
