#!/usr/bin/env bash
# The programs' command lines, combined at random: options that each pass
# their own range but together ask for too much (the tile bound that held
# for --seq-len but not for step 1's sweep, a run of 16 layers x 1024 wide
# that ended in std::bad_alloc after 20 s). For a bounded time it draws a
# program and 1 to 4 of its options from values at the ends of their ranges
# and in between, runs it, and fails on:
#   - an exit status other than 0 or 2 (1 after work, a crash, a signal);
#   - a refusal (2) that is not one line on stderr with nothing on stdout;
#   - a run over its budget: every program estimates its run and refuses
#     one over budget, so with a small budget (SA_BUDGET_SECONDS) an accepted
#     run must use at most twice that in CPU time, or it is killed at
#     eight times that in wall time (room for a busy machine) and reported;
#   - an output flood: more than 4000 lines or 1 MB on stdout.
# Each failure prints the command line to run again.
#
# usage: fuzz_options.sh BIN_DIR [--seconds S] [--seed N] [--budget S]
#   defaults: 150 s of runs, seed from the clock (printed), budget 20 s.
set -uo pipefail
bin="$1"; shift
seconds=150 seed=$(( $(date +%s) % 100000 )) budget=20
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift ;;
    --seed) seed="$2"; shift ;;
    --budget) budget="$2"; shift ;;
    *) echo "fuzz_options: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
RANDOM=$seed
export SA_BUDGET_SECONDS=$budget
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# A corpus at the limits: 10,000 short sentences, and a Latin-1 one.
for i in $(seq 1 10000); do echo "w$i the cat sat on mat$((i % 50))"; done >"$scratch/big.txt"
printf 'the caf\xe9 is open\n' >"$scratch/latin1.txt"
long_text="$(for i in $(seq 1 64); do printf 'w%d ' "$i"; done)"

# Values for each option: the ends of its range, a middle, and mistakes.
declare -A values=(
  [--seed]="0 1 18446744073709551615"
  [--d-model]="1 2 3 12 64 1024 4096"
  [--d-k]="1 2 7 64 512 4096"
  [--text]="a|the cat sat on the mat|$long_text|Été Élise été"
  [--samples]="2 1000 1000000 10000000"
  [--max-d-k]="4 64 8192 100"
  [--keys]="2 1024"
  [--temperature]="1e-6 0.5 1000000"
  [--n-heads]="1 2 3 7 64 4096"
  [--batch]="1 2 64 100000"
  [--lengths]="1,2 6,6,6 1,1,1,1,1,1,1,1"
  [--p]="0 0.5 0.999 1"
  [--draws]="1 1000 1000000"
  [--task]="reversal corpus both"
  [--epochs]="1 2 1000 100000"
  [--train]="1 100 1000000"
  [--test]="1 100 100000"
  [--digits]="1 2 64"
  [--vocab]="3 1000"
  [--heads]="1 2 64"
  [--layers]="1 16"
  [--position-epochs]="1 5"
  [--corpus]="$scratch/big.txt|$scratch/latin1.txt"
  [--corpus-epochs]="1 2 100000"
  [--corpus-batch]="1 100000"
  [--corpus-d-model]="1 64 1024"
  [--corpus-heads]="2 64"
  [--dropout]="0 0.5"
  [--seq-len]="16 100 1000 4096 65536"
  [--block]="1 4 8 64 4096"
  [--window]="1 64 65536"
  [--gen-tokens]="8 1024"
  [--reversal-epochs]="1 100"
  [--steps]="5 100000"
  [--warmup]="0 5 10000"
  [--max-epochs]="1 1000"
  [--min-seq-len]="16 100 8192"
  [--max-seq-len]="16 1000 32768"
  [--naive-max-seq-len]="0 16384"
  [--budget]="0 60"
  [--csv]="FLAG"
  [--top-k]="0 1 10 63 64"
  [--sample-chars]="1 80 2000 2001"
  [--quick]="FLAG"
  [--iters]="1 3 200 2000 1000000"
  [--gen-chars]="1 300 100000"
  [--n-layers]="1 4 64"
)
declare -A options=(
  [01-qkv-projection]="--seed --d-model --d-k --text"
  [02-scaling]="--seed --d-model --d-k --samples --max-d-k --keys"
  [03-softmax]="--seed --d-model --d-k --temperature --samples --text"
  [04-multi-head]="--seed --d-model --n-heads --batch --text"
  [05-causal-mask]="--seed --lengths --n-heads --d-model"
  [06-dropout]="--seed --p --draws"
  [07-training]="--task --epochs --batch --train --test --digits --vocab --d-model --heads --layers --position-epochs --corpus --corpus-epochs --corpus-batch --corpus-d-model --corpus-heads --dropout"
  [07-training-bench]="--steps --epochs --max-epochs"
  [08-efficient-attention]="--seq-len --d-k --block --window --gen-tokens --reversal-epochs"
  [08-efficient-attention-bench]="--d-k --min-seq-len --max-seq-len --naive-max-seq-len --block --budget --csv"
  [09-gpt-bench]="--steps --warmup --batch --seq-len --d-model --n-heads --n-layers --gen-chars"
  [09-gpt]="--seed --temperature --top-k --sample-chars --quick --iters --gen-chars --n-layers --d-model --n-heads --seq-len --batch"
)
programs=("${!options[@]}")

pick() {  # one word of a list (split on '|' when it holds one, else on spaces)
  local list="$1" words
  if [[ "$list" == *"|"* ]]; then IFS='|' read -r -a words <<<"$list"; else read -r -a words <<<"$list"; fi
  printf '%s' "${words[$((RANDOM % ${#words[@]}))]}"
}

ran=0 failed=0 refused=0 began=$SECONDS
echo "fuzz_options: seed $seed, budget SA_BUDGET_SECONDS=$budget, $seconds s of runs"
while [ $((SECONDS - began)) -lt "$seconds" ]; do
  program=${programs[$((RANDOM % ${#programs[@]}))]}
  read -r -a flags <<<"${options[$program]}"
  args=()
  case "$program" in *bench) ;; *) args+=(--no-plots) ;; esac
  # (never over the checkpoints a reader trained, in build/checkpoints/)
  [ "$program" != 07-training ] || args+=(--checkpoint-dir "$scratch/checkpoints")
  [ "$program" != 09-gpt ] || args+=(--checkpoint "$scratch/09-gpt.safetensors")  # (not the reader's 3-minute model)
  n=$((1 + RANDOM % 4))
  declare -A used=()
  for _ in $(seq 1 "$n"); do
    flag=${flags[$((RANDOM % ${#flags[@]}))]}
    [ -z "${used[$flag]:-}" ] || continue
    used[$flag]=1
    value=$(pick "${values[$flag]}")
    if [ "$value" = FLAG ]; then args+=("$flag"); else args+=("$flag" "$value"); fi
  done
  unset used
  ran=$((ran + 1))
  shown="$program$(printf ' %q' "${args[@]}")"
  t0=$(date +%s.%N)
  TIMEFORMAT='%U %S'
  { time timeout -k 5 $((8 * budget)) "$bin/$program" "${args[@]}" >"$scratch/out" 2>"$scratch/err"; } 2>"$scratch/time"
  status=$?
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  cpu=$(awk '{ print $1 + $2 }' "$scratch/time")
  lines=$(wc -l <"$scratch/out") bytes=$(wc -c <"$scratch/out") errs=$(wc -l <"$scratch/err")
  problem=""
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    problem="still running after $((8 * budget)) s (a hang, or an estimate far below the work)"
  elif [ "$status" -eq 2 ]; then
    refused=$((refused + 1))
    [ "$errs" -eq 1 ] && [ "$bytes" -eq 0 ] || problem="refused (2) with $errs lines on stderr and $bytes bytes on stdout"
  elif [ "$status" -ne 0 ]; then
    problem="exit status $status: $(head -c 300 "$scratch/err")"
  elif awk -v c="$cpu" -v b="$budget" 'BEGIN { exit !(c > 2 * b) }'; then
    problem="ran ${cpu} s of CPU, over twice its budget of $budget s (the estimate is too low)"
  elif [ "$lines" -gt 4000 ] || [ "$bytes" -gt 1000000 ]; then
    problem="printed $lines lines, $bytes bytes"
  fi
  if [ -n "$problem" ]; then
    failed=$((failed + 1))
    echo "FAIL: SA_BUDGET_SECONDS=$budget $shown"
    echo "  $problem ($wall s wall, $cpu s CPU)"
  fi
done
echo "fuzz_options: $ran command lines ($refused refused), $failed failed (seed $seed)"
[ "$failed" -eq 0 ]
