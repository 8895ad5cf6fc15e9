#!/bin/sh
# test-requant-tty.sh -- gguf-requant on a terminal (a pseudo-terminal made
# by script(1)): binary output to a terminal and a terminal as IN - are
# refused; progress is shown on a terminal, not with -q (and never when
# standard error is not a terminal: see test-requant.sh).

. "${top_srcdir:-.}/tests/test-requant-common.sh"
need_tools
command -v script >/dev/null 2>&1 || { echo "SKIP: script(1) not found"; exit 77; }
script -qec true /dev/null >/dev/null 2>&1 </dev/null || {
    echo "SKIP: script(1) cannot make a pseudo-terminal here"
    exit 77
}

m=$tmp/tiny.gguf
synth "$m" --size tiny --type f16 --seed 1
requant=$(cd "$top_builddir" && pwd)/gguf-requant

# on_tty NAME COMMAND: runs the shell COMMAND on a pseudo-terminal; its
# output (with the terminal's \r\n turned into \n) goes to $tmp/NAME.out.
on_tty() {
    script -qec "$2; echo \"status=\$?\"" /dev/null </dev/null 2>&1 | tr -d '\r' >"$tmp/$1.out"
}

on_tty stdout "'$requant' --from f16 --to q8_0 '$m' -"
check "stdout a terminal: refused" has "$tmp/stdout.out" "gguf-requant: (stdout): refusing to write binary data to a terminal"
check "stdout a terminal: exit 2" has "$tmp/stdout.out" "status=2"
check "stdout a terminal: no GGUF bytes" lacks "$tmp/stdout.out" "GGUF"

on_tty stdin "'$requant' --from f16 --to q8_0 - '$tmp/in.gguf'"
check "stdin a terminal: refused" has "$tmp/stdin.out" "gguf-requant: -: standard input is a terminal"
check "stdin a terminal: exit 2" has "$tmp/stdin.out" "status=2"
check "stdin a terminal: no output" absent "$tmp/in.gguf"

on_tty progress "'$requant' --from f16 --to q8_0 '$m' '$tmp/p.gguf'"
check "progress: exit 0" has "$tmp/progress.out" "status=0"
check "progress: the last tensor shown" has "$tmp/progress.out" "tensor 26/26 output_norm.weight"
check "progress: a percentage" has "$tmp/progress.out" "gguf-requant:   0%  tensor 1/26 token_embd.weight"
check "progress: the line is cleared at the end" has "$tmp/progress.out" "$(printf '\033[K')status=0"
on_tty quiet "'$requant' -q --from f16 --to q8_0 '$m' '$tmp/q.gguf'"
check "-q: no progress" [ "$(cat "$tmp/quiet.out")" = "status=0" ]
check "with and without progress: the same bytes" same "$tmp/p.gguf" "$tmp/q.gguf"

on_tty plan "'$requant' -n --from f16 --to q8_0 '$m'"
check "dry run on a terminal: the plan, no progress" [ "$(grep -c 'tensor [0-9]*/' "$tmp/plan.out")" -eq 0 ]
check "dry run on a terminal: the plan" has "$tmp/plan.out" "converted 15 of 26 tensors"
finish
