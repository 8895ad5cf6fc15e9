# infer/cuda/: the CUDA backend, a static library of nvcc-built objects for
# the programs that use it (qwen-run, tests/test-cuda) and never part of
# libgguf or libinfer.  Without CUDA its sources are still distributed.
CUDA_HDRS = infer/cuda/cuda.h infer/cuda/common.cuh infer/cuda/qblocks.h
CUDA_SRCS = infer/cuda/backend.cu infer/cuda/quantize.cu infer/cuda/norm.cu \
	infer/cuda/rope.cu infer/cuda/attention.cu infer/cuda/ffn.cu infer/cuda/embed.cu \
	infer/cuda/matvec.cu infer/cuda/gemm.cu
EXTRA_DIST += $(CUDA_SRCS) infer/cuda/common.cuh
noinst_HEADERS += infer/cuda/cuda.h infer/cuda/qblocks.h

if HAVE_CUDA
noinst_LIBRARIES += infer/cuda/libqwencuda.a
infer_cuda_libqwencuda_a_SOURCES =
infer_cuda_libqwencuda_a_LIBADD = $(CUDA_SRCS:.cu=.o)
EXTRA_infer_cuda_libqwencuda_a_DEPENDENCIES = $(CUDA_SRCS:.cu=.o)
CLEANFILES += $(CUDA_SRCS:.cu=.o)
endif

# nvcc for the CUDA objects (the header dependencies are spelt out: nvcc's
# are not tracked by automake).
NVCC_CMD = $(NVCC) $(NVCC_ARCHFLAGS) $(NVCCFLAGS) -std=c++17 -I$(top_srcdir) -I$(top_builddir) \
	-Xcompiler -fPIC,-Wall
$(CUDA_SRCS:.cu=.o): $(CUDA_HDRS) infer/backend.h infer/context.h infer/model.h \
	gguf/gguf.h config.h
.cu.o:
	$(AM_V_GEN)$(MKDIR_P) $(@D) && $(NVCC_CMD) -c -o $@ $<
SUFFIXES += .cu
