// A graph runtime without a memory pool: the allocation pattern `alloclab record --cuda` is for.
//
// A small network (GEMM + bias/ReLU layers with residual adds) runs op by op. Each op's output
// is a fresh cudaMalloc (or cudaMallocAsync with --async) and each tensor is freed right after
// its last use, as a naive runtime does. Every run is one NVTX range named "run". The program
// counts its own allocation calls and prints them, so a trace can be checked against it:
//   graph_runtime: runs=R allocations=A frees=F bytes=B checksum=C
//
// Usage: graph_runtime [--runs N] [--layers L] [--batch B] [--width W] [--async]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

#define CHECK(call)                                                                               \
  do {                                                                                            \
    const cudaError_t status_ = (call);                                                           \
    if (status_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "graph_runtime: %s failed: %s\n", #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

constexpr int tile = 16;

// out[m x n] = in[m x k] * w[k x n], one 16x16 tile of the output per block.
__global__ void gemm(const float* in, const float* w, float* out, int m, int k, int n) {
  __shared__ float a[tile][tile];
  __shared__ float b[tile][tile];
  const int row = blockIdx.y * tile + threadIdx.y;
  const int col = blockIdx.x * tile + threadIdx.x;
  float sum = 0.f;
  for (int t = 0; t < k; t += tile) {
    a[threadIdx.y][threadIdx.x] =
        row < m && t + threadIdx.x < k ? in[row * k + t + threadIdx.x] : 0.f;
    b[threadIdx.y][threadIdx.x] =
        col < n && t + threadIdx.y < k ? w[(t + threadIdx.y) * n + col] : 0.f;
    __syncthreads();
    for (int i = 0; i < tile; ++i) sum += a[threadIdx.y][i] * b[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) out[row * n + col] = sum;
}

__global__ void bias_relu(const float* in, const float* bias, float* out, int m, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m * n) out[i] = fmaxf(in[i] + bias[i % n], 0.f);
}

__global__ void add(const float* x, const float* y, float* out, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = 0.5f * (x[i] + y[i]);
}

__global__ void fill(float* out, int count, unsigned seed, float scale) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  unsigned h = (static_cast<unsigned>(i) + seed) * 2654435761u;
  h ^= h >> 13;
  out[i] = scale * (static_cast<float>(h % 2001u) / 1000.f - 1.f);
}

enum class Kind { gemm, bias_relu, add };
struct Op {
  Kind kind;
  int a, b;  // input tensors (b: weight or second operand; -1 if none)
  int out;   // output tensor
};

struct Options {
  int runs = 20, layers = 6, batch = 64, width = 512;
  bool async = false;
};

struct Runtime {
  Options options;
  cudaStream_t stream = nullptr;
  unsigned long long allocations = 0, frees = 0, bytes = 0;

  float* allocate(size_t count) {
    void* p = nullptr;
    const size_t size = count * sizeof(float);
    if (options.async)
      CHECK(cudaMallocAsync(&p, size, stream));
    else
      CHECK(cudaMalloc(&p, size));
    ++allocations;
    bytes += size;
    return static_cast<float*>(p);
  }
  void release(float* p) {
    if (options.async)
      CHECK(cudaFreeAsync(p, stream));
    else
      CHECK(cudaFree(p));
    ++frees;
  }
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    auto number = [&](int& field) {
      if (i + 1 >= argc || (field = std::atoi(argv[++i])) <= 0) {
        std::fprintf(stderr, "graph_runtime: %s needs a positive number\n", argv[i - 1]);
        std::exit(2);
      }
    };
    if (!std::strcmp(argv[i], "--runs"))
      number(o.runs);
    else if (!std::strcmp(argv[i], "--layers"))
      number(o.layers);
    else if (!std::strcmp(argv[i], "--batch"))
      number(o.batch);
    else if (!std::strcmp(argv[i], "--width"))
      number(o.width);
    else if (!std::strcmp(argv[i], "--async"))
      o.async = true;
    else {
      std::fprintf(stderr,
                   "usage: graph_runtime [--runs N] [--layers L] [--batch B] "
                   "[--width W] [--async]\n");
      std::exit(2);
    }
  }
  return o;
}

int blocks(int count) {
  return (count + 255) / 256;
}

}  // namespace

int main(int argc, char** argv) {
  Runtime rt;
  rt.options = parse(argc, argv);
  const Options& o = rt.options;
  CHECK(cudaStreamCreateWithFlags(&rt.stream, cudaStreamNonBlocking));

  // Tensors 0..2L-1 are the weights and biases (live for the whole program); then the input;
  // then one output per op. Layer i: h = relu(x W_i + b_i); every second layer adds its input.
  const int weights = 2 * o.layers;
  std::vector<Op> graph;
  int next = weights + 1;
  int x = weights;
  for (int layer = 0; layer < o.layers; ++layer) {
    const int product = next++, activated = next++;
    graph.push_back({Kind::gemm, x, 2 * layer, product});
    graph.push_back({Kind::bias_relu, product, 2 * layer + 1, activated});
    int y = activated;
    if (layer % 2 == 1) {
      y = next++;
      graph.push_back({Kind::add, activated, x, y});
    }
    x = y;
  }
  const int output = x;
  // Last use of every activation: freed right after that op (the output after the copy).
  std::vector<int> last_use(next, -1);
  for (int i = 0; i < static_cast<int>(graph.size()); ++i) {
    last_use[graph[i].a] = i;
    if (graph[i].b >= weights) last_use[graph[i].b] = i;
  }

  const int act = o.batch * o.width;
  std::vector<float*> tensor(next, nullptr);
  for (int layer = 0; layer < o.layers; ++layer) {
    tensor[2 * layer] = rt.allocate(static_cast<size_t>(o.width) * o.width);
    fill<<<blocks(o.width * o.width), 256, 0, rt.stream>>>(tensor[2 * layer], o.width * o.width,
                                                           layer, 0.05f);
    tensor[2 * layer + 1] = rt.allocate(o.width);
    fill<<<blocks(o.width), 256, 0, rt.stream>>>(tensor[2 * layer + 1], o.width, 1000 + layer,
                                                 0.01f);
  }

  double checksum = 0;
  std::vector<float> host(act);
  for (int run = 0; run < o.runs; ++run) {
    nvtxRangePushA("run");
    tensor[weights] = rt.allocate(act);
    fill<<<blocks(act), 256, 0, rt.stream>>>(tensor[weights], act, 7u * run, 1.f);
    for (int i = 0; i < static_cast<int>(graph.size()); ++i) {
      const Op& op = graph[i];
      float* out = tensor[op.out] = rt.allocate(act);
      if (op.kind == Kind::gemm) {
        const dim3 grid((o.width + tile - 1) / tile, (o.batch + tile - 1) / tile);
        gemm<<<grid, dim3(tile, tile), 0, rt.stream>>>(tensor[op.a], tensor[op.b], out, o.batch,
                                                       o.width, o.width);
      } else if (op.kind == Kind::bias_relu) {
        bias_relu<<<blocks(act), 256, 0, rt.stream>>>(tensor[op.a], tensor[op.b], out, o.batch,
                                                      o.width);
      } else {
        add<<<blocks(act), 256, 0, rt.stream>>>(tensor[op.a], tensor[op.b], out, act);
      }
      CHECK(cudaGetLastError());
      for (int input : {op.a, op.b})
        if (input >= weights && last_use[input] == i && input != output) {
          rt.release(tensor[input]);
          tensor[input] = nullptr;
        }
    }
    CHECK(cudaMemcpyAsync(host.data(), tensor[output], act * sizeof(float), cudaMemcpyDeviceToHost,
                          rt.stream));
    CHECK(cudaStreamSynchronize(rt.stream));
    rt.release(tensor[output]);
    tensor[output] = nullptr;
    for (float v : host) checksum += v;
    nvtxRangePop();
  }
  for (int t = 0; t < weights; ++t) rt.release(tensor[t]);
  CHECK(cudaStreamSynchronize(rt.stream));
  CHECK(cudaStreamDestroy(rt.stream));
  std::printf("graph_runtime: runs=%d allocations=%llu frees=%llu bytes=%llu checksum=%.6g\n",
              o.runs, rt.allocations, rt.frees, rt.bytes, checksum);
  return rt.allocations == rt.frees ? 0 : 1;
}
