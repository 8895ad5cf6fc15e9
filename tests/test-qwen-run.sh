#!/bin/sh
# test-qwen-run.sh -- qwen-run on synthetic models (tests/gguf-synth):
# --tokenize against the tokenizer, the chat template against the rendered
# ChatML text, --logits against the forward pass (exactly) and the float64
# reference (within a bound), greedy and seeded sampling reproducible, -n,
# --each-line and --json, --parallel giving the same replies in the same
# order, Qwen3's template with and without thinking and --hide-think, -t not changing any result, --ignore-eos, empty
# input, the error messages and statuses, input that cannot fit the
# context refused while it is read (/dev/zero, yes), logits that are NaN or
# infinite refused at the step they appear, --stats lines (the memory
# figures against gguf-dump --estimate: test-dump-estimate.sh), SIGINT.

test_name=test-qwen-run
. "${top_srcdir:-.}/tests/common.sh"
# Under make check-valgrind, this test's runs keep the machine's vector
# kernels (tests/tool.sh).
unset GGUF_TEST_VALGRIND_SIMD
top_builddir=$(cd "$top_builddir" && pwd) || exit 99
top_srcdir=$(cd "$top_srcdir" && pwd) || exit 99
RUN=$(tool qwen-run)
SYNTH=$top_builddir/tests/gguf-synth
CHECKER=$top_builddir/tests/qwen-run-check
EDIT=$top_builddir/tests/verify-edit
need_exec "$RUN" "$SYNTH" "$CHECKER" "$EDIT"
need_python

tiny=$tmp/tiny.gguf
small=$tmp/small-q8.gguf
"$SYNTH" -j 1 --size tiny --seed 7 -o "$tiny" 2>"$tmp/synth.err" || hard_error "gguf-synth: $(cat "$tmp/synth.err")"
"$SYNTH" -j 1 --size small --type q8_0 --seed 7 -o "$small" 2>"$tmp/synth.err" ||
    hard_error "gguf-synth: $(cat "$tmp/synth.err")"

SYS='You are Qwen, created by Alibaba Cloud. You are a helpful assistant.'
prompt='Hello, world: 12345 and some more text.'

# --- --tokenize: raw equals the tokenizer; the template equals ChatML text ---
printf '%s' "$prompt" > "$tmp/p.txt"
run 0 tok-raw "$RUN" -m "$tiny" --raw --tokenize -f "$tmp/p.txt"
"$CHECKER" tokenize "$tiny" "$tmp/p.txt" > "$tmp/tok-raw.want" || hard_error "qwen-run-check tokenize failed"
check "--raw --tokenize equals qwen_tokenize" same "$tmp/tok-raw.out" "$tmp/tok-raw.want"

printf '<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' \
    "$SYS" "$prompt" > "$tmp/chat.txt"
"$CHECKER" tokenize "$tiny" "$tmp/chat.txt" > "$tmp/tok-chat.want" || hard_error "qwen-run-check tokenize failed"
run 0 tok-chat "$RUN" -m "$tiny" --tokenize -p "$prompt"
check "chat --tokenize equals the ChatML text tokenized" same "$tmp/tok-chat.out" "$tmp/tok-chat.want"
run 0 tok-chat-raw "$RUN" -m "$tiny" --tokenize --raw --special -f "$tmp/chat.txt"
check "--raw --special on the ChatML text gives the same ids" same "$tmp/tok-chat-raw.out" "$tmp/tok-chat.want"

printf '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' \
    "$prompt" > "$tmp/chat2.txt"
"$CHECKER" tokenize "$tiny" "$tmp/chat2.txt" > "$tmp/tok-sys.want" || hard_error "qwen-run-check tokenize failed"
run 0 tok-sys "$RUN" -m "$tiny" --tokenize --system 'Be brief.' -p "$prompt"
check "--system replaces the system prompt" same "$tmp/tok-sys.out" "$tmp/tok-sys.want"

# Special-token text in user input: text unless --special.
im_end=$("$CHECKER" tokenize "$tiny" /dev/stdin <<EOF
<|im_end|>
EOF
)
im_end=${im_end%% *}
run 0 tok-nospecial "$RUN" -m "$tiny" --raw --tokenize -p '<|im_end|>'
run 0 tok-special "$RUN" -m "$tiny" --raw --tokenize --special -p '<|im_end|>'
check "--special recognises <|im_end|>" [ "$(cat "$tmp/tok-special.out")" = "$im_end" ]
check "without --special <|im_end|> is text" [ "$(wc -w < "$tmp/tok-nospecial.out")" -gt 1 ]

# -f keeps the file's bytes, a final newline included; stdin drops one.
printf 'line\n' > "$tmp/nl.txt"
run 0 tok-nl "$RUN" -m "$tiny" --raw --tokenize -f "$tmp/nl.txt"
"$CHECKER" tokenize "$tiny" "$tmp/nl.txt" > "$tmp/tok-nl.want" || hard_error "checker failed"
check "-f keeps the final newline" same "$tmp/tok-nl.out" "$tmp/tok-nl.want"
printf 'line' > "$tmp/nonl.txt"
"$CHECKER" tokenize "$tiny" "$tmp/nonl.txt" > "$tmp/tok-nonl.want" || hard_error "checker failed"
printf 'line\n' | "$RUN" -m "$tiny" --raw --tokenize > "$tmp/tok-stdin.out" 2>&1
check "standard input drops one final newline" same "$tmp/tok-stdin.out" "$tmp/tok-nonl.want"

# --- --logits: exactly the forward pass; close to the float64 reference ---
# The checker multiplies at the SIMD level qwen-run uses (its --stats line
# names it): products of Q4_0, Q5_0 and Q8_0 weights round differently at
# different levels (quant.h), and under make check-valgrind qwen-run sees
# no AVX-512 while the checker runs on the machine itself.
simd=$("$RUN" -m "$tiny" -p x -n 1 --stats 2>&1 >/dev/null | sed -n 's/^device: cpu: .*SIMD \([a-z0-9]*\).*/\1/p')
[ -n "$simd" ] || hard_error "qwen-run --stats names no SIMD level"
for m in "$tiny" "$small"; do
    b=$(basename "$m" .gguf)
    run 0 "logits-$b" "$RUN" -m "$m" --logits 5 -p "$prompt"
    "$RUN" -m "$m" --tokenize -p "$prompt" > "$tmp/ids-$b" || hard_error "--tokenize failed"
    GGUF_SIMD=$simd "$CHECKER" logits "$m" 5 < "$tmp/ids-$b" > "$tmp/logits-$b.want" ||
        hard_error "checker logits failed"
    check "$b: --logits 5 equals the forward pass" same "$tmp/logits-$b.out" "$tmp/logits-$b.want"
    check "$b: --logits prints 5 lines" [ "$(wc -l < "$tmp/logits-$b.out")" -eq 5 ]
    "$CHECKER" ref-logits "$m" 10 < "$tmp/ids-$b" > "$tmp/ref-$b" || hard_error "checker ref-logits failed"
    # Each of our 5 ids is among the reference's 10 highest, its logit
    # within tol = 2e-2 of the largest's size of the reference's for that id,
    # and ranked where the reference ranks it unless that is a near tie (the
    # reference's logit at our rank within 2 tol): the products quantize
    # their inputs to 8 bits (3.6e-3 measured on small-q8;
    # tests/test-forward.c bounds the whole logit vector).
    check "$b: --logits agrees with the float64 reference" python3 - "$tmp/logits-$b.out" "$tmp/ref-$b" <<'EOF'
import sys
a = [l.split() for l in open(sys.argv[1])]
b = [l.split() for l in open(sys.argv[2])]
ref = {i: float(v) for i, v in b}
tol = 2e-2 * max(abs(v) for v in ref.values())
ok = len(a) == 5 and len(b) == 10
for rank, (i, v) in enumerate(a):
    ok = ok and i in ref and abs(float(v) - ref[i]) <= tol
    ok = ok and (i == b[rank][0] or abs(ref.get(i, 1e30) - float(b[rank][1])) <= 2 * tol)
if not ok: print("qwen-run:", a, "reference:", b, file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
done
check "--logits is sorted, highest first" sort -k2,2gr -c "$tmp/logits-tiny.out"

# --- greedy is the argmax and deterministic; seeds reproduce ---
run 0 greedy1 "$RUN" -m "$tiny" --temp 0 -n 12 --print-ids -p "$prompt"
run 0 greedy2 "$RUN" -m "$tiny" --temp 0 -n 12 --print-ids -p "$prompt" --seed 99
check "greedy is deterministic (any seed)" same "$tmp/greedy1.out" "$tmp/greedy2.out"
first=$(head -n 1 "$tmp/logits-tiny.out" | cut -d' ' -f1)
check "greedy's first token is the top logit" [ "$(cut -d' ' -f1 "$tmp/greedy1.out")" = "$first" ]
check "-n 12 gives 12 ids" [ "$(wc -w < "$tmp/greedy1.out")" -eq 12 ]
run 0 seed1 "$RUN" -m "$tiny" --temp 1.5 --top-k 0 --top-p 1 --min-p 0 -n 16 --print-ids --seed 5 -p "$prompt"
run 0 seed2 "$RUN" -m "$tiny" --temp 1.5 --top-k 0 --top-p 1 --min-p 0 -n 16 --print-ids --seed 5 -p "$prompt"
run 0 seed3 "$RUN" -m "$tiny" --temp 1.5 --top-k 0 --top-p 1 --min-p 0 -n 16 --print-ids --seed 6 -p "$prompt"
check "--seed reproduces" same "$tmp/seed1.out" "$tmp/seed2.out"
differ() { ! cmp -s "$1" "$2"; }
check "another seed gives other tokens" differ "$tmp/seed1.out" "$tmp/seed3.out"
run 0 topk1 "$RUN" -m "$tiny" --temp 5 --top-k 1 -n 12 --print-ids --seed 3 -p "$prompt"
check "--top-k 1 is greedy" same "$tmp/topk1.out" "$tmp/greedy1.out"
run 0 minp1 "$RUN" -m "$tiny" --temp 5 --top-k 0 --min-p 1 -n 12 --print-ids --seed 3 -p "$prompt"
check "--min-p 1 is greedy" same "$tmp/minp1.out" "$tmp/greedy1.out"
run 0 text "$RUN" -m "$tiny" --temp 0 -n 12 -p "$prompt"
check "text output is one line of reply" [ "$(wc -l < "$tmp/text.out")" -ge 1 ]
run 0 n0 "$RUN" -m "$tiny" --temp 0 -n 0 -p "$prompt"
check "-n 0 prints an empty reply" [ "$(cat "$tmp/n0.out")" = "" ]

# --- -t: the thread count changes no result, bit for bit ---
# Rows, heads and feed-forward elements are shared among the threads; 2 and 3
# split the tiny model's 64-wide rows unevenly.
for m in "$tiny" "$small"; do
    b=$(basename "$m" .gguf)
    for t in 1 2 3; do
        run 0 "logits-$b-t$t" "$RUN" -m "$m" -t "$t" --logits 5 -p "$prompt"
        check "$b: --logits 5 with -t $t equals the default's" same "$tmp/logits-$b-t$t.out" "$tmp/logits-$b.out"
        run 0 "greedy-$b-t$t" "$RUN" -m "$m" --threads="$t" --temp 0 -n 12 --print-ids -p "$prompt"
    done
    check "$b: greedy -n 12 gives 12 ids" [ "$(wc -w < "$tmp/greedy-$b-t1.out")" -eq 12 ]
    check "$b: greedy with -t 2 equals -t 1" same "$tmp/greedy-$b-t2.out" "$tmp/greedy-$b-t1.out"
    check "$b: greedy with -t 3 equals -t 1" same "$tmp/greedy-$b-t3.out" "$tmp/greedy-$b-t1.out"
done
check "tiny: greedy with -t 1 equals the default's" same "$tmp/greedy-tiny-t1.out" "$tmp/greedy1.out"

# --- --each-line and --json ---
printf 'first line\n\nthird \\ line\nno newline at the end' > "$tmp/lines.txt"
run 0 each "$RUN" -m "$tiny" --each-line --temp 0 -n 6 < "$tmp/lines.txt"
check "--each-line: one reply line per input line" [ "$(wc -l < "$tmp/each.out")" -eq 4 ]
check "--each-line: an empty line has an empty reply" [ "$(sed -n 2p "$tmp/each.out")" = "" ]
run 0 each1 "$RUN" -m "$tiny" --temp 0 -n 6 -p 'first line'
check "--each-line: the reply equals a single run's" \
    [ "$(head -n 1 "$tmp/each.out")" = "$(python3 -c 'import sys; print(open(sys.argv[1]).read()[:-1].replace("\\","\\\\").replace("\n","\\n").replace("\r","\\r"))' "$tmp/each1.out")" ]
run 0 json "$RUN" -m "$tiny" --each-line --json --temp 0.7 --seed 1 -n 6 < "$tmp/lines.txt"
check "--json: one valid object per line with the keys" python3 - "$tmp/json.out" "$tmp/lines.txt" <<'EOF'
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
assert lines[-1] == "", "no final newline"
objs = [json.loads(l) for l in lines[:-1]]
inputs = open(sys.argv[2], encoding="utf-8").read().split("\n")
assert len(objs) == len(inputs) == 4, len(objs)
for o, p in zip(objs, inputs):
    assert set(o) == {"prompt", "reply", "prompt_tokens", "reply_tokens", "prompt_seconds", "reply_seconds", "cached_tokens", "stop"}, o
    assert o["stop"] in ("eos", "length"), o["stop"]
    assert o["prompt"] == p, (o["prompt"], p)
    assert isinstance(o["reply"], str)
    assert o["reply_seconds"] >= 0 and o["prompt_seconds"] >= 0
    if p:
        assert o["prompt_tokens"] > 0 and o["reply_tokens"] <= 6
    else:
        assert o["prompt_tokens"] == 0 and o["reply_tokens"] == 0 and o["reply"] == ""
EOF

# --- Qwen3: the template without a default system turn, thinking on by
# default, --no-think's empty block, --hide-think ---
q3=$tmp/q3.gguf
"$SYNTH" -j 1 --arch qwen3 --size tiny --seed 7 -o "$q3" 2>"$tmp/synth.err" || hard_error "gguf-synth: $(cat "$tmp/synth.err")"
printf '<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' "$prompt" > "$tmp/q3-chat.txt"
"$CHECKER" tokenize "$q3" "$tmp/q3-chat.txt" > "$tmp/q3-think.want" || hard_error "qwen-run-check tokenize failed"
printf '<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n' "$prompt" > "$tmp/q3-nothink.txt"
"$CHECKER" tokenize "$q3" "$tmp/q3-nothink.txt" > "$tmp/q3-nothink.want" || hard_error "qwen-run-check tokenize failed"
printf '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' "$prompt" > "$tmp/q3-sys.txt"
"$CHECKER" tokenize "$q3" "$tmp/q3-sys.txt" > "$tmp/q3-sys.want" || hard_error "qwen-run-check tokenize failed"
run 0 q3-tok "$RUN" -m "$q3" --tokenize -p "$prompt"
check "qwen3: no system turn, thinking on (the prompt ends after 'assistant\\n')" same "$tmp/q3-tok.out" "$tmp/q3-think.want"
run 0 q3-tok-think "$RUN" -m "$q3" --think --tokenize -p "$prompt"
check "qwen3: --think is the default" same "$tmp/q3-tok-think.out" "$tmp/q3-think.want"
run 0 q3-tok-nothink "$RUN" -m "$q3" --no-think --tokenize -p "$prompt"
check "qwen3 --no-think: the prompt ends with an empty thinking block" same "$tmp/q3-tok-nothink.out" "$tmp/q3-nothink.want"
run 0 q3-tok-sys "$RUN" -m "$q3" --system 'Be brief.' --tokenize -p "$prompt"
check "qwen3 --system: a system turn" same "$tmp/q3-tok-sys.out" "$tmp/q3-sys.want"
run 0 q2-tok-nothink "$RUN" -m "$tiny" --no-think --tokenize -p "$prompt"
check "qwen2 ignores --no-think" same "$tmp/q2-tok-nothink.out" "$tmp/tok-chat.want"
run 0 q3-gen "$RUN" -m "$q3" --temp 0 -n 8 --print-ids -p "$prompt"
check "qwen3: greedy -n 8 gives 8 ids" [ "$(wc -w < "$tmp/q3-gen.out")" -eq 8 ]

# --hide-think on a reply made of <think> and </think>: the output matrix
# is zero but for their two rows, +1 and -1, and the final norm's weights
# 1, so that greedy picks one of them at each step by the sign of the
# hidden state's sum; their embeddings, -100 and +100, outweigh the rest of
# it, so that the reply alternates.  A prompt whose reply starts with
# <think> is looked for; the hidden output is then the text of the tokens
# after the first </think>.  A reply that starts with </think> is printed
# whole.
think=$("$RUN" -m "$q3" --raw --special --tokenize -p '<think>')
unthink=$("$RUN" -m "$q3" --raw --special --tokenize -p '</think>')
case $think$unthink in *[!0-9]* | '') hard_error "<think> ids: '$think' '$unthink'" ;; esac
"$EDIT" --add output.weight=f16:64x1024 --fill "output.weight@$think=1" --fill "output.weight@$unthink=-1" \
    --fill output_norm.weight=1 --fill "token_embd.weight@$think=-100" --fill "token_embd.weight@$unthink=100" \
    "$q3" "$tmp/q3-think.gguf" || hard_error "verify-edit failed"
found= other=
for p in a b c d e f g h i j k l m n o p q r s t; do
    "$RUN" -m "$tmp/q3-think.gguf" --temp 0 -n 12 --print-ids -p "$p" > "$tmp/q3-ids-$p.out" 2>/dev/null || continue
    set -- $(cat "$tmp/q3-ids-$p.out")
    if [ "${1:-}" = "$think" ] && grep -qw "$unthink" "$tmp/q3-ids-$p.out"; then
        [ -n "$found" ] || found=$p
    elif [ "${1:-}" = "$unthink" ]; then
        [ -n "$other" ] || other=$p
    fi
    [ -n "$found" ] && [ -n "$other" ] && break
done
[ -n "$found" ] && [ -n "$other" ] || hard_error "no prompt's reply starts with <think> ('$found') or </think> ('$other')"
cp "$tmp/q3-ids-$found.out" "$tmp/q3-ids.out"
run 0 q3-shown "$RUN" -m "$tmp/q3-think.gguf" --temp 0 -n 12 -p "$found"
run 0 q3-hidden "$RUN" -m "$tmp/q3-think.gguf" --temp 0 -n 12 --hide-think -p "$found"
want=$(awk -v t="$think" -v u="$unthink" '{
    out = ""; shown = ""; hid = 1
    for (i = 1; i <= NF; i++) {
        s = ($i == t) ? "<think>" : "</think>"
        shown = shown s
        if (!hid) out = out s
        if (hid && $i == u) hid = 0
    }
    print shown; print out }' "$tmp/q3-ids.out")
check "qwen3: the reply as text is its tokens' text" [ "$(cat "$tmp/q3-shown.out")" = "$(echo "$want" | sed -n 1p)" ]
check "--hide-think: the tokens after the first </think> only" [ "$(cat "$tmp/q3-hidden.out")" = "$(echo "$want" | sed -n 2p)" ]
run 0 q3-hidden-ids "$RUN" -m "$tmp/q3-think.gguf" --temp 0 -n 12 --hide-think --print-ids -p "$found"
check "--hide-think --print-ids: every id" same "$tmp/q3-hidden-ids.out" "$tmp/q3-ids.out"
run 0 q3-other-shown "$RUN" -m "$tmp/q3-think.gguf" --temp 0 -n 12 -p "$other"
run 0 q3-other-hidden "$RUN" -m "$tmp/q3-think.gguf" --temp 0 -n 12 --hide-think -p "$other"
check "--hide-think: a reply that does not start with <think> is printed whole" \
    same "$tmp/q3-other-hidden.out" "$tmp/q3-other-shown.out"
check "--hide-think: that reply is not empty" [ -s "$tmp/q3-other-hidden.out" ]

# --- --parallel: --each-line's replies, N conversations at once ---
# Lines of different lengths (an empty one among them), more lines than
# sequences, so that new lines start while others are under way; sampled
# replies end at different steps.  Every N gives the same replies, in the
# order of the lines, greedy and seeded, and a line's seeded reply is the
# one a single run with that seed gives.
for i in 1 2 3 4 5 6 7 8 9; do
    if [ "$i" -eq 4 ]; then echo; else printf 'line %s: %s\n' "$i" "$(printf '%*s' $((i * 7)) '' | tr ' ' w)"; fi
done > "$tmp/plines.txt"
for P in 1 2 5 16; do
    run 0 "par-greedy-$P" "$RUN" -m "$tiny" --each-line --parallel "$P" --temp 0 -n 7 --ignore-eos --print-ids < "$tmp/plines.txt"
    run 0 "par-seed-$P" "$RUN" -m "$tiny" --each-line --parallel "$P" --temp 1.5 --top-k 0 --seed 9 -n 12 --print-ids < "$tmp/plines.txt"
done
check "--parallel 1: one reply line per input line" [ "$(wc -l < "$tmp/par-greedy-1.out")" -eq 9 ]
check "--parallel 1: the empty line's reply is empty" [ "$(sed -n 4p "$tmp/par-greedy-1.out")" = "" ]
check "--parallel 1, greedy: -n 7 ids a line" [ "$(sed -n 1p "$tmp/par-greedy-1.out" | wc -w)" -eq 7 ]
check "seeded replies end at different lengths" [ "$(awk '{ print NF }' "$tmp/par-seed-1.out" | sort -u | wc -l)" -gt 1 ]
for P in 2 5 16; do
    check "--parallel $P, greedy: the replies of --parallel 1" same "$tmp/par-greedy-$P.out" "$tmp/par-greedy-1.out"
    check "--parallel $P, seeded: the replies of --parallel 1" same "$tmp/par-seed-$P.out" "$tmp/par-seed-1.out"
done
run 0 par-default "$RUN" -m "$tiny" --each-line --temp 0 -n 7 --ignore-eos --print-ids < "$tmp/plines.txt"
check "--each-line's default --parallel: the same replies" same "$tmp/par-default.out" "$tmp/par-greedy-1.out"
run 0 par-one "$RUN" -m "$tiny" --temp 1.5 --top-k 0 --seed 9 -n 12 --print-ids -p "$(sed -n 6p "$tmp/plines.txt")"
check "a seeded line's reply is a single run's with that seed" [ "$(cat "$tmp/par-one.out")" = "$(sed -n 6p "$tmp/par-seed-5.out")" ]
run 0 par-json "$RUN" -m "$tiny" --each-line --parallel 3 --json --temp 1.5 --seed 9 -n 12 < "$tmp/plines.txt"
run 0 par-json1 "$RUN" -m "$tiny" --each-line --parallel 1 --json --temp 1.5 --seed 9 -n 12 < "$tmp/plines.txt"
check "--parallel 3 --json: the objects of --parallel 1, in line order" python3 - "$tmp/par-json.out" "$tmp/par-json1.out" "$tmp/plines.txt" <<'EOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
b = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
lines = open(sys.argv[3], encoding="utf-8").read().split("\n")[:-1]
assert [o["prompt"] for o in a] == lines, [o["prompt"] for o in a]
for x, y in zip(a, b):
    for k in ("prompt", "reply", "prompt_tokens", "reply_tokens"):
        assert x[k] == y[k], (k, x, y)
assert len(a) == len(b) == 9
EOF
for P in 0 257 x; do
    run 2 "par-bad$P" "$RUN" -m "$tiny" --each-line --parallel "$P"
    check "--parallel $P: usage error naming it" has "$tmp/par-bad$P.err" "qwen-run: --parallel: not a number of conversations (1..256): '$P'"
done
run 2 par-noeach "$RUN" -m "$tiny" --parallel 2 -p x
check "--parallel without --each-line: usage error" has "$tmp/par-noeach.err" "qwen-run: --parallel needs --each-line"

# --- empty input; errors ---
run 0 empty "$RUN" -m "$tiny" < /dev/null
check "empty input: no output" empty "$tmp/empty.out"
run 0 empty-p "$RUN" -m "$tiny" -p ''
check "empty -p: no output" empty "$tmp/empty-p.out"

run 2 long "$RUN" -m "$tiny" -c 16 -p "$prompt"
check "prompt longer than the context: message" has "$tmp/long.err" "qwen-run: $tiny: the prompt is"
run 2 nofile "$RUN" -m "$tiny" -f "$tmp/absent.txt"
check "unreadable -f: message" has "$tmp/nofile.err" "qwen-run: $tmp/absent.txt: No such file or directory"
run 2 nomodel "$RUN" -m "$tmp/absent.gguf" -p x
check "missing model: message" has "$tmp/nomodel.err" "qwen-run: $tmp/absent.gguf: "
python3 "$top_srcdir/tests/gguflite.py" fixture "$tmp/other.gguf" || hard_error "gguflite fixture failed"
run 2 arch "$RUN" -m "$tmp/other.gguf" -p x
check "non-qwen2 model: message" has "$tmp/arch.err" "qwen-run: $tmp/other.gguf: "
check "non-qwen2 model: names the architecture" has "$tmp/arch.err" "test"
"$EDIT" --drop blk.1.ffn_up.weight "$tiny" "$tmp/drop.gguf" 2>/dev/null || hard_error "verify-edit failed"
run 2 drop "$RUN" -m "$tmp/drop.gguf" -p x
check "missing tensor: message names it" has "$tmp/drop.err" "qwen-run: $tmp/drop.gguf: "
check "missing tensor: message names it" has "$tmp/drop.err" "blk.1.ffn_up.weight"
run 2 usage "$RUN" -p x
check "no -m: usage error" has "$tmp/usage.err" "Try 'qwen-run --help'"

# The weights are used in place, mapped: the model must be a regular,
# uncompressed file (standard input too, with -m -, which then cannot carry
# the prompt).  A pipe, a FIFO and gzip are refused at once, by name.
nomap='the model must be a regular, uncompressed file, which is memory-mapped'
run 2 model-pipe sh -c 'cat "$1" | "$2" -m - -p x' sh "$tiny" "$RUN"
check "-m - on a pipe: names - and says why" has "$tmp/model-pipe.err" \
    "qwen-run: -: $nomap; this is a pipe or other stream"
check "-m - on a pipe: nothing on stdout" empty "$tmp/model-pipe.out"
mkfifo "$tmp/model.fifo" || hard_error "mkfifo failed"
cat "$tiny" > "$tmp/model.fifo" 2>/dev/null &
run 2 model-fifo "$RUN" -m "$tmp/model.fifo" -p x
wait
check "FIFO model: names it and says why" has "$tmp/model-fifo.err" \
    "qwen-run: $tmp/model.fifo: $nomap; this is a pipe or other stream"
gzip -c "$tiny" > "$tmp/tiny.gguf.gz" || hard_error "gzip failed"
run 2 model-gz "$RUN" -m "$tmp/tiny.gguf.gz" -p x
check "gzip model: names it and says why" has "$tmp/model-gz.err" \
    "qwen-run: $tmp/tiny.gguf.gz: $nomap; this is gzip-compressed (gunzip it first)"
run 2 model-gz-stdin "$RUN" -m - -p x < "$tmp/tiny.gguf.gz"
check "gzip on -m -: names - and says why" has "$tmp/model-gz-stdin.err" \
    "qwen-run: -: $nomap; this is gzip-compressed (gunzip it first)"
run 0 model-stdin "$RUN" -m - --raw --tokenize -p "$prompt" < "$tiny"
check "-m - on a regular file works" same "$tmp/model-stdin.out" "$tmp/tok-raw.out"
for a in "" "-f -" "--each-line"; do
    n=model-stdin-prompt$(echo "$a" | tr -d ' ')
    # shellcheck disable=SC2086
    run 2 "$n" "$RUN" -m - $a < "$tiny"
    check "-m - $a: the prompt cannot come from standard input" \
        has "$tmp/$n.err" "qwen-run: -m -: standard input holds the model"
done
run 2 badtemp "$RUN" -m "$tiny" --temp -1 -p x
run 2 badn "$RUN" -m "$tiny" -n x -p x
for t in 0 1025 x; do
    run 2 "badt$t" "$RUN" -m "$tiny" -t "$t" -p x
    check "-t $t: usage error naming -t" has "$tmp/badt$t.err" "qwen-run: -t: not a thread count: '$t'"
    check "-t $t: nothing on stdout" empty "$tmp/badt$t.out"
done
run 0 help "$RUN" --help
check "--help goes to stdout" has "$tmp/help.out" "Usage: qwen-run -m MODEL"
# the whole text, longer than a 4 KiB buffer: its last line, each option
check "--help whole, to its last line" has "$tmp/help.out" "than the context, NaN or infinite logits), 130 when interrupted by SIGINT."
for o in --grammar= --json-schema= --prompt-cache= --stats --tokenize --logits --logprobs --print-ids --ignore-eos; do
    check "--help lists $o" has "$tmp/help.out" "      $o"
done
run 0 version "$RUN" -V
check "--version" has "$tmp/version.out" "qwen-run (gguf-tools)"

# --- input that cannot fit the context: refused as soon as it is read ---
# Under a timeout and a memory limit: a reader without a bound would take
# 256 MiB of /dev/zero in well under a second and then fail for memory
# ("Cannot allocate memory", not the message checked).
limit_memory "$top_builddir/tests/gguf-hostile"
if command -v timeout >/dev/null 2>&1; then tmo="timeout 60"; else
    tmo=
    echo "note: no timeout(1); the endless inputs run without one" >&2
fi
# bounded NAME COMMAND...: COMMAND under the limits, stdout and stderr in
# $tmp/NAME.out and .err, exit status 2.  (One OpenMP thread: the stacks of
# one per core could take the memory limit on a large machine.)
bounded() {
    _n=$1
    shift
    run 2 "$_n" env OMP_NUM_THREADS=1 sh -c 'limit_kb=$1; shift; [ -n "$limit_kb" ] && ulimit -v "$limit_kb"; exec "$@"' \
        sh "${limit_kb:-}" $tmo "$@"
}
toolong='bytes of input cannot fit the context of 4096 tokens (no token is longer than'
bounded zero-f "$RUN" -m "$tiny" -f /dev/zero
check "-f /dev/zero: refused while read" has "$tmp/zero-f.err" "qwen-run: /dev/zero: over "
check "-f /dev/zero: the reason" has "$tmp/zero-f.err" "$toolong"
check "-f /dev/zero: nothing on stdout" empty "$tmp/zero-f.out"
yes | bounded yes-stdin "$RUN" -m "$tiny"
check "yes | qwen-run: refused while read" has "$tmp/yes-stdin.err" "qwen-run: -: over "
check "yes | qwen-run: the reason" has "$tmp/yes-stdin.err" "$toolong"
yes | bounded yes-tokenize "$RUN" -m "$tiny" --tokenize -f -
check "yes | qwen-run --tokenize -f -: refused too" has "$tmp/yes-tokenize.err" "$toolong"
bounded zero-lines "$RUN" -m "$tiny" --each-line -n 1 < /dev/zero
check "--each-line < /dev/zero: the first line refused" has "$tmp/zero-lines.err" "qwen-run: -: line 1: over "
(printf 'hi\n'; yes | tr -d '\n') | bounded yes-lines "$RUN" -m "$tiny" --each-line -n 1 --temp 0
check "--each-line: an endless second line refused" has "$tmp/yes-lines.err" "qwen-run: -: line 2: over "
check "--each-line: the first line answered" [ "$(wc -l < "$tmp/yes-lines.out")" -eq 1 ]
(printf 'hi\n'; yes | tr -d '\n') | bounded yes-lines4 "$RUN" -m "$tiny" --each-line --parallel 4 -n 1 --temp 0
check "--parallel 4: an endless second line refused" has "$tmp/yes-lines4.err" "qwen-run: -: line 2: over "
check "--parallel 4: the first line answered" [ "$(wc -l < "$tmp/yes-lines4.out")" -eq 1 ]
# The bound is the context (-c) times the longest token: the input at the
# bound is read (and then found too long in tokens), a byte more is not.
bounded c16 "$RUN" -m "$tiny" -c 16 -f /dev/zero
max=$(sed -n 's/.* over \([0-9]*\) bytes of input cannot fit the context of 16 tokens.*/\1/p' "$tmp/c16.err")
longest=$(sed -n 's/.*no token is longer than \([0-9]*\) bytes.*/\1/p' "$tmp/c16.err")
check "-c 16: the bound is 16 times the longest token ($max, $longest)" [ "${max:-0}" -eq $((16 * ${longest:-0})) ]
head -c "$max" /dev/zero | tr '\0' a > "$tmp/at-bound.txt"
printf a | cat "$tmp/at-bound.txt" - > "$tmp/past-bound.txt"
run 2 at-bound "$RUN" -m "$tiny" -c 16 --raw -f "$tmp/at-bound.txt"
check "the input at the bound is read, then too long in tokens" has "$tmp/at-bound.err" "the prompt is "
run 2 past-bound "$RUN" -m "$tiny" -c 16 --raw -f "$tmp/past-bound.txt"
check "a byte past the bound: refused while read" has "$tmp/past-bound.err" "over $max bytes of input"
printf '\n' | cat "$tmp/at-bound.txt" - | "$RUN" -m "$tiny" -c 16 --raw > /dev/null 2> "$tmp/nl-bound.err"
check "standard input: the newline it drops does not count" has "$tmp/nl-bound.err" "the prompt is "

# --- logits that are NaN or infinite: an error naming the step ---
"$EDIT" --fill output_norm.weight=nan "$tiny" "$tmp/nan.gguf" || hard_error "verify-edit failed"
"$EDIT" --fill blk.0.ffn_down.weight=inf "$tiny" "$tmp/inf.gguf" || hard_error "verify-edit failed"
for w in nan inf; do
    run 2 "$w-gen" "$RUN" -m "$tmp/$w.gguf" --temp 0 -n 5 -p "$prompt"
    check "$w weights: the prefill named" has "$tmp/$w-gen.err" \
        "qwen-run: $tmp/$w.gguf: the logits after the prompt prefill are not finite (token "
    check "$w weights: no reply" empty "$tmp/$w-gen.out"
done
run 2 nan-logits "$RUN" -m "$tmp/nan.gguf" --logits 5 -p "$prompt"
check "NaN weights, --logits: refused" has "$tmp/nan-logits.err" "after the prompt prefill are not finite"
check "NaN weights, --logits: nothing printed" empty "$tmp/nan-logits.out"
printf 'one\ntwo\n' | run 2 nan-each "$RUN" -m "$tmp/nan.gguf" --each-line --temp 0 -n 3
check "NaN weights, --each-line: stops at the first line" [ "$(count "$tmp/nan-each.err" "not finite")" -eq 1 ]
# A model whose logits are finite after the prompt, but not after the first
# generated token: an output matrix of zeros but for rows 900 (+1) and 901
# (-1), so greedy picks one of them, whose embeddings are NaN.
"$EDIT" --add output.weight=f16:64x1024 --fill output.weight@900=1 --fill output.weight@901=-1 \
    --fill token_embd.weight@900=nan --fill token_embd.weight@901=nan "$tiny" "$tmp/nan1.gguf" ||
    hard_error "verify-edit failed"
run 2 nan1 "$RUN" -m "$tmp/nan1.gguf" --raw --temp 0 -n 5 --print-ids -p a
check "NaN after a generated token: named" has "$tmp/nan1.err" \
    "qwen-run: $tmp/nan1.gguf: the logits after generated token 1 are not finite (token 0: NaN)"
check "NaN after a generated token: that token was printed" grep -Eqx '90[01]' "$tmp/nan1.out"

# --- --ignore-eos: never an end token; -n or a full context ends it ---
# On the tiny model (tied embeddings, weak layers) the top logit after an
# end token is that token, so greedy stops at once without --ignore-eos.
# The end ids: <|im_end|> (also the eos id) and <|endoftext|>.
run 0 id-endoftext "$RUN" -m "$tiny" --raw --tokenize --special -p '<|endoftext|>'
endoftext=$(cat "$tmp/id-endoftext.out")
case $im_end$endoftext in
''|*[!0-9]*) hard_error "end token ids: '$im_end' '$endoftext'" ;;
esac
# not_end FILE: no id in FILE is an end token.
not_end() { ! tr ' ' '\n' < "$1" | grep -Ex "$im_end|$endoftext" >/dev/null; }
for e in im_end endoftext; do
    run 0 "stop-$e" "$RUN" -m "$tiny" --raw --special --temp 0 -n 8 --print-ids -p "hello<|$e|>"
    eval "want=\$$e"
    check "<|$e|>: greedy stops at once at <|$e|>" [ "$(cat "$tmp/stop-$e.out")" = "$want" ]
    run 0 "noeos-$e" "$RUN" -m "$tiny" --raw --special --temp 0 -n 8 --print-ids --ignore-eos -p "hello<|$e|>"
    check "<|$e|>: --ignore-eos gives -n 8 ids" [ "$(wc -w < "$tmp/noeos-$e.out")" -eq 8 ]
    check "<|$e|>: --ignore-eos gives no end token" not_end "$tmp/noeos-$e.out"
done
# Without -n, a full context ends it: -c 16 holds the prompt and all the
# reply but its last token, which is sampled and never fed back.
"$RUN" -m "$tiny" --raw --tokenize --special -p 'hello<|im_end|>' > "$tmp/ids-eos" || hard_error "--tokenize failed"
np=$(wc -w < "$tmp/ids-eos")
run 0 ctxfull "$RUN" -m "$tiny" --raw --special --temp 0 -c 16 --print-ids --ignore-eos -p 'hello<|im_end|>'
check "--ignore-eos without -n: a full context (-c 16) ends it" [ "$(wc -w < "$tmp/ctxfull.out")" -eq $((16 - np + 1)) ]
check "--ignore-eos without -n: no end token" not_end "$tmp/ctxfull.out"
"$RUN" -m "$tiny" --tokenize -p 'Hi' > "$tmp/ids-hi" || hard_error "--tokenize failed"
c=$(($(wc -w < "$tmp/ids-hi") + 10))
run 0 ctxfull-chat "$RUN" -m "$tiny" --temp 0.8 --seed 4 -c "$c" --ignore-eos --stats -p 'Hi'
check "--ignore-eos, chat, sampled: a full context ends it" grep -Eq '^generation: 11 tokens' "$tmp/ctxfull-chat.err"

# --- --stats ---
run 0 stats "$RUN" -m "$tiny" --temp 0 -n 5 --stats -p "$prompt"
check "--stats: load line" grep -Eq '^load: [0-9]+\.[0-9]{2} s$' "$tmp/stats.err"
ntok=$(wc -w < "$tmp/ids-tiny")
check "--stats: prompt line" grep -Eq "^prompt: $ntok tokens, [0-9]+\\.[0-9] tok/s\$" "$tmp/stats.err"
check "--stats: generation line" grep -Eq '^generation: 5 tokens, [0-9]+\.[0-9] tok/s$' "$tmp/stats.err"
check "--stats: device line" grep -Eq '^device: (cpu: [0-9]+ threads?, SIMD [a-z0-9]+|cuda: .* MiB of [0-9]+ MiB in use)$' "$tmp/stats.err"
check "--stats: memory line" grep -Eq '^memory: weights [0-9]+\.[0-9]{2} MiB \(mapped(, [0-9]+\.[0-9]{2} MiB of them repacked in memory)?\), KV cache [0-9]+\.[0-9]{2} MiB \(F16\), compute [0-9]+\.[0-9]{2} MiB, logits [0-9]+\.[0-9]{2} MiB; peak RSS [0-9]+\.[0-9]{2} MiB$' "$tmp/stats.err"
check "--stats: memory bytes line" grep -Eq '^memory bytes: weights [1-9][0-9]*, kv_cache [1-9][0-9]*, compute [1-9][0-9]*, host [1-9][0-9]*, device 0, repacked [0-9]+$' "$tmp/stats.err"
check "--stats: six lines" [ "$(wc -l < "$tmp/stats.err")" -eq 6 ]

# await_output FILE PID: waits until FILE is not empty (the background
# process PID has begun its reply), PID has ended, or 60 s (sanitizer
# builds are slow) have passed.
await_output() {
    i=0
    while [ ! -s "$1" ] && [ $i -lt 600 ] && kill -0 "$2" 2> /dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
}

# --- repacked weights: the same logits and tokens as the mapped rows ---
# (the CPU backend copies the Q4_K, Q5_K, Q6_K, Q4_0, Q5_0 and Q8_0
# matrices interleaved where the SIMD level reads them so: from avx2 on;
# below it nothing is repacked).  Three mixtures: small's Q4_K_M and
# Q5_K_M (Q4_K, Q5_K, Q6_K), and tiny's Q5_0 and Q8_0 (its rows of 64 and
# 128 take no K-quant), with an output matrix of its own.
"$SYNTH" -j 1 --size small --type q4_k_m --seed 11 -o "$tmp/q4km.gguf" 2>/dev/null || hard_error "gguf-synth failed"
"$SYNTH" -j 1 --size tiny --type q4_k_m --untied --seed 11 -o "$tmp/q4km-32.gguf" 2>/dev/null ||
    hard_error "gguf-synth failed"
"$SYNTH" -j 1 --size small --type q5_k_m --seed 11 -o "$tmp/q5km.gguf" 2>/dev/null || hard_error "gguf-synth failed"
for m in q4km q4km-32 q5km; do
    run 0 repack-logits "$RUN" -m "$tmp/$m.gguf" -t 2 --raw -p "$prompt" --logits=40
    run 0 norepack-logits "$RUN" -m "$tmp/$m.gguf" -t 2 --raw -p "$prompt" --logits=40 --no-repack
    check "repacked $m: logits with the bits of --no-repack's" cmp -s "$tmp/repack-logits.out" "$tmp/norepack-logits.out"
    check "repacked $m: 40 logits" [ "$(wc -l < "$tmp/repack-logits.out")" -eq 40 ]
    run 0 repack-gen "$RUN" -m "$tmp/$m.gguf" -t 2 --temp 0 -n 24 --ignore-eos --print-ids --stats -p "$prompt"
    run 0 norepack-gen "$RUN" -m "$tmp/$m.gguf" -t 2 --temp 0 -n 24 --ignore-eos --print-ids --stats -p "$prompt" --no-repack
    check "repacked $m: the same greedy tokens" cmp -s "$tmp/repack-gen.out" "$tmp/norepack-gen.out"
    check "--no-repack $m: nothing repacked" grep -Eq '^memory bytes: .*, repacked 0$' "$tmp/norepack-gen.err"
    # batched: four conversations a step (products of four columns)
    printf '%s\n' "$prompt" "second line" "a third one" "and a fourth" > "$tmp/lines4"
    run 0 repack-batch "$RUN" -m "$tmp/$m.gguf" -t 2 --temp 0 -n 12 --ignore-eos --each-line --parallel 4 < "$tmp/lines4"
    run 0 norepack-batch "$RUN" -m "$tmp/$m.gguf" -t 2 --temp 0 -n 12 --ignore-eos --each-line --parallel 4 --no-repack < "$tmp/lines4"
    check "repacked $m: the same batched replies" cmp -s "$tmp/repack-batch.out" "$tmp/norepack-batch.out"
    if grep -Eq '^device: cpu: .*SIMD (avx2|avx512|amx)$' "$tmp/repack-gen.err"; then
        check "repacked $m from avx2: its weights" grep -Eq '^memory bytes: .*, repacked [1-9][0-9]*$' "$tmp/repack-gen.err"
        check "repacked $m from avx2: said on the memory line" grep -q 'MiB of them repacked in memory' "$tmp/repack-gen.err"
    else
        check "repacked $m below avx2: none" \
            grep -Eq '^memory bytes: .*, repacked 0$' "$tmp/repack-gen.err"
    fi
done

# --- SIGINT stops generation, the stats are still printed ---
"$SYNTH" -j 1 --size small --seed 7 -o "$tmp/small.gguf" 2>/dev/null || hard_error "gguf-synth failed"
# interrupt NAME IN COMMAND...: runs COMMAND with standard input IN, its
# output in $tmp/NAME.out and .err, sends SIGINT once the reply has begun,
# and checks that it exits 130 with the stats printed.
interrupt() {
    _n=$1 _in=$2
    shift 2
    "$@" < "$_in" > "$tmp/$_n.out" 2> "$tmp/$_n.err" &
    _pid=$!
    await_output "$tmp/$_n.out" "$_pid"
    sleep 0.2
    kill -INT "$_pid"
    wait "$_pid"
    _st=$?
    checks=$((checks + 1))
    [ "$_st" -eq 130 ] || fail "SIGINT ($_n): exit status $_st, expected 130; $(cat "$tmp/$_n.err")"
    check "SIGINT ($_n): stats still printed" grep -Eq '^generation: [0-9]+ tokens' "$tmp/$_n.err"
}
# (--ignore-eos and the model's whole context of 32768 tokens: far more
# than a second of work; the signal comes once the reply has begun)
interrupt int /dev/null "$RUN" -m "$tmp/small.gguf" --temp 0 -c 32768 --ignore-eos --stats -p "$prompt"
# With --each-line --parallel 3: the three replies under way end there,
# each printed on its line in order, and the lines after them are not read.
printf 'one\ntwo\nthree\nfour\nfive\n' > "$tmp/int-lines.txt"
interrupt int-par "$tmp/int-lines.txt" "$RUN" -m "$tmp/small.gguf" --each-line --parallel 3 --temp 0 \
    -c 32768 --ignore-eos --stats
check "SIGINT, --parallel 3: the three replies under way, one line each" [ "$(wc -l < "$tmp/int-par.out")" -eq 3 ]

# --- -t N runs the forward pass on N threads (seen in /proc, on Linux) ---
if [ -r /proc/self/status ]; then
    for t in 1 5; do
        rm -f "$tmp/thr.out"
        "$RUN" -m "$tmp/small.gguf" -t "$t" --temp 0 -c 32768 --ignore-eos --print-ids -p "$prompt" \
            > "$tmp/thr.out" 2> "$tmp/thr.err" &
        pid=$!
        # once the first ids are out the forward pass has run; then the
        # thread count is settled
        await_output "$tmp/thr.out" "$pid"
        n=$(sed -n 's/^Threads:[[:space:]]*//p' "/proc/$pid/status")
        kill -INT "$pid"
        wait "$pid"
        check "-t $t: the process runs $t threads (found ${n:-none})" [ "${n:-0}" -eq "$t" ]
    done
else
    echo "note: no /proc/self/status; the thread count of -t is not checked" >&2
fi

finish
