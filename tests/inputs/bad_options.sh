#!/usr/bin/env bash
# ctest label `inputs`: every chapter program refuses bad options the same
# way: one line on stderr naming the problem, nothing on stdout (no step
# has run), exit status 2, within seconds. Each case: program, the words
# after it, and a piece of the expected message.
set -uo pipefail
bin="$1"
failed=0 ran=0

refuse() {
  local program="$1" expected="$2"
  shift 2
  local out err status lines
  out=$(mktemp) err=$(mktemp)
  timeout 20 "$bin/$program" "$@" >"$out" 2>"$err"
  status=$?
  lines=$(wc -l <"$err")
  ran=$((ran + 1))
  if [ "$status" -ne 2 ] || [ -s "$out" ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$expected" "$err"; then
    failed=$((failed + 1))
    echo "FAIL: $program $* (status $status, expected 2)"
    echo "  expected one line on stderr holding: $expected"
    echo "  stderr ($lines lines): $(head -c 400 "$err")"
    [ -s "$out" ] && echo "  stdout (must be empty): $(head -c 200 "$out")"
  fi
  rm -f "$out" "$err"
}

# The shared command line (every program).
for p in 01-qkv-projection 02-scaling 03-softmax 04-multi-head 05-causal-mask 06-dropout 07-training \
         08-efficient-attention; do
  refuse "$p" "unknown option '--bogus'" --bogus
  refuse "$p" "--seed must be a non-negative integer, got '-1'" --seed -1
  refuse "$p" "--seed is given twice" --seed 1 --seed 2
  refuse "$p" "--plots-dir is empty: give a folder" --plots-dir ""
  refuse "$p" "--plots-dir '/proc/version' is not a folder" --plots-dir /proc/version
  refuse "$p" "--no-plots takes no value, got '1'" --no-plots=1
  refuse "$p" "--help takes no value, got 'x'" --help=x
done
refuse 01-qkv-projection "--text is empty: give a value" --text ""
refuse 01-qkv-projection "--d-model must be an integer" --d-model 1.5
refuse 01-qkv-projection "--d-model must be an integer" --d-model 99999999999999999999
refuse 02-scaling "--d-k must be an integer" --d-k -3
refuse 03-softmax "--temperature must be at least 1.2e-38 in size" --temperature 4.9e-324
refuse 03-softmax "--temperature must be a number in (0, 1000000], got 'nan'" --temperature nan
refuse 04-multi-head "--d-model" --d-model 10 --n-heads 4
refuse 05-causal-mask "--lengths: 99999999999999999999 is longer than the text's 6 tokens" \
  --lengths 99999999999999999999
refuse 05-causal-mask "--lengths: 'x' is not a whole number" --lengths 1,x
refuse 06-dropout "which is 1 in float32" --p 0.99999999999
refuse 06-dropout "--p must be a number in [0, 1], got '1.5'" --p 1.5
refuse 07-training "--lr must be at least 1.2e-38 in size" --lr 1e-300 --no-plots
refuse 07-training "--d-model must be an integer in [2, 1024], got '1'" --d-model 1 --no-plots
refuse 07-training "is not divisible by 4 heads" --d-model 30 --heads 4 --no-plots
refuse 07-training "--sample 500 but there are only 500 held-out samples" --sample 500 --no-plots
refuse 07-training "--corpus is empty: give a file" --corpus "" --no-plots
refuse 07-training "--position-epochs 200 is more than --epochs 3" --position-epochs 200 --epochs 3 --no-plots
refuse 07-training "--dropout must be a number in [0, 1), got '1'" --dropout 1 --no-plots
refuse 07-training "--checkpoint-dir is empty: give a folder" --checkpoint-dir "" --no-plots
# A checkpoint's name taken by a folder or a pipe: said before training.
taken=$(mktemp -d)
mkdir "$taken/reversal.safetensors"
mkfifo "$taken/corpus-bi.safetensors"
refuse 07-training "reversal.safetensors' is a folder, so the checkpoint cannot be saved under that name" \
  --task reversal --checkpoint-dir "$taken" --no-plots
refuse 07-training "corpus-bi.safetensors' is not a regular file" --task corpus --checkpoint-dir "$taken" --no-plots
rm -rf "$taken"
refuse 07-training-analyze "--checkpoint is empty: give a file" --checkpoint "" --no-plots
refuse 07-training-bench "--torch-steps times the PyTorch twin, which runs only with --pytorch" --torch-steps 10
refuse 07-training-bench "unknown option '--plots-dir'" --plots-dir /tmp
refuse 08-efficient-attention "--block 128 is larger than --seq-len 100" --seq-len 100 --no-plots
refuse 08-efficient-attention-bench "--block 512 is larger than --min-seq-len 256" --block 512
refuse 08-efficient-attention-bench "--min-seq-len 1024 is larger than --max-seq-len 512" --min-seq-len 1024 \
  --max-seq-len 512

echo "$ran bad command lines, $failed not refused as they should be"
[ "$failed" -eq 0 ]
