#!/bin/sh
# test-qwen-run-pipe.sh -- qwen-run's options for scripts, on a synthetic
# model: --stop (the reply ends before the first place of any stop
# string, also across tokens, with --each-line and --parallel too), the
# "stop" member of --json (eos, length, stop, context) and the message on
# a full context, --context-shift and --keep, --logprobs (parsed, sorted,
# the greedy choice the most likely), --json with --tokenize and --logits
# (the same ids and logits as without), --grammar and --json-schema
# (every reply follows them: parsed and checked), and the usage errors.

test_name=test-qwen-run-pipe
. "${top_srcdir:-.}/tests/common.sh"
top_builddir=$(cd "$top_builddir" && pwd) || exit 99
top_srcdir=$(cd "$top_srcdir" && pwd) || exit 99
RUN=$(tool qwen-run)
SYNTH=$top_builddir/tests/gguf-synth
need_exec "$RUN" "$SYNTH"
need_python

m=$tmp/small.gguf
synth_model "$m" --size small --type q8_0 --seed 3
P='Write a short story about a lighthouse.'
# sampled (greedy repeats one token on random weights), the same with the seed
G="--temp 1 --top-k 0 --top-p 1 --min-p 0 --seed 4 --ignore-eos -t 1"

# py EXPR FILE...: a Python check over JSON files (j[0], j[1], ...).
py() {
    _e=$1
    shift
    python3 -c "import json, sys
j = [json.load(open(f)) for f in sys.argv[1:]]
sys.exit(0 if ($_e) else 1)" "$@"
}

# --- --stop ---
run 0 base "$RUN" -m "$m" $G -n 60 -p "$P"
len=$(wc -c < "$tmp/base.out")
[ "$len" -gt 40 ] || hard_error "the reply is too short to cut: $(cat "$tmp/base.out")"
# a stop string from the middle of the reply: 5 printable ASCII bytes from
# its third on (the random weights also write bytes that are not UTF-8)
stop=$(python3 -c 'import sys
t = open(sys.argv[1], "rb").read()
a = len(t) // 3
while a + 5 <= len(t) and not all(32 < c < 127 for c in t[a:a + 5]): a += 1
sys.stdout.write(t[a:a + 5].decode())' "$tmp/base.out")
[ ${#stop} -eq 5 ] || hard_error "no 5 printable bytes in the reply: $(od -c "$tmp/base.out" | head -5)"
python3 -c 'import sys
t = open(sys.argv[1], "rb").read()
sys.stdout.buffer.write(t[:t.index(sys.argv[2].encode())])' "$tmp/base.out" "$stop" > "$tmp/want"
# as printed: a line end after the reply
{ cat "$tmp/want"; echo; } > "$tmp/want-out"
run 0 stop "$RUN" -m "$m" $G -n 60 --stop "$stop" -p "$P"
check "--stop: the text before the stop string" same "$tmp/stop.out" "$tmp/want-out"
run 0 stop2 "$RUN" -m "$m" $G -n 60 --stop 'never in it' --stop "$stop" -p "$P"
check "--stop twice: the one found" same "$tmp/stop2.out" "$tmp/want-out"
run 0 stop-none "$RUN" -m "$m" $G -n 60 --stop 'never in it' -p "$P"
check "--stop absent: the whole reply" same "$tmp/stop-none.out" "$tmp/base.out"
run 0 stop-json "$RUN" -m "$m" $G -n 60 --stop "$stop" --json -p "$P"
cp "$tmp/want" "$tmp/stop-json.out.txt"
check "--json: stop \"stop\", the reply cut" py 'j[0]["stop"] == "stop" and j[0]["reply"] == open(sys.argv[1] + ".txt", "rb").read().decode("utf-8", "replace")' "$tmp/stop-json.out"
# --each-line --parallel: every line's reply cut the same way
printf '%s\n%s\n%s\n' "$P" "$P" "$P" > "$tmp/lines"
run 0 stop-lines "$RUN" -m "$m" $G -n 60 --stop "$stop" --each-line --parallel 2 < "$tmp/lines"
check "--each-line --parallel: three replies" [ "$(wc -l < "$tmp/stop-lines.out")" -eq 3 ]
python3 -c 'import sys
t = open(sys.argv[1], "rb").read()
sys.stdout.buffer.write(t.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r") + b"\n")' "$tmp/want" > "$tmp/want-line"
sort -u "$tmp/stop-lines.out" > "$tmp/stop-lines.u"
check "--each-line: each reply cut" same "$tmp/stop-lines.u" "$tmp/want-line"
# the ids, ending with the token that completes the stop string
run 0 ids "$RUN" -m "$m" $G -n 60 --print-ids -p "$P"
run 0 ids-stop "$RUN" -m "$m" $G -n 60 --print-ids --stop "$stop" -p "$P"
n_all=$(wc -w < "$tmp/ids.out")
n_cut=$(wc -w < "$tmp/ids-stop.out")
check "--print-ids --stop: fewer ids ($n_cut of $n_all)" [ "$n_cut" -lt "$n_all" ] && [ "$n_cut" -gt 0 ]
check "--print-ids --stop: a prefix of the ids" [ "$(cut -d' ' -f1-"$n_cut" "$tmp/ids.out")" = "$(cat "$tmp/ids-stop.out")" ]

# --- why a reply ended ---
run 0 len "$RUN" -m "$m" $G -n 5 --json -p "$P"
check "--json: stop \"length\"" py 'j[0]["stop"] == "length" and j[0]["reply_tokens"] == 5' "$tmp/len.out"
run 0 ctx "$RUN" -m "$m" $G -c 160 --json -p "$P"
check "--json: stop \"context\"" py 'j[0]["stop"] == "context"' "$tmp/ctx.out"
check "a full context: said on stderr" has "$tmp/ctx.err" "the reply filled the context of 160 tokens and was cut there (see -c and --context-shift)"
printf '%s\n%s\n' "$P" "$P" > "$tmp/two"
run 0 ctx-lines "$RUN" -m "$m" $G -c 160 --each-line < "$tmp/two"
check "a full context: the line named" has "$tmp/ctx-lines.err" "line 2: the reply filled the context"
run 0 shift "$RUN" -m "$m" $G -c 160 -n 100 --context-shift --keep 8 --json -p "$P"
check "--context-shift: goes on to -n" py 'j[0]["stop"] == "length" and j[0]["reply_tokens"] == 100 and j[0]["context_shifts"] >= 1' "$tmp/shift.out"
check "--context-shift: no message" empty "$tmp/shift.err"
run 0 shift-all "$RUN" -m "$m" $G -c 160 -n 100 --context-shift --keep 160 --json -p "$P"
check "--keep of it all: nothing to drop" py 'j[0]["stop"] == "context" and j[0]["context_shifts"] == 0' "$tmp/shift-all.out"
check "--keep of it all: said so" has "$tmp/shift-all.err" "--keep leaves nothing to drop"
run 0 eos "$RUN" -m "$m" --temp 0 -t 1 -n 400 --json -p "$P"
check "--json: stop eos or length, never else" py 'j[0]["stop"] in ("eos", "length")' "$tmp/eos.out"

# --- --logprobs ---
run 0 lp "$RUN" -m "$m" $G -n 12 --json --logprobs 4 -p "$P"
check "--logprobs: a token a generated token" py 'len(j[0]["logprobs"]) == j[0]["reply_tokens"] == 12' "$tmp/lp.out"
check "--logprobs: 4 alternatives, sorted, at most 0" py 'all(len(t["top"]) == 4 and all(a["logprob"] >= b["logprob"] for a, b in zip(t["top"], t["top"][1:])) and t["logprob"] <= 0 for t in j[0]["logprobs"])' "$tmp/lp.out"
run 0 lp0 "$RUN" -m "$m" --temp 0 --ignore-eos -t 1 -n 12 --json --logprobs 3 -p "$P"
check "--logprobs: greedy takes the most likely" py 'all(t["id"] == t["top"][0]["id"] and t["logprob"] == t["top"][0]["logprob"] for t in j[0]["logprobs"])' "$tmp/lp0.out"
check "--logprobs: the tokens are the reply" py 'bytes(b for t in j[0]["logprobs"] for b in t["bytes"]).decode("utf-8", "replace") == j[0]["reply"]' "$tmp/lp.out"
check "--logprobs: ids as --print-ids" [ "$(python3 -c 'import json,sys; print(" ".join(str(t["id"]) for t in json.load(open(sys.argv[1]))["logprobs"]))' "$tmp/lp.out")" = "$(cut -d' ' -f1-12 "$tmp/ids.out")" ]
run 0 lp-hot "$RUN" -m "$m" --temp 1.5 --seed 9 --ignore-eos -t 1 -n 12 --json --logprobs 2 -p "$P"
check "--logprobs at temperature 1.5: probabilities that sum below 1" py 'all(sum(2.718281828 ** a["logprob"] for a in t["top"]) <= 1.0001 for t in j[0]["logprobs"])' "$tmp/lp-hot.out"

# --- --json with --tokenize and --logits ---
run 0 tok "$RUN" -m "$m" --tokenize -p "$P"
run 0 tok-json "$RUN" -m "$m" --tokenize --json -p "$P"
check "--tokenize --json: the same ids" py '" ".join(map(str, j[0]["ids"])) == open(sys.argv[1][:-9] + ".out").read().strip() and len(j[0]["tokens"]) == len(j[0]["ids"])' "$tmp/tok-json.out"
run 0 logits "$RUN" -m "$m" --logits 5 -t 1 -p "$P"
run 0 logits-json "$RUN" -m "$m" --logits 5 -t 1 --json -p "$P"
check "--logits --json: the same ids and logits" python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
rows = [l.split() for l in open(sys.argv[2])]
sys.exit(0 if [(e["id"], e["logit"]) for e in d["logits"]] == [(int(a), float(b)) for a, b in rows] else 1)' \
    "$tmp/logits-json.out" "$tmp/logits.out"

# --- --prompt-cache ---
SYS='You answer questions about lighthouses, briefly and truthfully, in plain words.'
pc=$tmp/cache.gguf
for q in one two; do
    run 0 "plain-$q" "$RUN" -m "$m" $G -n 8 --json --system "$SYS" -p "question $q"
done
run 0 pc1 "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question one"
check "--prompt-cache: made by the first run" [ -s "$pc" ]
check "--prompt-cache: nothing cached the first time, the same reply" \
    py 'j[0]["cached_tokens"] == 0 and j[0]["reply"] == j[1]["reply"]' "$tmp/pc1.out" "$tmp/plain-one.out"
check "--prompt-cache: nothing said the first time" empty "$tmp/pc1.err"
run 0 pc2 "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question two"
check "--prompt-cache: the shared start taken from the file, the same reply" \
    py 'j[0]["cached_tokens"] > 10 and j[0]["cached_tokens"] < j[0]["prompt_tokens"] and j[0]["reply"] == j[1]["reply"]' \
    "$tmp/pc2.out" "$tmp/plain-two.out"
# refused clearly, computed again, and made again
synth_model "$tmp/other.gguf" --size small --type q8_0 --seed 4
run 0 pc-other "$RUN" -m "$tmp/other.gguf" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question two"
check "another model's cache: said" has "$tmp/pc-other.err" "made for another model"
check "another model's cache: computed again" py 'j[0]["cached_tokens"] == 0' "$tmp/pc-other.out"
run 0 pc-other2 "$RUN" -m "$tmp/other.gguf" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question one"
check "another model's cache: made again for it" py 'j[0]["cached_tokens"] > 10' "$tmp/pc-other2.out"
check "another model's cache: made again, nothing said" empty "$tmp/pc-other2.err"
run 0 pc-back "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question two"
cp "$pc" "$tmp/good.gguf"
size=$(wc -c < "$pc")
head -c $((size / 2)) "$tmp/good.gguf" > "$pc"
run 0 pc-cut "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question two"
check "a cache cut short: said" grep -q "computed again" "$tmp/pc-cut.err"
check "a cache cut short: the same reply, computed" \
    py 'j[0]["cached_tokens"] == 0 and j[0]["reply"] == j[1]["reply"]' "$tmp/pc-cut.out" "$tmp/plain-two.out"
cp "$tmp/good.gguf" "$pc"
python3 -c 'import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[-100] ^= 0x40
open(sys.argv[1], "wb").write(b)' "$pc"
run 0 pc-bad "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question two"
check "a damaged cache: said" has "$tmp/pc-bad.err" "damaged: the checksum of its tokens and keys and values does not match; the prompt is computed again"
check "a damaged cache: computed again" py 'j[0]["cached_tokens"] == 0 and j[0]["reply"] == j[1]["reply"]' "$tmp/pc-bad.out" "$tmp/plain-two.out"
EDIT=$(tool gguf-edit)
run 0 pc-v2 "$EDIT" --set qwen.prompt_cache.version=u32:2 "$tmp/good.gguf" "$pc"
run 0 pc-ver "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question two"
check "a cache of another version: said" has "$tmp/pc-ver.err" "a prompt cache of version 2, this qwen-run reads version 1"
# a file that is not a prompt cache is not used, and never replaced
printf 'not a cache at all\n' > "$pc"
run 0 pc-junk "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question two"
check "not a GGUF file: said" has "$tmp/pc-junk.err" "not a prompt cache: left as it is, and not used"
check "not a GGUF file: left as it is" [ "$(cat "$pc")" = "not a cache at all" ]
sum_m=$(sum "$m")
run 0 pc-model "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --prompt-cache "$m" -p "question two"
check "a model given as the cache: said" has "$tmp/pc-model.err" "not a prompt cache: left as it is"
check "a model given as the cache: left as it is" [ "$(sum "$m")" = "$sum_m" ]
# a cache cut short in its header is not known to be one: left too
head -c 200 "$tmp/good.gguf" > "$pc"
run 0 pc-head "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question two"
check "a cache cut in its header: left as it is" [ "$(wc -c < "$pc")" -eq 200 ]
# cut in its data: known, computed again, and made again
head -c $((size / 2)) "$tmp/good.gguf" > "$pc"
run 0 pc-cut2 "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --prompt-cache "$pc" -p "question two"
check "a cache cut in its data: made again" [ "$(wc -c < "$pc")" -eq "$size" ]
# --each-line: the system prompt the lines share is computed once
printf 'question one\nquestion two\n' > "$tmp/qs"
run 0 pc-lines "$RUN" -m "$m" $G -n 8 --json --system "$SYS" --each-line --parallel 1 < "$tmp/qs"
check "--each-line: the second line starts from the first's prefix, the same replies" python3 -c 'import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
a = json.load(open(sys.argv[2])); b = json.load(open(sys.argv[3]))
sys.exit(0 if l[0]["cached_tokens"] == 0 and l[1]["cached_tokens"] > 10 and [x["reply"] for x in l] == [a["reply"], b["reply"]] else 1)' \
    "$tmp/pc-lines.out" "$tmp/plain-one.out" "$tmp/plain-two.out"
run 2 u-pc "$RUN" -m "$m" --prompt-cache "$pc" --tokenize -p x
check "--prompt-cache with --tokenize" has "$tmp/u-pc.err" "are for generation"

# --- --grammar: every reply follows it ---
cat > "$tmp/rec.gbnf" <<'EOG'
# a JSON record of bounded size
root ::= "{" ws "\"id\": " [0-9]{1,3} "," ws "\"ok\": " bool "," ws "\"tags\": [" tag ("," ws tag){0,3} "]" ws "}"
bool ::= "true" | "false"
tag  ::= "\"" [a-z]{1,8} "\""
ws   ::= [ ]?
EOG
printf 'one\ntwo\nthree\nfour\nfive\nsix\n' > "$tmp/six"
run 0 gram "$RUN" -m "$m" --temp 1 --top-k 0 --top-p 1 --min-p 0 --seed 5 -t 1 -n 200 --json \
    --grammar "$tmp/rec.gbnf" --each-line --parallel 3 < "$tmp/six"
check "--grammar: every reply is the JSON record, ended by the grammar" python3 -c 'import json, re, sys
n = 0
for line in open(sys.argv[1]):
    d = json.loads(line)
    r = json.loads(d["reply"])
    assert d["stop"] == "eos", d["stop"]
    assert set(r) == {"id", "ok", "tags"} and 0 <= r["id"] <= 999 and isinstance(r["ok"], bool)
    assert 1 <= len(r["tags"]) <= 4 and all(re.fullmatch("[a-z]{1,8}", t) for t in r["tags"])
    n += 1
sys.exit(0 if n == 6 else 1)' "$tmp/gram.out"
run 0 gram-eos "$RUN" -m "$m" --temp 0 -t 1 -n 200 --ignore-eos --json --grammar "$tmp/rec.gbnf" -p "$P"
check "--grammar --ignore-eos: the reply still ends where the grammar does" py 'j[0]["stop"] == "eos" and json.loads(j[0]["reply"])["tags"]' "$tmp/gram-eos.out"
# greedy takes the choice without the grammar when the grammar allows it;
# with --logprobs every step masks the whole vocabulary: the same replies
run 0 gram-greedy "$RUN" -m "$m" --temp 0 -t 1 -n 200 --json --grammar "$tmp/rec.gbnf" \
    --each-line < "$tmp/six"
run 0 gram-full "$RUN" -m "$m" --temp 0 -t 1 -n 200 --json --logprobs 1 --grammar "$tmp/rec.gbnf" \
    --each-line < "$tmp/six"
check "--grammar, greedy: the same replies with the whole vocabulary masked each step" python3 -c 'import json, sys
a = [json.loads(l)["reply"] for l in open(sys.argv[1])]
b = [json.loads(l)["reply"] for l in open(sys.argv[2])]
sys.exit(0 if a == b and len(a) == 6 and all(json.loads(r) for r in a) else 1)' "$tmp/gram-greedy.out" "$tmp/gram-full.out"
# sampling with top-k takes the first k the grammar allows among the
# sampler's first 4 k; with --logprobs the whole vocabulary is masked: the
# same draws
for k in 40 3; do
    run 0 gram-k$k "$RUN" -m "$m" --temp 1.3 --top-k $k --seed 9 -t 1 -n 200 --json \
        --repeat-penalty 1.1 --grammar "$tmp/rec.gbnf" --each-line < "$tmp/six"
    run 0 gram-k$k-full "$RUN" -m "$m" --temp 1.3 --top-k $k --seed 9 -t 1 -n 200 --json --logprobs 1 \
        --repeat-penalty 1.1 --grammar "$tmp/rec.gbnf" --each-line < "$tmp/six"
    check "--grammar, --top-k $k: the same draws with the whole vocabulary masked each step" python3 -c 'import json, sys
a = [json.loads(l)["reply"] for l in open(sys.argv[1])]
b = [json.loads(l)["reply"] for l in open(sys.argv[2])]
sys.exit(0 if a == b and len(a) == 6 and all(json.loads(r) for r in a) else 1)' "$tmp/gram-k$k.out" "$tmp/gram-k$k-full.out"
done
printf 'root ::= "a" | item\n' > "$tmp/bad.gbnf"
run 2 gram-bad "$RUN" -m "$m" --grammar "$tmp/bad.gbnf" -p x
check "--grammar: an undefined rule named with its place" has "$tmp/gram-bad.err" "bad.gbnf:1:16: rule 'item' is used but not defined"
run 2 gram-none "$RUN" -m "$m" --grammar "$tmp/none.gbnf" -p x
check "--grammar: a missing file" has "$tmp/gram-none.err" "none.gbnf: No such file or directory"

# --- --json-schema: every reply is JSON the schema accepts ---
cat > "$tmp/pet.json" <<'EOS'
{"type": "object",
 "properties": {
   "name": {"type": "string", "minLength": 1, "maxLength": 12},
   "age": {"type": "integer"},
   "kind": {"enum": ["cat", "dog", "fish"]},
   "colors": {"type": "array", "items": {"type": "string", "maxLength": 6}, "minItems": 1, "maxItems": 3},
   "weight": {"type": ["number", "null"]},
   "note": {"type": "string", "maxLength": 5}},
 "required": ["name", "age", "kind", "colors", "weight"]}
EOS
run 0 schema "$RUN" -m "$m" --temp 1 --top-k 0 --top-p 1 --min-p 0 --seed 8 -t 1 -n 400 --json \
    --json-schema "$tmp/pet.json" --each-line --parallel 3 < "$tmp/six"
check "--json-schema: six replies, each valid (tests/schemacheck.py)" \
    [ "$(python3 "$top_srcdir/tests/schemacheck.py" "$tmp/pet.json" "$tmp/schema.out")" = 6 ]
check "--json-schema: each ended where the JSON does" python3 -c 'import json, sys
sys.exit(0 if all(json.loads(l)["stop"] == "eos" for l in open(sys.argv[1])) else 1)' "$tmp/schema.out"
printf '{"type": "string", "format": "date"}' > "$tmp/date.json"
run 2 schema-bad "$RUN" -m "$m" --json-schema "$tmp/date.json" -p x
check "--json-schema: a keyword left out is refused, named" has "$tmp/schema-bad.err" "date.json: #: the keyword 'format' is not supported"
run 2 u-both "$RUN" -m "$m" --json-schema "$tmp/pet.json" --grammar "$tmp/rec.gbnf" -p x
check "--grammar with --json-schema" has "$tmp/u-both.err" "one or the other"

# --- usage errors ---
run 2 u-lp "$RUN" -m "$m" --logprobs 3 -p x
check "--logprobs without --json" has "$tmp/u-lp.err" "--logprobs needs --json"
run 2 u-lp21 "$RUN" -m "$m" --logprobs 21 --json -p x
check "--logprobs 21" has "$tmp/u-lp21.err" "--logprobs: not a count (1..20)"
run 2 u-keep "$RUN" -m "$m" --keep 4 -p x
check "--keep without --context-shift" has "$tmp/u-keep.err" "--keep goes with --context-shift"
run 2 u-stop "$RUN" -m "$m" --stop x --tokenize -p x
check "--stop with --tokenize" has "$tmp/u-stop.err" "are for generation"
run 2 u-empty "$RUN" -m "$m" --stop '' -p x
check "--stop ''" has "$tmp/u-empty.err" "--stop: an empty string"

finish
