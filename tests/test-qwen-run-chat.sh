#!/bin/sh
# test-qwen-run-chat.sh -- qwen-run's chat in a real terminal (a
# pseudo-terminal driven by Python's pty module, keys typed as a person
# types them): the chat starts when standard input is a terminal and no
# prompt is given; a turn is answered and the next prompt shown; a line
# ending in \ goes on; Ctrl-C stops a reply and the chat goes on, and
# drops a line being typed; the up arrow brings back the last line
# (libedit's history, when the build has it); /clear, /save FILE (the
# transcript, whole), an unknown /command, /exit and Ctrl-D.  Through a
# pipe, -i: a reply line a turn, nothing read after /exit.

test_name=test-qwen-run-chat
. "${top_srcdir:-.}/tests/common.sh"
top_builddir=$(cd "$top_builddir" && pwd) || exit 99
RUN=$(tool qwen-run)
SYNTH=$top_builddir/tests/gguf-synth
need_exec "$RUN" "$SYNTH"
need_python
python3 -c 'import os, pty; os.openpty()' 2>/dev/null || {
    echo "SKIP: no pseudo-terminal can be opened here" >&2
    exit 77
}

m=$tmp/small.gguf
synth_model "$m" --size small --type q8_0 --seed 3
editline=0
grep -q '^#define HAVE_LIBEDIT 1' "$top_builddir/config.h" 2>/dev/null && editline=1

# --- in a terminal ---
check "the chat in a pseudo-terminal" python3 - "$RUN" "$m" "$tmp" "$editline" <<'EOF'
import os, pty, select, sys, termios, time

run, model, tmp, editline = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
fails = []

def check(cond, what):
    if not cond:
        fails.append(what)

pid, fd = pty.fork()
if pid == 0:
    os.execv(run, [run, "-m", model, "--temp", "0", "--ignore-eos", "-n", "3000", "-t", "1"])
buf = b""

def read_until(pat, timeout=120.0):
    """Reads until pat is in what came since the last call; returns it."""
    global buf
    end = time.time() + timeout
    while pat not in buf:
        left = end - time.time()
        if left <= 0:
            break
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        buf += data
    got, found = buf, pat in buf
    if found:
        i = buf.index(pat) + len(pat)
        got, buf = buf[:i], buf[i:]
    return found, got

def reap(pid, timeout=300.0):
    """The child's status, reading what it writes meanwhile; when it has
    not ended in time, what it wrote, its terminal's mode and where it
    waits are said, and it is killed."""
    global buf
    end = time.time() + timeout
    while time.time() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                buf += os.read(fd, 65536)
            except OSError:
                pass
    try:
        wchan = open("/proc/%d/wchan" % pid).read()
    except OSError:
        wchan = "?"
    fails.append("the chat had not ended %d s after Ctrl-D (canonical mode %s, waiting in %s, "
                 "wrote %r): killed" % (timeout, bool(termios.tcgetattr(fd)[3] & termios.ICANON),
                                         wchan, buf[-300:]))
    os.kill(pid, 9)
    return os.waitpid(pid, 0)[1]

def typed(s):
    for ch in s:
        os.write(fd, ch.encode())
        time.sleep(0.005)

ok, got = read_until(b"> ")
check(ok and b"a chat with" in got, "the chat starts, with a word on how to use it: %r" % got[-300:])
# Ctrl-C while a reply streams: it stops, and the chat goes on
typed("Tell me a long story\r")
ok, got = read_until(b"Tell me a long story")
ok, got = read_until(b"\n")
# some of the reply first (slow under valgrind): then Ctrl-C
end = time.time() + 120
while len(buf) < 16 and time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        buf += os.read(fd, 65536)
check(len(buf) >= 16, "the reply streams: %r" % buf[:100])
os.write(fd, b"\x03")
ok, got = read_until(b"stopped")
check(ok, "Ctrl-C stops the reply: %r" % got[-300:])
ok, got = read_until(b"> ")
check(ok, "a new prompt after Ctrl-C: %r" % got[-200:])
# a line ending in \ goes on
typed("first line \\\r")
ok, got = read_until(b"... ")
check(ok, "a line ending in \\ asks for more: %r" % got[-200:])
# Ctrl-C on the continuation drops the turn
os.write(fd, b"\x03")
ok, got = read_until(b"> ")
check(ok, "Ctrl-C while typing drops the line: %r" % got[-200:])
typed("/nonsense\r")
ok, got = read_until(b"> ")
check(b"not a command" in got, "an unknown command is said: %r" % got[-200:])
typed("/clear\r")
ok, got = read_until(b"> ")
check(b"a new conversation" in got, "/clear: %r" % got[-200:])
if editline:
    # the up arrow brings back the line before (/clear)
    typed("\x1b[A\r")
    ok, got = read_until(b"a new conversation")
    check(ok, "the up arrow brings back /clear: %r" % got[-200:])
    ok, got = read_until(b"> ")
save = os.path.join(tmp, "saved.txt")
typed("/save " + save + "\r")
ok, got = read_until(b"> ")
check(b"the conversation is in" in got, "/save: %r" % got[-200:])
# Ctrl-D on an empty line ends the chat.  The prompt can show before the
# line editor turns the terminal's canonical mode off (seen under
# memcheck); a Ctrl-D typed then is taken by the terminal driver as an end
# of file, which the switch to raw mode drops, and the chat waits on, as
# any typed-ahead Ctrl-D is lost.  So the key goes once the editor reads.
if editline:
    end = time.time() + 120
    while termios.tcgetattr(fd)[3] & termios.ICANON and time.time() < end:
        time.sleep(0.05)
    check(not termios.tcgetattr(fd)[3] & termios.ICANON, "the line editor has the terminal")
os.write(fd, b"\x04")
status = reap(pid)
check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "Ctrl-D ends with status 0: %r" % status)
check(os.path.exists(save) and open(save).read() == "", "/save after /clear: an empty conversation")
for f in fails:
    print("pty: " + f, file=sys.stderr)
sys.exit(1 if fails else 0)
EOF

# a second session: two turns answered, then /exit
check "two turns, /save and /exit in a terminal" python3 - "$RUN" "$m" "$tmp" <<'EOF'
import os, pty, select, sys, time
run, model, tmp = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.execv(run, [run, "-m", model, "--temp", "0", "-n", "6", "-t", "1", "--ignore-eos"])
out = b""
def wait(pat, t=120):
    global out
    end = time.time() + t
    while out.count(pat) == 0 and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                d = os.read(fd, 65536)
            except OSError:
                return False
            if not d:
                return False
            out += d
    ok = pat in out
    if ok:
        out = out[out.index(pat) + len(pat):]
    return ok
ok = wait(b"> ")
for line in ("hello there", "and again"):
    os.write(fd, line.encode() + b"\r")
    ok = ok and wait(b"> ")
save = os.path.join(tmp, "two.txt")
os.write(fd, ("/save %s\r" % save).encode())
ok = ok and wait(b"> ")
os.write(fd, b"/exit\r")
end = time.time() + 300
done, st = os.waitpid(pid, os.WNOHANG)
while not done and time.time() < end:
    time.sleep(0.1)
    done, st = os.waitpid(pid, os.WNOHANG)
if not done:
    print("pty: the chat had not ended 300 s after /exit: killed", file=sys.stderr)
    os.kill(pid, 9)
    _, st = os.waitpid(pid, 0)
    ok = False
text = open(save).read() if os.path.exists(save) else ""
good = (ok and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0 and text.count("## user") == 2 and
        text.count("## assistant") == 2 and "hello there" in text and "and again" in text)
if not good:
    print("pty: ok %r status %r transcript %r" % (ok, st, text[:300]), file=sys.stderr)
sys.exit(0 if good else 1)
EOF

# --- through a pipe with -i: the replies as computed whole ---
printf 'hello there\nand again\n/save %s\n/exit\nnot read\n' "$tmp/piped.txt" > "$tmp/turns"
run 0 pipe "$RUN" -m "$m" -i --temp 0 -n 6 -t 1 --ignore-eos < "$tmp/turns"
check "-i through a pipe: two turns, nothing after /exit" python3 -c 'import sys
t = open(sys.argv[1]).read()
sys.exit(0 if t.count("## user") == 2 and "and again" in t and "not read" not in t else 1)' "$tmp/piped.txt"
check "-i through a pipe: no prompts, no banner" lacks "$tmp/pipe.err" "a chat with"
run 0 single "$RUN" -m "$m" --temp 0 -n 6 -t 1 --ignore-eos -p "hello there"
check "-i through a pipe: the first reply is the one -p gets" \
    [ "$(head -c "$(wc -c < "$tmp/single.out")" "$tmp/pipe.out")" = "$(cat "$tmp/single.out")" ]
# (that a later turn's reply is the one the whole conversation gets
# computed at once is test-context's)
run 2 u-ids "$RUN" -m "$m" -i --print-ids < /dev/null
check "-i refuses --print-ids" has "$tmp/u-ids.err" "the chat is for people"
run 2 u-i "$RUN" -m "$m" -i -p x
check "-i with -p: refused" has "$tmp/u-i.err" "-i reads the chat's turns from standard input"
run 2 u-json "$RUN" -m "$m" -i --json < /dev/null
check "-i with --json: refused" has "$tmp/u-json.err" "the chat is for people"

finish
