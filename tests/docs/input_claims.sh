#!/usr/bin/env bash
# ctest label `docs`: sentences a program words from the numbers of its run
# must stay true for inputs other than the README's. Each case runs a
# program with short options (a second or less) and checks that a sentence
# it prints holds a piece of text (`says`) or does not (`never_says`). The
# output is read with its lines joined, so a piece may span a line break.
set -uo pipefail
bin="$1"
failed=0 ran=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# run NAME PROGRAM OPTIONS...: the output of one run, kept under NAME.
run() {
  local name="$1" program="$2"
  shift 2
  if ! timeout 120 "$bin/$program" --no-plots "$@" >"$scratch/$name.raw" 2>&1; then
    echo "FAIL: $program $* did not run:"
    head -c 400 "$scratch/$name.raw"
    failed=$((failed + 1))
  fi
  # one line, single spaces: a sentence wrapped over two lines reads as one
  tr -s ' \n' '  ' <"$scratch/$name.raw" >"$scratch/$name"
}

says() {
  ran=$((ran + 1))
  if ! grep -qF -- "$2" "$scratch/$1"; then
    failed=$((failed + 1))
    echo "FAIL: run '$1' does not say: $2"
  fi
}

never_says() {
  ran=$((ran + 1))
  if grep -qF -- "$2" "$scratch/$1"; then
    failed=$((failed + 1))
    echo "FAIL: run '$1' says what is not true for it: $2"
  fi
}

# Chapter 6, step 6: at p = 0.5 a token keeps half of its connections on
# average, which is not "most" of its context.
run p05 06-dropout --p 0.5 --draws 100
never_says p05 "every token still sees most of its context"
says p05 "At p = 0.5 a token keeps only 50% of its connections on average"
run p01 06-dropout --p 0.1 --draws 100
says p01 "every token still sees most of its context"

# Chapter 6, steps 2 and 7 at the ends: p = 0 and p = 1 draw nothing (as
# PyTorch's F.dropout), and the side of the gradient count that has no
# weights is left out, not printed as 0/0.
run p0 06-dropout --p 0 --draws 100
says p0 "At p = 0 nothing is drawn"
never_says p0 "one 64-bit random number"
never_says p0 "0/0"
run p1 06-dropout --p 1 --draws 100
says p1 "At p = 1 nothing is drawn"
never_says p1 "one 64-bit random number"
never_says p1 "0/0"
says p1 "exactly 0 where dropped: 36/36"

# Chapter 7, step 4: the weights Adam's first step moved by other than lr
# are explained by eps, not by float32 rounding at the weight's size, in the
# default model (one of them has |g| = 9.90092e-07 on an AVX-512 core: just
# above 99 eps, and its step 1.00001% short of lr).
run adam 07-training --task reversal --epochs 9 --checkpoint-dir "$scratch/checkpoints"
says adam "where eps takes 1% of the step or more"
never_says adam "as float32 rounds a step of lr at their weight's size"

# Chapter 7, step 7: a model still at chance (3 epochs on a small set) needs
# no head because it has learned nothing, not because the others cover.
run untrained 07-training --task reversal --epochs 3 --train 300 --test 20 --digits 3 --vocab 5 --d-model 8 \
  --heads 2 --layers 1 --seed 5 --checkpoint-dir "$scratch/checkpoints"
says untrained "no better than chance (33.33%)"
never_says untrained "the others cover for any one of them"
never_says adam "no better than chance"   # 100% after 9 epochs

# Chapter 7, steps 10 and 12 with --corpus-batch 1: one sentence a batch.
run batch1 07-training --task corpus --corpus-batch 1 --corpus-epochs 1 --checkpoint-dir "$scratch/checkpoints"
says batch1 "a batch of 1 such sentence, inputs"
says batch1 "batches of at most 1 sentence of one length"

# Chapter 7, step 10 with a corpus of the reader's that is all predictable:
# the causal model reaches 100%, so "no model reaches 100% here" is false.
for i in $(seq 16); do echo "the cat sat on the mat"; done >"$scratch/same.txt"
run same 07-training --task corpus --corpus "$scratch/same.txt" --corpus-epochs 2 \
  --checkpoint-dir "$scratch/checkpoints"
never_says same "no model reaches 100% here"
says same "no model reaches 100% on it, unless it cheats"
says same "16 sentences of 7 tokens with the end token"   # not "of 7 to 7 tokens"

# Chapter 7, step 14 with heads hardly trained: their entropy is within a
# percent of a uniform head's, not "0% to 0% below" it.
run untrained_heads 07-training --task corpus --corpus-epochs 1 --corpus-lr 0.00001 \
  --checkpoint-dir "$scratch/checkpoints"
says untrained_heads "the heads' entropy is less than 1% below a uniform head's"
never_says untrained_heads "0% to 0%"

echo "$ran claims checked, $failed wrong"
[ "$failed" -eq 0 ]
