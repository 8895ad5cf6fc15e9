# infer/: the model, tokenizer, chat template, sampler and forward pass, as
# one convenience library that the tools link with gguf/libgguf.la.
noinst_LTLIBRARIES += infer/libinfer.la
infer_libinfer_la_SOURCES =
infer_libinfer_la_CPPFLAGS = $(AM_CPPFLAGS)
infer_libinfer_la_CFLAGS = $(AM_CFLAGS) $(PCRE2_CFLAGS) $(OPENMP_CFLAGS)
infer_libinfer_la_LIBADD = $(PCRE2_LIBS)

# --- the checks' reporting (loader, tokenizer, gguf-verify --model) ---
infer_libinfer_la_SOURCES += infer/check.h infer/check.c

# --- tokenizer ---
infer_libinfer_la_SOURCES += infer/tokenizer.c infer/tokenizer.h

# --- model (config, weights) and the CPU forward pass (OpenMP: programs
# that link this library link with $(OPENMP_CFLAGS)) ---
infer_libinfer_la_SOURCES += infer/arch.h infer/arch.c infer/model.h infer/model.c

# --- prompt caches (qwen-run --prompt-cache) ---
infer_libinfer_la_SOURCES += infer/promptcache.h infer/promptcache.c

# --- grammars (qwen-run --grammar) ---
infer_libinfer_la_SOURCES += infer/grammar.h infer/grammar.c infer/jsonschema.h infer/jsonschema.c

# --- contexts over the backends (backend.h), the CPU's in infer/cpu/, and
# one sequence through a context (forward.h) ---
infer_libinfer_la_SOURCES += infer/context.h infer/context.c infer/backend.h \
	infer/cpu/cpu.h infer/cpu/cpu.c infer/cpu/ops.c infer/cpu/graph.c \
	infer/forward.h infer/forward.c
infer_libinfer_la_LIBADD += -lm

# --- chat template and sampler ---
infer_libinfer_la_SOURCES += infer/chat.h infer/chat.c infer/sampler.h infer/sampler.c

# --- the generation loop (one conversation or many) ---
infer_libinfer_la_SOURCES += infer/generate.h infer/generate.c
