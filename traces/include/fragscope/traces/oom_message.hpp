// Reads out-of-memory error messages — the text a framework prints when an allocation fails — from
// any amount of surrounding log text: PyTorch (every era since the legacy THC "cuda runtime error
// (2)", the caching allocator's "Tried to allocate …" in its cached / reserved / 2.1 / ≥ 2.2
// wordings, cudaMallocAsync, MPS, XPU, HIP), JAX / XLA (RESOURCE_EXHAUSTED, BufferAssignment
// statistics, TPU compile-time HBM), TensorFlow short forms (OOM when allocating tensor with
// shape, stream_executor's failed to allocate, pinned host memory) and raw CUDA / cuBLAS / cuDNN
// failures, also in the words of libraries that call CUDA themselves (NCCL's "Cuda failure 'out of
// memory'", llama.cpp / ggml's "cudaMalloc failed: out of memory", ONNX Runtime's CUDA provider,
// MXNet, TensorRT, XGBoost, LightGBM, cuFFT, cuSOLVER, a "GPUassert:" check),
// and other frameworks' own words: PaddlePaddle ("Out of memory error on GPU 0. Cannot allocate …"),
// Theano ("Error allocating N bytes of device memory"), ONNX Runtime's arena, torch-directml,
// TensorFlow's Eigen allocator and CuPy's memory pool. docs/importers.md, "Out-of-memory error
// messages", lists the wordings.
//
// The scan is line by line with plain substring searches (no regular expression runs over the
// input), linear in the input's size. Every size is checked against kMaxBytes (byte_math.hpp): a
// number fragscope cannot represent is left empty and named in `problems`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fragscope::traces {

// A size as the message prints it: "1.69 GiB", "0 bytes", "4770354232 bytes", "32.00M".
struct PrintedSize {
  std::uint64_t bytes = 0;      // the value in bytes, rounded to the nearest byte (units are 1024-based)
  std::uint64_t tolerance = 0;  // half a unit of the last printed digit: 0.005 GiB for "1.69 GiB"
  std::string text;             // as printed
};

// The wording family of a message: which framework code printed it, in which era.
enum class OomMessageKind : std::uint8_t {
  kPytorchLegacy,       // THC: "cuda runtime error (2) : out of memory", "THCudaCheck FAIL … error=2"
  kPytorchCaching,      // the caching allocator: "… out of memory. Tried to allocate …" (CUDA, XPU, HIP)
  kPytorchAsync,        // cudaMallocAsync: "Allocation on device N would exceed allowed memory"
  kPytorchMps,          // "MPS backend out of memory (MPS allocated: …)"
  kXlaRuntime,          // "Out of memory while trying to allocate N bytes" (JAX / XLA)
  kXlaRequest,          // PJRT: "Failed to allocate request for X (NB) on device ordinal N"
  kXlaTpuCompile,       // "XLA:TPU compile permanent error. Ran out of memory in memory space hbm"
  kTfTensor,            // "OOM when allocating tensor with shape[…] and type float"
  kTfDeviceAlloc,       // stream_executor: "failed to allocate X (N bytes) from device: CUDA_ERROR_OUT_OF_MEMORY"
  kTfHostAlloc,         // "failed to alloc N bytes on host" / "could not allocate pinned host memory"
  kCudaRaw,             // a CUDA / HIP runtime or driver error ("CUDA error: out of memory"), also as NCCL
                        // (framework "nccl"), llama.cpp / ggml ("ggml"), MXNet's pooled storage ("mxnet"),
                        // TensorRT ("tensorrt"), XGBoost ("xgboost"), LightGBM ("lightgbm") or a CUDA program's
                        // "GPUassert:" check report it, with the sizes where printed
  kCublas,              // CUBLAS_STATUS_ALLOC_FAILED
  kCudnn,               // CUDNN_STATUS_ALLOC_FAILED
  kCufft,               // CUFFT_ALLOC_FAILED (a cuFFT plan's work area)
  kCusolver,            // CUSOLVER_STATUS_ALLOC_FAILED (a cuSOLVER handle or workspace)
  kPaddleGpu,           // "Out of memory error on GPU 0. Cannot allocate X memory on GPU 0, [Y memory has been
                        // allocated and] available memory is only Z."; 2018's "enforce allocating <= available"
  kPaddleHost,          // "Fail to alloc memory of N size, error code is 12." (host RAM)
  kTheano,              // "Error allocating N bytes of device memory (out of memory). Driver report F bytes free …"
  kOrtArena,            // ONNX Runtime's BFCArena: "Failed to allocate memory for requested buffer of size N",
                        // "Available memory of A is smaller than requested bytes of N"
  kDirectml,            // torch-directml: "Could not allocate tensor with N bytes. There is not enough GPU video
                        // memory available!"
  kTfEigen,             // "EigenAllocator for GPU ran out of memory when allocating N", "Ran out of GPU memory
                        // when allocating N bytes for OP"
  kCupy,                // CuPy's memory pool: "Out of memory allocating N bytes (allocated so far: M bytes[, limit
                        // set to: L bytes])." (sizes with thousands separators)
};

// "pytorch-legacy", "pytorch-caching", …: stable names, in JSON.
std::string_view ToString(OomMessageKind kind);

struct OtherProcess {
  std::uint64_t pid = 0;
  PrintedSize size;
};

// XLA's BufferAssignment statistics (printed with a runtime OOM).
struct XlaBufferStats {
  std::optional<PrintedSize> parameter, constant, maybe_live_out, preallocated_temp, total, fragmentation;
};

// XLA:TPU compile-time memory: "Used U of C hbm. Exceeded hbm capacity by E." and the breakdown.
struct TpuMemory {
  std::string space;  // "hbm", "vmem"
  std::optional<PrintedSize> used, capacity, exceeded, total_usage, reserved, program, arguments;
  std::optional<PrintedSize> largest_allocation;  // the first "Size:" of "Largest program allocations"
};

struct OomMessage {
  OomMessageKind kind = OomMessageKind::kCudaRaw;
  std::string framework;  // "pytorch", "jax", "tensorflow", "cuda", "nccl", "ggml", "mxnet", "torch7",
                          // "paddle", "theano", "onnxruntime", …
  std::string backend;    // as printed: "CUDA", "XPU", "HIP", "MPS", "TPU", "GPU", "host"
  std::string device;     // as printed: "GPU 0", "device 0", "device ordinal 0", "GPU_0_bfc", "hbm"
  std::size_t line = 0;   // 1-based line of the input where the message starts
  std::size_t offset = 0; // byte offset of that line
  std::size_t end_line = 0;  // last line that belongs to it
  std::string text;       // the message's own text (its lines, at most a few kB)

  // The numbers, each as printed (absent when the message does not give it).
  std::optional<PrintedSize> request;          // R: "Tried to allocate", "Requested", the tensor's bytes
  bool request_at_least = false;               // "Tried to allocate more than 1EB memory": R is a bound
  std::optional<PrintedSize> total;            // T: total capacity (PyTorch), "Total memory" (TF)
  std::optional<PrintedSize> free;             // F: free on the device at report time
  std::optional<PrintedSize> allocated;        // A: allocated by the framework ("already allocated",
                                               //    "allocated by PyTorch", MPS allocated, async "Currently allocated",
                                               //    CuPy "allocated so far": what its pool holds)
  std::optional<PrintedSize> reserved;         // Rv: "reserved in total by PyTorch"
  std::optional<PrintedSize> unallocated;      // U: "reserved by PyTorch but unallocated", old "cached"
  std::optional<PrintedSize> process_total;    // P: "this process has X memory in use"
  std::vector<OtherProcess> other_processes;   // "Process N has X memory in use"
  std::optional<PrintedSize> allowed;          // "X allowed;" (memory fraction), MPS "max allowed",
                                               // async "PyTorch limit" when one is set, CuPy "limit set to"
  std::optional<PrintedSize> device_limit;     // async "Device limit"
  std::optional<PrintedSize> limit_available;  // ONNX Runtime "Available memory of A": the room its arena has
                                               // left under its memory limit (gpu_mem_limit), not the device's
  std::optional<PrintedSize> memory_limit;     // Paddle "FLAGS_gpu_memory_limit_mb is N": the limit set
  std::optional<PrintedSize> other_allocations;// MPS "other allocations"
  std::optional<PrintedSize> private_pools;    // "with X allocated in private pools (e.g., CUDA Graphs)"
  bool private_pool_request = false;           // MPS "Tried to allocate X on private pool"
  std::optional<XlaBufferStats> xla;
  std::optional<TpuMemory> tpu;
  std::vector<std::uint64_t> tensor_shape;     // TF: the dims of "shape[…]"
  std::string tensor_dtype;                    // TF: "float", "half", …
  std::string allocator;                       // TF: "GPU_0_bfc"
  std::vector<PrintedSize> attempts;           // TF: every size of a retry cascade (×0.9), in order
  std::string error_code;                      // "CUDA_ERROR_OUT_OF_MEMORY", "CUBLAS_STATUS_ALLOC_FAILED", "2"
  // Which process of a multi-process run printed it, where its line says ("rank 3" from torchrun's
  // "[rank3]:", "rank 3" from "[default3]:", "pid 1234" from Ray's "(… pid=1234)"); "" when none.
  std::string origin;
  // The same failure printed again later (a re-raise, a wrapper printing the exception once more,
  // the log line and then the traceback): the 1-based lines where each repeat starts. The message
  // was printed 1 + repeat_lines.size() times; it is one failure.
  std::vector<std::size_t> repeat_lines;

  // What the message says about settings (hints already followed or not).
  std::string hint_env;                        // the variable the message's hint names:
                                               // "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", …
  bool hint_max_split_size = false;            // "try setting max_split_size_mb"
  bool hint_expandable_segments = false;       // "try setting …=expandable_segments:True"
  bool hint_watermark = false;                 // MPS "Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0"
  bool unlimited_fraction = false;             // async: "PyTorch limit (set by user-supplied memory
                                               // fraction)" printed as the no-limit value
  bool tf_report_tensor_hint = false;          // "add report_tensor_allocations_upon_oom"
  bool cublas_init_failed = false;             // TF: a "failed to create cublas handle" line just before

  // Numbers the message gives that fragscope cannot take (over 4 EiB, a bad shape): each
  // "line N: …". The number itself is left empty.
  std::vector<std::string> problems;
};

// TensorFlow's BFC allocator also writes "Allocator (GPU_0_bfc) ran out of memory trying to allocate
// 1.02GiB … The caller indicates that this is not a failure, but may mean that there could be
// performance gains if more memory were available." when the caller can do without the memory (a
// convolution then picks an algorithm with a smaller workspace): a warning, no error and no dump.
struct TfNotAFailure {
  std::size_t line = 0;  // 1-based
  std::string allocator;  // "GPU_0_bfc"
  std::optional<PrintedSize> request;
};

// What one scan of a text finds: the messages, and TensorFlow's "not a failure" warnings.
struct OomMessageScan {
  std::vector<OomMessage> messages;
  std::vector<TfNotAFailure> not_failures;
};

// Every out-of-memory message in `text`, in order, each failure once: a message that repeats an
// earlier one — same wording, framework, backend, device, origin and every number, or for a message
// without numbers the same text — is that failure printed again (OomMessage::repeat_lines), not
// another. Never throws on any input; linear in its size (repeats are found by a hash of the key).
std::vector<OomMessage> FindOomMessages(std::string_view text);
// The same scan, with the "not a failure" warnings it passes.
OomMessageScan ScanOomMessages(std::string_view text);
// True when `head` holds a TensorFlow "not a failure" warning (cheap: substring searches).
bool HoldsTfNotAFailure(std::string_view head);

// True when `head` holds an out-of-memory message of a wording above. Cheap (substring searches
// over the head, no parse); the evidence registry asks it after every other reader.
bool LooksLikeOomMessage(std::string_view head);

// "1.69 GiB" → bytes and tolerance; also "0 bytes", "48.5KiB", "21.95G", "7.43 GB", "3206250496B".
// nullopt when it is not a size or is more than kMaxBytes (`*oversize` is then set true).
std::optional<PrintedSize> ParsePrintedSize(std::string_view text, bool* oversize = nullptr);

}  // namespace fragscope::traces
