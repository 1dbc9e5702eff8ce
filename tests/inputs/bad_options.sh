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
         08-efficient-attention 09-gpt; do
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
refuse 05-causal-mask "--lengths: -99999999999999999999 is negative; a sequence has 0 or more tokens" \
  --lengths 2,-99999999999999999999
refuse 05-causal-mask "--lengths: 2 is longer than the text's 1 token, the length" --text hi --lengths 2
refuse 06-dropout "--p '0.99999999999' is 1 in float32, the precision the programs compute in" --p 0.99999999999
refuse 06-dropout "--p must be a number in [0, 1], got '1.5'" --p 1.5
refuse 07-training "--lr must be at least 1.2e-38 in size" --lr 1e-300 --no-plots
refuse 07-training "--d-model must be an integer in [2, 1024], got '1'" --d-model 1 --no-plots
refuse 07-training "is not divisible by 4 heads" --d-model 30 --heads 4 --no-plots
refuse 07-training "--sample 500 but there are only 500 held-out samples" --sample 500 --no-plots
refuse 07-training "--corpus is empty: give a file" --corpus "" --no-plots
refuse 07-training "--position-epochs 200 is more than --epochs 3" --position-epochs 200 --epochs 3 --no-plots
refuse 07-training "--dropout must be a number in [0, 1), got '1'" --dropout 1 --no-plots
refuse 07-training "--checkpoint-dir is empty: give a folder" --checkpoint-dir "" --no-plots
# Chapter 9: --top-k is bounded by the text's 63 characters; a damaged
# kjv.txt (here: the real one with a line added, or a file of the right size
# with one byte changed) is refused before any step prints.
refuse 09-gpt "--top-k must be an integer in [1, 63], got '64'" --top-k 64
refuse 09-gpt "--temperature must be a number in [0.001, 100], got '0'" --temperature 0
refuse 09-gpt "--data-dir is empty: give a folder" --data-dir ""
# The GPT's options: a width the heads do not divide, a prompt the
# vocabulary cannot encode, a run far over the budget (estimated from the
# options, before the text is read).
refuse 09-gpt "d_model 128 is not divisible by 3 heads" --n-heads 3 --no-plots
refuse 09-gpt "--prompt: character 'X' at position 0 is not in the vocabulary of train.txt" --prompt "Xerxes" --no-plots
refuse 09-gpt "--iters 100000 --batch 12 --seq-len 64 --d-model 128 --n-heads 4 --n-layers 4 --eval-interval 200 --eval-iters 20 --gen-chars 300 would take about" \
  --iters 100000 --no-plots
refuse 09-gpt "--prompt is empty: give at least one character of the training text" --prompt ""
# A model whose checkpoint would pass the 1 GiB its readers take: refused
# before the training, even with --i-know-it-is-big (it trained, then its
# save failed, exit 2 after the work). One under it still needs 7 GB to be
# saved and read back (the training alone, 1.4): over the memory budget.
refuse 09-gpt "--seq-len 16 --d-model 1024 --n-layers 8 make a model of 100819968 parameters, whose checkpoint" \
  --iters 1 --batch 1 --seq-len 16 --d-model 1024 --n-layers 8 --i-know-it-is-big --no-plots
refuse 09-gpt "--iters 1 --batch 1 --seq-len 16 --d-model 1024 --n-heads 4 --n-layers 7 --eval-interval 200 --eval-iters 1 --gen-chars 1 would need about" \
  --iters 1 --batch 1 --seq-len 16 --d-model 1024 --n-layers 7 --eval-iters 1 --gen-chars 1 --no-plots
# Heads and layers cost beyond their operations (a head's softmax and copies
# do not shrink with its width): 200000 steps of 64 layers on one character
# (20-30 min) and 128 heads of width 1 in 8 layers (about 20 min) were
# estimated at 3 and 9 min.
refuse 09-gpt "--iters 200000 --batch 64 --seq-len 1 --d-model 8 --n-heads 1 --n-layers 64 --eval-interval 200 --eval-iters 1 --gen-chars 300 would take about" \
  --iters 200000 --batch 64 --seq-len 1 --d-model 8 --n-heads 1 --n-layers 64 --eval-iters 1 --no-plots
refuse 09-gpt "--n-heads 128 --n-layers 8 --eval-interval 200 --eval-iters 20 --gen-chars 300 would take about" --n-heads 128 --n-layers 8 --no-plots
# The options that pass it are named, whichever they are: here the
# characters generated at the end (step 11), and the validation losses.
refuse 09-gpt "--eval-interval 200 --eval-iters 1 --gen-chars 100000 would take about" --seq-len 1024 --d-model 512 \
  --n-heads 8 --n-layers 8 --iters 1 --batch 1 --eval-iters 1 --gen-chars 100000 --no-plots
refuse 09-gpt "--eval-interval 1 --eval-iters 10000 --gen-chars 300 would take about" --quick --eval-interval 1 \
  --eval-iters 10000 --no-plots
refuse 09-gpt-bench "--steps 5000 --warmup 5 --batch 2 --seq-len 512 --d-model 64 --n-heads 64 --n-layers 2 --gen-chars 256 would take about" \
  --steps 5000 --batch 2 --seq-len 512 --d-model 64 --n-heads 64 --n-layers 2
ch9_data=$(mktemp -d)
printf 'Ge1:1 not the text\n' >"$ch9_data/kjv.txt"
refuse 09-gpt "has 19 bytes, expected 4137850: it is damaged (delete it" --data-dir "$ch9_data" --no-plots
head -c 4137850 /dev/zero >"$ch9_data/kjv.txt"
refuse 09-gpt "has SHA-256 5035318e0639e49c..., expected b5c4940bcfeee072...: it is damaged" --data-dir "$ch9_data" --no-plots
# One far larger is refused by its size, unread (a sparse kjv.txt of 20 GB
# was read whole until the memory ran out): here under a 1 GB memory limit.
truncate -s 20G "$ch9_data/kjv.txt"
before=$failed
(ulimit -v 1000000; refuse 09-gpt "kjv.txt has 21474836480 bytes, expected 4137850: it is damaged" \
  --data-dir "$ch9_data" --no-plots; [ "$failed" -eq "$before" ]) || failed=$((failed + 1))
ran=$((ran + 1))
rm -rf "$ch9_data"
# Chapter 9's checkpoint: a name a folder takes, an empty name; --resume from
# a file that is missing or no checkpoint at all. Said before any work.
ch9_ckpt=$(mktemp -d)
mkdir "$ch9_ckpt/taken.safetensors"
refuse 09-gpt "--checkpoint: '$ch9_ckpt/taken.safetensors' is a folder, so the checkpoint cannot be saved" \
  --checkpoint "$ch9_ckpt/taken.safetensors" --no-plots
refuse 09-gpt "--checkpoint is empty: give a file" --checkpoint ""
# A name that ends in a folder, a folder that is a file, one that takes no
# files: each failed only at the save, exit 1 after the training.
refuse 09-gpt "--checkpoint: '$ch9_ckpt/new/' names a folder, not a file" --checkpoint "$ch9_ckpt/new/" --no-plots
printf 'x' >"$ch9_ckpt/file"
refuse 09-gpt "--checkpoint '$ch9_ckpt/file/x.safetensors': its folder '$ch9_ckpt/file' is not a folder" \
  --checkpoint "$ch9_ckpt/file/x.safetensors" --no-plots
refuse 09-gpt "--checkpoint '/proc/x.safetensors': its folder '/proc' is not writable" --checkpoint /proc/x.safetensors --no-plots
# A wide model's cost is more than its operations: AdamW's passes over every
# parameter in a step, and every weight read in a forward call. At d_model
# 2048 on one character a step took 134 ms and a generated character 10.6,
# estimated from the operations at 10 and 3.4: these took 29 to 34 s of CPU each
# where their estimates, 7 to 17 s, passed a budget of 20.
SA_BUDGET_SECONDS=20 refuse 09-gpt "--iters 200 --batch 1 --seq-len 1 --d-model 2048 --n-heads 1 --n-layers 1 --eval-interval 200 --eval-iters 1 --gen-chars 1 would take about" \
  --iters 200 --batch 1 --seq-len 1 --d-model 2048 --n-heads 1 --n-layers 1 --eval-iters 1 --gen-chars 1 \
  --checkpoint "$ch9_ckpt/wide.safetensors" --no-plots
SA_BUDGET_SECONDS=20 refuse 09-gpt-bench "--steps 200 --warmup 0 --batch 1 --seq-len 1 --d-model 2048 --n-heads 1 --n-layers 1 --gen-chars 1 would take about" \
  --steps 200 --warmup 0 --batch 1 --seq-len 1 --d-model 2048 --n-heads 1 --n-layers 1 --gen-chars 1
SA_BUDGET_SECONDS=20 refuse 09-gpt-bench "--steps 3 --warmup 0 --batch 1 --seq-len 1 --d-model 2048 --n-heads 1 --n-layers 1 --gen-chars 300 would take about" \
  --steps 3 --warmup 0 --batch 1 --seq-len 1 --d-model 2048 --n-heads 1 --n-layers 1 --gen-chars 300
refuse 09-gpt "none.safetensors: train first with \`./book run 9 --checkpoint" \
  --resume --checkpoint "$ch9_ckpt/none.safetensors" --no-plots
# A --quick run is made again with --quick (not the full run's minutes).
refuse 09-gpt "none.safetensors: train first with \`./book run 9 --quick --checkpoint" \
  --quick --resume --checkpoint "$ch9_ckpt/none.safetensors" --no-plots
printf 'not a checkpoint' >"$ch9_ckpt/text.safetensors"
refuse 09-gpt "checkpoint '$ch9_ckpt/text.safetensors': not a safetensors checkpoint" \
  --resume --checkpoint "$ch9_ckpt/text.safetensors" --no-plots
# ./book generate (09-gpt-generate): from a tiny model trained one iteration
# here (a few seconds), every refusal the issue of bad input names.
"$bin/09-gpt" --quick --iters 1 --eval-iters 1 --d-model 8 --n-heads 2 --n-layers 1 --gen-chars 1 --no-plots \
  --checkpoint "$ch9_ckpt/tiny.safetensors" >/dev/null 2>&1 || echo "FAIL: the tiny chapter 9 model was not saved"
tiny=(--checkpoint "$ch9_ckpt/tiny.safetensors")
# --resume continues the first run: its batch, lr and dropout, given
# otherwise, are refused (the batches it draws, the schedule's peak).
refuse 09-gpt "trained with batches of 12, but --batch 3 was given" --resume "${tiny[@]}" --iters 2 --batch 3 --no-plots
refuse 09-gpt "trained with --lr 0.001, but --lr 0.01 was given" --resume "${tiny[@]}" --iters 2 --lr 0.01 --no-plots
refuse 09-gpt-generate "--prompt is empty: give at least one character of the model's vocabulary" "${tiny[@]}" --prompt ""
refuse 09-gpt-generate "--prompt: character 'é' (U+00E9) at position 3 is not in the model's vocabulary of 63" \
  "${tiny[@]}" --prompt "café"
refuse 09-gpt-generate "--temperature must be a number in [0.001, 100], got '0'" "${tiny[@]}" --temperature 0
refuse 09-gpt-generate "--temperature must be a number in [0.001, 100], got '-1'" "${tiny[@]}" --temperature -1
# (a temperature near float's smallest made every logit / T +inf, refused by
# softmax halfway through the run)
refuse 09-gpt-generate "--temperature must be a number in [0.001, 100], got '2e-38'" "${tiny[@]}" --temperature 2e-38
# The checkpoint's model sets the cost of generating: estimated once it is
# read, before the first character (the budget shrunk to 0.1 s for this
# tiny model, which writes 100000 characters in 0.25 s).
SA_BUDGET_SECONDS=0.1 refuse 09-gpt-generate \
  "--tokens 100000 with the checkpoint's model (1 layer, 2 heads, d_model 8, seq_len 64) would take about" \
  "${tiny[@]}" --tokens 100000
refuse 09-gpt-generate "--top-k must be an integer from 1 to the model's vocabulary size, got '0'" "${tiny[@]}" --top-k 0
refuse 09-gpt-generate "--top-k 64 is above the model's vocabulary of 63 characters" "${tiny[@]}" --top-k 64
refuse 09-gpt-generate "--tokens must be an integer in [1, 100000], got '0'" "${tiny[@]}" --tokens 0
# (Paths are shown relative to the working folder when inside it, as CI's TMPDIR is.)
refuse 09-gpt-generate "none.safetensors: no such file" --checkpoint "$ch9_ckpt/none.safetensors"
refuse 09-gpt-generate "checkpoint '$ch9_ckpt/text.safetensors': not a safetensors checkpoint" \
  --checkpoint "$ch9_ckpt/text.safetensors"
rm -rf "$ch9_ckpt"
# Paths the system cannot look at: a loop of symbolic links, names too long
# for a folder entry. Each was taken for a folder still to create (and
# failed at the save, exit 1 after the training), or ended in an exception
# (exit 1).
looped=$(mktemp -d)
ln -s loop-b "$looped/loop-a"
ln -s loop-a "$looped/loop-b"
refuse 09-gpt "--checkpoint: '$looped/loop-a/x.safetensors': Too many levels of symbolic links" \
  --checkpoint "$looped/loop-a/x.safetensors" --no-plots
refuse 09-gpt "--checkpoint: the file name 'nnnn" --checkpoint "$looped/$(printf 'n%.0s' $(seq 1 240))" --no-plots
refuse 09-gpt "--data-dir '$looped/loop-a': Too many levels of symbolic links" --data-dir "$looped/loop-a" --no-plots
refuse 09-gpt-generate "'$looped/loop-a': cannot look at it: Too many levels of symbolic links" \
  --checkpoint "$looped/loop-a"
refuse 07-training-analyze "'$looped/loop-a': cannot look at it: Too many levels" --checkpoint "$looped/loop-a" \
  --no-plots
refuse 07-training "corpus '$looped/loop-a': Too many levels of symbolic links" --task corpus \
  --corpus "$looped/loop-a" --no-plots
refuse 07-training "--checkpoint-dir '$looped/loop-a': Too many levels" --checkpoint-dir "$looped/loop-a" --no-plots
refuse 01-qkv-projection "--plots-dir '$looped/loop-a/figures': Too many levels of symbolic links" \
  --plots-dir "$looped/loop-a/figures"
refuse 01-qkv-projection "File name too long" --plots-dir "$looped/$(printf 'x%.0s' $(seq 1 300))/figures"
rm -rf "$looped"
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
# --pytorch where /usr/bin/python3 has no torch (a torch module that fails to
# import, first on PYTHONPATH): refused before any work, by every benchmark.
# Chapter 7's ran its minute of steps and epochs first, then said the twin
# could not be timed, with exit status 0.
no_torch=$(mktemp -d)
mkdir "$no_torch/torch"
echo 'raise ModuleNotFoundError("No module named '"'torch'"'")' >"$no_torch/torch/__init__.py"
# (Where there is no /usr/bin/python3 at all, as in CI's Debian 13 root,
# the refusal says that instead.)
without_torch=", which cannot import it here"
[ -x /usr/bin/python3 ] || without_torch="; there is no /usr/bin/python3 here"
for p in 07-training-bench 08-efficient-attention-bench 09-gpt-bench; do
  PYTHONPATH="$no_torch" refuse "$p" "--pytorch needs /usr/bin/python3 with torch$without_torch" --pytorch
done
rm -rf "$no_torch"
# On the reference BLAS the PyTorch peers take 5 to 12 times as long as on
# OpenBLAS: each benchmark asks which BLAS torch will call before it starts,
# and estimates the peer on it. These three, estimated at 2 to 4 min, would
# have taken 10 to 22. Skipped without torch or Debian's reference BLAS.
reference_blas=/usr/lib/x86_64-linux-gnu/blas
if [ -e "$reference_blas/libblas.so.3" ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  LD_LIBRARY_PATH="$reference_blas" refuse 07-training-bench \
    "--torch-steps 10000 with PyTorch on the reference BLAS would take about" --pytorch --torch-steps 10000
  LD_LIBRARY_PATH="$reference_blas" refuse 08-efficient-attention-bench \
    "--pytorch with PyTorch on the reference BLAS would take about" --pytorch --d-k 1024 --min-seq-len 8192 \
    --max-seq-len 8192 --budget 0
  LD_LIBRARY_PATH="$reference_blas" refuse 09-gpt-bench \
    "--torch-steps 1000 --rounds 1 with PyTorch on the reference BLAS would take about" --pytorch --rounds 1 \
    --torch-steps 1000
else
  echo "skipped: the PyTorch peers on the reference BLAS (no torch or no $reference_blas)"
fi
refuse 09-gpt-bench "--steps must be an integer in [3, 100000], got '0'" --steps 0
refuse 09-gpt-bench "--steps must be an integer in [3, 100000], got 'abc'" --steps abc
refuse 09-gpt-bench "--warmup must be an integer in [0, 10000], got '-1'" --warmup -1
refuse 09-gpt-bench "d_model 128 is not divisible by 3 heads" --n-heads 3
refuse 09-gpt-bench "--torch-steps times the PyTorch twin, which runs only with --pytorch" --torch-steps 10
refuse 09-gpt-bench "--rounds times the PyTorch twin, which runs only with --pytorch" --rounds 5
refuse 09-gpt-bench "--rounds must be an integer in [1, 20], got '0'" --pytorch --rounds 0
refuse 09-gpt-bench "--pytorch times the twin's default model, so --d-model cannot be changed" --pytorch --d-model 64
refuse 09-gpt-bench "unknown option '--no-plots'" --no-plots
# (a tile larger than the sequence when asked for; the default one shrinks)
refuse 08-efficient-attention "--block 128 is larger than --seq-len 100" --seq-len 100 --block 128 --no-plots
refuse 08-efficient-attention-bench "--block 512 is larger than --min-seq-len 256" --block 512
refuse 08-efficient-attention-bench "--min-seq-len 1024 is larger than --max-seq-len 512" --min-seq-len 1024 \
  --max-seq-len 512

# Limits that hold one by one but not together: the whole run is estimated
# before it starts, and a run over the budget (10 min on one core, 4 GiB)
# is refused naming its options, unless --i-know-it-is-big.
refuse 08-efficient-attention "--block must be an integer in [8, 4096], got '4'" --seq-len 16 --block 4 --no-plots
refuse 08-efficient-attention "--block 8 cuts seq_len 65536 into 8192 x 8192 tiles; at most 1048576 are allowed" \
  --seq-len 65536 --block 8 --no-plots
refuse 08-efficient-attention "on one core; the budget of a run is 10 min (--i-know-it-is-big runs it anyway)" \
  --seq-len 65536 --no-plots
refuse 08-efficient-attention "--gen-tokens 1024 --reversal-epochs 100 would take about" \
  --seq-len 32768 --d-k 256 --gen-tokens 1024 --reversal-epochs 100 --no-plots
refuse 02-scaling "--samples 2 --max-d-k 8192 --keys 1024 would need about" --keys 1024 --max-d-k 8192 --samples 2 \
  --no-plots
# Chapter 4's last step holds (batch, n_heads, seq_len, seq_len) weights:
# 64 sequences of 64 words in 4096 heads peaked at 5.5 GB, estimated from
# --d-model alone at 390 MB.
words64="$(for i in $(seq 1 64); do printf 'w%d ' "$i"; done)"
refuse 04-multi-head "--d-model 4096 --n-heads 4096 --batch 64 over 64 words would need about" --d-model 4096 \
  --n-heads 4096 --batch 64 --text "$words64" --no-plots
# (about 4 min: within the budget of 10, but not within a test's budget of 1)
SA_BUDGET_SECONDS=60 refuse 03-softmax "--samples 1000000 would take about" --samples 1000000 --no-plots
refuse 07-training "would need about" --task reversal --d-model 1024 --batch 100000 --train 1000000 --digits 64 \
  --heads 1 --layers 16 --no-plots
refuse 07-training "--epochs 100000" --task reversal --epochs 100000 --no-plots
refuse 07-training "--corpus-epochs 100000" --task corpus --corpus-epochs 100000 --no-plots
refuse 07-training "--text has no words; give at least two" --task corpus --text "   " --no-plots
refuse 01-qkv-projection "--text: byte 4 (0xff) is not UTF-8" --text $'the \xff cat' --no-plots
# An option of the task that does not run would be ignored: refused.
refuse 07-training "--corpus-epochs is an option of the corpus task, which --task reversal does not run" \
  --task reversal --corpus-epochs 3 --no-plots
refuse 07-training "--text is an option of the corpus task, which --task reversal does not run" \
  --task reversal --text "the cat" --no-plots
refuse 07-training "--digits is an option of the reversal task, which --task corpus does not run" \
  --task corpus --digits 3 --no-plots
refuse 07-training-bench "--max-epochs 2 is below --epochs 5" --epochs 5 --max-epochs 2
refuse 07-training-bench "--steps 100000 --max-epochs 1000 would take about" --steps 100000 --max-epochs 1000
refuse 08-efficient-attention-bench "would take about" --max-seq-len 32768 --d-k 256 --budget 60
refuse 09-gpt-bench "--steps 100000 --warmup 5 --batch 12 --seq-len 64 --d-model 128 --n-heads 4 --n-layers 4 --gen-chars 256 would take about" \
  --steps 100000
# With --pytorch every round times this program's steps and the twin's
# again: 20 rounds of 1000 twin steps (about 25 min) were estimated as one.
refuse 09-gpt-bench "--gen-chars 256 --torch-steps 1000 --rounds 20 would take about" --pytorch --rounds 20 \
  --torch-steps 1000
refuse 08-efficient-attention-bench "--pytorch times PyTorch's plain attention" --pytorch --naive-max-seq-len 0 \
  --min-seq-len 8192
refuse 07-training-analyze "unknown option '--i-know-it-is-big'" --i-know-it-is-big

# A corpus file as readers have them: the encoding is checked as it is read,
# naming the file and the line, before any training.
scratch=$(mktemp -d)
printf 'the cat sat\nthe caf\xe9 is open\n' >"$scratch/latin1.txt"
refuse 07-training "corpus '$scratch/latin1.txt', line 2: byte 0xe9 at column 8 is not UTF-8" \
  --task corpus --corpus "$scratch/latin1.txt" --no-plots
printf 'the cat\x7f sat\n' >"$scratch/del.txt"
refuse 07-training "corpus '$scratch/del.txt', line 1: control character 0x7f" --task corpus --corpus "$scratch/del.txt" \
  --no-plots

# Every option is checked before a folder is made: a refused run leaves none.
refuse 04-multi-head "--n-heads" --n-heads 7 --plots-dir "$scratch/new/figures"
refuse 07-training "--corpus-d-model 30 is not divisible by --corpus-heads 4" --corpus-d-model 30 \
  --checkpoint-dir "$scratch/new/checkpoints" --plots-dir "$scratch/new/figures"
ran=$((ran + 1))
if [ -e "$scratch/new" ]; then
  failed=$((failed + 1))
  echo "FAIL: a refused run left the folder $scratch/new behind"
fi
rm -rf "$scratch"

# Every program's --help sets its descriptions in one column, after at
# least one space: '--naive-max-seq-len VALUE' ran into its description.
for program in "$bin"/*; do
  [ -x "$program" ] || continue
  ran=$((ran + 1))
  columns=$("$program" --help | sed -n 's/^\(  --[a-z0-9-]*\( VALUE\)\? \+\)[^ ].*$/\1/p' |
    awk '{print length($0)}' | sort -u)
  if [ -z "$columns" ] || [ "$(wc -l <<<"$columns")" -ne 1 ]; then
    failed=$((failed + 1))
    echo "FAIL: $(basename "$program") --help starts its descriptions at columns $(echo $columns)"
  fi
done

echo "$ran bad command lines, $failed not refused as they should be"
[ "$failed" -eq 0 ]
