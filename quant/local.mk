# quant/: numeric formats, linked into libgguf.  Knows nothing of files.
#
# -ffp-contract=off: results must be bit-identical to the reference
# quantizers, which are compiled without fused multiply-add.
QUANT_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -ffp-contract=off $(OPENMP_CFLAGS)
QUANT_CPPFLAGS = $(AM_CPPFLAGS) -DGGUF_BUILDING_LIBRARY

noinst_LTLIBRARIES += quant/libquant.la
quant_libquant_la_SOURCES = \
	quant/quant.h \
	quant/half.h \
	quant/blocks.h \
	quant/kernels.h \
	quant/fp16.c \
	quant/dequant.c \
	quant/quantize.c \
	quant/weighted.c \
	quant/rows.c \
	quant/simd.c \
	quant/dot.h \
	quant/dot.c \
	quant/matmul.c \
	quant/vec.h \
	quant/vec.c
quant_libquant_la_CFLAGS = $(QUANT_CFLAGS)
quant_libquant_la_CPPFLAGS = $(QUANT_CPPFLAGS)

gguf_libgguf_la_LIBADD += quant/libquant.la -lm
# The quant/ convenience libraries, for in-tree programs that call the
# hidden gq_ functions (quant/dot.h) directly: link these before
# gguf/libgguf.la, and $(OPENMP_CFLAGS) in LDFLAGS.  QUANT_BASE_LIBS: all
# but the amx level's kernels (test-quant-amx links its own).
QUANT_BASE_LIBS = quant/libquant.la
QUANT_INTERNAL_LIBS = $(QUANT_BASE_LIBS)
gguf_libgguf_la_LDFLAGS += $(OPENMP_CFLAGS)

ggufinclude_HEADERS += quant/quant.h

# SIMD kernels (quant/vkernels.h; chosen at run time by quant/simd.c), each
# compiled with the flags of its level, only when the compiler takes them.
# -ffp-contract=off from QUANT_CFLAGS applies: they must match the scalar
# kernels bit for bit.
if HAVE_AVX2_FLAGS
noinst_LTLIBRARIES += quant/libquant_avx2.la
quant_libquant_avx2_la_SOURCES = quant/kernels-avx2.c quant/vkernels.h quant/dot-avx2.c quant/x86.h \
	quant/matmul-x86.c quant/kpack-avx2.c quant/vec-avx2.c quant/vec-rows.h
quant_libquant_avx2_la_CFLAGS = $(QUANT_CFLAGS) -mavx2 -mfma -mf16c
quant_libquant_avx2_la_CPPFLAGS = $(QUANT_CPPFLAGS)
QUANT_CPPFLAGS += -DGQ_HAVE_AVX2
gguf_libgguf_la_LIBADD += quant/libquant_avx2.la
QUANT_BASE_LIBS += quant/libquant_avx2.la
endif
if HAVE_AVX512_FLAGS
noinst_LTLIBRARIES += quant/libquant_avx512.la
quant_libquant_avx512_la_SOURCES = quant/kernels-avx512.c quant/vkernels.h quant/vec-avx512.c quant/vec-rows.h
quant_libquant_avx512_la_CFLAGS = $(QUANT_CFLAGS) -mavx512f -mavx512bw -mavx512vl -mfma -mf16c
quant_libquant_avx512_la_CPPFLAGS = $(QUANT_CPPFLAGS)
QUANT_CPPFLAGS += -DGQ_HAVE_AVX512
gguf_libgguf_la_LIBADD += quant/libquant_avx512.la
QUANT_BASE_LIBS += quant/libquant_avx512.la
# The matrix-product kernels again, with VNNI: a library of their own, as
# they run only where the CPU has VNNI, which the AVX-512 level does not
# require.
noinst_LTLIBRARIES += quant/libquant_vnni.la
quant_libquant_vnni_la_SOURCES = quant/matmul-x86.c quant/panel-vnni.c quant/tiles32.c quant/x86.h
quant_libquant_vnni_la_CFLAGS = $(QUANT_CFLAGS) -mavx2 -mfma -mf16c -mavx512f -mavx512bw \
	-mavx512vl -mavx512vnni
quant_libquant_vnni_la_CPPFLAGS = $(QUANT_CPPFLAGS)
gguf_libgguf_la_LIBADD += quant/libquant_vnni.la
QUANT_BASE_LIBS += quant/libquant_vnni.la
endif
if HAVE_AMX_FLAGS
# The K-quant panel products once more, with AMX int8 tiles, and the
# Q4_0, Q5_0, Q8_0 tile products (the amx level, used where the CPU has
# them and Linux grants their state).
noinst_LTLIBRARIES += quant/libquant_amx.la
quant_libquant_amx_la_SOURCES = quant/panel-vnni.c quant/tiles32.c quant/x86.h quant/amx.c
quant_libquant_amx_la_CFLAGS = $(QUANT_CFLAGS) -mavx2 -mfma -mf16c -mavx512f -mavx512bw \
	-mavx512vl -mavx512vnni -mamx-tile -mamx-int8
quant_libquant_amx_la_CPPFLAGS = $(QUANT_CPPFLAGS) -DGQ_PANEL_AMX
QUANT_CPPFLAGS += -DGQ_HAVE_AMX
gguf_libgguf_la_LIBADD += quant/libquant_amx.la
QUANT_INTERNAL_LIBS += quant/libquant_amx.la
endif
