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

# Chapter 2 with d_k 1: dividing by sqrt(1) makes nothing smaller.
run 02-scaling --d-k 1 --samples 2 --max-d-k 4 --no-plots
holds "Q K^T / 1. Same shape, same order of the entries in every row, the same numbers"
lacks "smaller numbers"
run 02-scaling --samples 2 --max-d-k 4 --no-plots
holds "Q K^T / 8. Same shape, same order of the entries in every row, smaller numbers."

# Chapter 3's step 8: a share of rows that rounds to 0.0% is counted.
run 03-softmax --samples 3000 --no-plots
holds "with at most 1 row in 3000 that small."
lacks "0.0% of rows"
run 03-softmax --no-plots
holds "with at most 0.1% of rows that small."

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

echo "$ran runs, $failed failed"
[ "$failed" -eq 0 ]
