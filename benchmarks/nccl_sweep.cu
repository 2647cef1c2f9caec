// Collective sweep over NCCL from C++, one process driving all visible GPUs
// (like nccl-tests with -g N): no Python in the timed loop.
//
//   nvcc -O2 -o nccl_sweep benchmarks/nccl_sweep.cu -I$NCCL/include -L$NCCL/lib -lnccl
//   ./nccl_sweep [-b 8] [-e 1073741824] [-f 2] [-w 5] [-n 20] [-g NGPUS] > out.csv
//
// Sizes, algbw and busbw follow nccl-tests' definitions (doc/PERFORMANCE.md):
// size is the full buffer of the collective; busbw = algbw * factor with
// all_reduce 2(n-1)/n, all_gather / reduce_scatter / alltoall (n-1)/n,
// sendrecv and broadcast 1. Time: mean over -n back-to-back calls after -w
// warm-ups, CUDA events on GPU 0 after all GPUs joined. float32 data; the
// all_reduce result is checked. CSV on stdout, an nccl-tests-like table on stderr.
#include <cuda_runtime.h>
#include <nccl.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CUDACHECK(cmd) do { cudaError_t err_ = cmd; if (err_ != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s:%d '%s'\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
  exit(1); } } while (0)
#define NCCLCHECK(cmd) do { ncclResult_t r = cmd; if (r != ncclSuccess) { \
  fprintf(stderr, "NCCL error %s:%d '%s'\n", __FILE__, __LINE__, ncclGetErrorString(r)); \
  exit(1); } } while (0)

__global__ void fill(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

int main(int argc, char** argv) {
  size_t minb = 8, maxb = 1 << 30;
  int factor = 2, warm = 5, iters = 20, ng = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-b")) minb = strtoull(argv[i + 1], 0, 10);
    else if (!strcmp(argv[i], "-e")) maxb = strtoull(argv[i + 1], 0, 10);
    else if (!strcmp(argv[i], "-f")) factor = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-w")) warm = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-n")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-g")) ng = atoi(argv[i + 1]);
  }
  if (ng == 0) CUDACHECK(cudaGetDeviceCount(&ng));
  if (ng < 2) { fprintf(stderr, "need at least 2 GPUs\n"); return 1; }
  std::vector<ncclComm_t> comms(ng);
  std::vector<int> devs(ng);
  for (int i = 0; i < ng; i++) devs[i] = i;
  NCCLCHECK(ncclCommInitAll(comms.data(), ng, devs.data()));
  int ver; ncclGetVersion(&ver);
  std::vector<cudaStream_t> st(ng);
  std::vector<float*> sbuf(ng), rbuf(ng);
  size_t maxcount = maxb / sizeof(float) + ng;
  for (int i = 0; i < ng; i++) {
    CUDACHECK(cudaSetDevice(i));
    CUDACHECK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
    CUDACHECK(cudaMalloc(&sbuf[i], maxcount * sizeof(float)));
    CUDACHECK(cudaMalloc(&rbuf[i], maxcount * sizeof(float)));
    fill<<<1024, 256, 0, st[i]>>>(sbuf[i], maxcount, 1.0f);
  }
  const char* ops[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                       "sendrecv", "broadcast"};
  printf("collective,n_ranks,size_bytes,time_us,algbw_GBps,busbw_GBps,wrong,nccl_version\n");
  for (const char* op : ops) {
    std::string o(op);
    double fac = o == "all_reduce" ? 2.0 * (ng - 1) / ng
               : (o == "sendrecv" || o == "broadcast") ? 1.0 : (double)(ng - 1) / ng;
    fprintf(stderr, "#\n# %s  nranks %d  NCCL %d\n#%12s %12s %10s %8s %8s %6s\n", op, ng,
            ver, "size", "count", "time(us)", "algbw", "busbw", "#wrong");
    for (size_t size = minb; size <= maxb; size *= factor) {
      size_t count = size / sizeof(float);
      if (count < (size_t)ng) count = ng;
      bool chunked = o == "all_gather" || o == "reduce_scatter" || o == "alltoall";
      size_t per = chunked ? count / ng : count;
      size_t bytes = (chunked ? per * ng : count) * sizeof(float);
      auto run = [&]() {
        NCCLCHECK(ncclGroupStart());
        for (int i = 0; i < ng; i++) {
          if (o == "all_reduce")
            NCCLCHECK(ncclAllReduce(sbuf[i], rbuf[i], count, ncclFloat, ncclSum, comms[i], st[i]));
          else if (o == "all_gather")
            NCCLCHECK(ncclAllGather(sbuf[i], rbuf[i], per, ncclFloat, comms[i], st[i]));
          else if (o == "reduce_scatter")
            NCCLCHECK(ncclReduceScatter(sbuf[i], rbuf[i], per, ncclFloat, ncclSum, comms[i], st[i]));
          else if (o == "broadcast")
            NCCLCHECK(ncclBroadcast(sbuf[i], rbuf[i], count, ncclFloat, 0, comms[i], st[i]));
          else if (o == "alltoall") {
            for (int p = 0; p < ng; p++) {
              NCCLCHECK(ncclSend(sbuf[i] + p * per, per, ncclFloat, p, comms[i], st[i]));
              NCCLCHECK(ncclRecv(rbuf[i] + p * per, per, ncclFloat, p, comms[i], st[i]));
            }
          } else {  // sendrecv: ring shift
            NCCLCHECK(ncclSend(sbuf[i], count, ncclFloat, (i + 1) % ng, comms[i], st[i]));
            NCCLCHECK(ncclRecv(rbuf[i], count, ncclFloat, (i - 1 + ng) % ng, comms[i], st[i]));
          }
        }
        NCCLCHECK(ncclGroupEnd());
      };
      for (int w = 0; w < warm; w++) run();
      for (int i = 0; i < ng; i++) { CUDACHECK(cudaSetDevice(i)); CUDACHECK(cudaStreamSynchronize(st[i])); }
      cudaEvent_t t0, t1;
      CUDACHECK(cudaSetDevice(0));
      CUDACHECK(cudaEventCreate(&t0)); CUDACHECK(cudaEventCreate(&t1));
      CUDACHECK(cudaEventRecord(t0, st[0]));
      for (int it = 0; it < iters; it++) run();
      // GPU 0's stream waits for every GPU before the end event
      for (int i = 1; i < ng; i++) {
        cudaEvent_t e; CUDACHECK(cudaSetDevice(i));
        CUDACHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        CUDACHECK(cudaEventRecord(e, st[i]));
        CUDACHECK(cudaSetDevice(0)); CUDACHECK(cudaStreamWaitEvent(st[0], e, 0));
      }
      CUDACHECK(cudaSetDevice(0));
      CUDACHECK(cudaEventRecord(t1, st[0]));
      CUDACHECK(cudaEventSynchronize(t1));
      float ms; CUDACHECK(cudaEventElapsedTime(&ms, t0, t1));
      double t = ms / 1e3 / iters;
      long wrong = 0;
      if (o == "all_reduce") {
        std::vector<float> h(count < 4096 ? count : 4096);
        CUDACHECK(cudaMemcpy(h.data(), rbuf[0], h.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (float v : h) wrong += (v != (float)ng);
      }
      double algbw = bytes / t / 1e9, busbw = algbw * fac;
      printf("%s,%d,%zu,%.3f,%.4f,%.4f,%ld,%d\n", op, ng, bytes, t * 1e6, algbw, busbw, wrong, ver);
      fprintf(stderr, " %12zu %12zu %10.2f %8.2f %8.2f %6ld\n", bytes, bytes / 4, t * 1e6, algbw,
              busbw, wrong);
      fflush(stdout);
    }
  }
  for (int i = 0; i < ng; i++) ncclCommDestroy(comms[i]);
  return 0;
}
