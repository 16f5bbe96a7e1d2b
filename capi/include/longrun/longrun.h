/* longrun C API: load a native model file, create sessions, run them on caller tensors.
 *
 * C99, no C++ types; the same concepts as the C++ API (longrun::Model, Session, Tensor,
 * Status), with opaque handles instead of RAII:
 *   lr_model    <-> std::shared_ptr<const longrun::Model>   (lr_model_load / lr_model_free)
 *   lr_session  <-> std::unique_ptr<longrun::Session>s      (lr_session_create / _free)
 *   lr_tensor   <-> longrun::Tensor (owning) or TensorView  (lr_tensor_create / _free)
 *   lr_status   <-> longrun::StatusCode (same values, same order); lr_last_error() is
 *                   Status::to_string() of the calling thread's last failed call.
 *
 * Errors: every function that can fail returns an lr_status; LR_OK is 0. On failure the
 * calling thread's lr_last_error() names what was wrong (argument, input, file, expected vs
 * found). No C++ exception ever leaves a function of this API. Out-parameters are written
 * only on success.
 *
 * Threads: a model may be shared by any number of sessions on any threads. One session's
 * runs are serialised (a run waits for the previous one); use one session per thread for
 * parallel runs. Tensors are plain values: free them from any thread, once.
 */
#ifndef LONGRUN_LONGRUN_H_
#define LONGRUN_LONGRUN_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define LR_API
#elif defined(__GNUC__)
#define LR_API __attribute__((visibility("default")))
#else
#define LR_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lr_status {
  LR_OK = 0,
  LR_INVALID_ARGUMENT = 1, /* malformed argument: null pointer, shape, dtype, name, option */
  LR_OUT_OF_RANGE = 2,     /* index or size outside what is allowed (e.g. sequence too long) */
  LR_NOT_FOUND = 3,        /* a named thing (file, input, output, backend) does not exist */
  LR_UNSUPPORTED = 4,      /* valid request this build/backend/device cannot do */
  LR_FORMAT_ERROR = 5,     /* a file's bytes are not what its format promises, or it changed */
  LR_IO_ERROR = 6,         /* the operating system refused (open, read, mmap, stat) */
  LR_OVERFLOW = 7,         /* size arithmetic would overflow */
  LR_OUT_OF_MEMORY = 8,    /* an allocation failed or the session's memory limit was hit */
  LR_CANCELLED = 9,        /* the progress callback asked to stop */
  LR_INTERNAL = 10,        /* a bug in longrun: please report */
  LR_STATUS_MAX_ENUM = 0x7fffffff
} lr_status;

/* The *_MAX_ENUM members are not values: they make every int a valid value of the type
 * (C++ callers and the library may then read any code a C caller passes and reject it). */
typedef enum lr_dtype {
  LR_F32 = 0,
  LR_F16 = 1,
  LR_BF16 = 2,
  LR_I32 = 3,
  LR_I64 = 4,
  LR_U8 = 5,
  LR_I8 = 6, /* a quantized weight's values (per-channel f32 scales beside them): no model input
                or output is i8, so a run refuses an LR_I8 input like any other wrong dtype */
  LR_DTYPE_MAX_ENUM = 0x7fffffff
} lr_dtype;

/* How lr_tensor_create treats the caller's bytes. */
typedef enum lr_ownership {
  LR_COPY = 0,   /* the tensor copies the bytes; the caller's buffer may be reused at once */
  LR_BORROW = 1, /* the tensor points at the caller's bytes, which must stay valid and unchanged
                    until lr_tensor_free; no copy (inputs are read-only to longrun) */
  LR_OWNERSHIP_MAX_ENUM = 0x7fffffff
} lr_ownership;

typedef enum lr_log_level {
  LR_LOG_DEBUG = 0,
  LR_LOG_INFO = 1,
  LR_LOG_WARNING = 2,
  LR_LOG_ERROR = 3,
  LR_LOG_MAX_ENUM = 0x7fffffff
} lr_log_level;

typedef struct lr_model lr_model;
typedef struct lr_session lr_session;
typedef struct lr_session_options lr_session_options;
typedef struct lr_tensor lr_tensor;

/* Receives one line (no newline) from the session: which backend it got, each new input
 * shape it plans (arena bytes), each failed run. Called on the thread of the API call. */
typedef void (*lr_log_fn)(void* user, lr_log_level level, const char* message);
/* Called after each graph node of a run with (nodes done, total). Return 0 to cancel: the run
 * stops before the next node and returns LR_CANCELLED; the session stays usable. */
typedef int (*lr_progress_fn)(void* user, int done, int total);

/* ---- library ---------------------------------------------------------------------------- */

/* "0.1.0". */
LR_API const char* lr_version(void);
/* Multi-line text: version, build options, CPU ISA levels, hardware threads, backends and
 * CUDA devices (or why there are none). Owned by the library; valid until the next call
 * on the same thread. */
LR_API const char* lr_system_info(void);
/* The message of the calling thread's last failed call ("" if none). Valid until the next
 * failing call on this thread. */
LR_API const char* lr_last_error(void);
/* "ok", "invalid_argument", ... */
LR_API const char* lr_status_name(lr_status status);

/* ---- models ----------------------------------------------------------------------------- */

/* Maps and validates a native longrun model file (longrun-convert output). The file's
 * identity (device, inode, size, modification time) is recorded: a session created or run
 * after the file was truncated, rewritten or replaced fails with LR_FORMAT_ERROR instead of
 * reading changed bytes. */
LR_API lr_status lr_model_load(const char* path, lr_model** out_model);
/* Releases the caller's reference; sessions keep the model alive. NULL is a no-op. */
LR_API void lr_model_free(lr_model* model);
/* Architecture name ("fourier-lra", ...); owned by the model. */
LR_API lr_status lr_model_arch(const lr_model* model, const char** out_arch);
/* Inputs the model accepts (required first) and the outputs it produces, in graph order. */
LR_API lr_status lr_model_num_inputs(const lr_model* model, size_t* out_count);
LR_API lr_status lr_model_input_name(const lr_model* model, size_t index, const char** out_name);
LR_API lr_status lr_model_num_outputs(const lr_model* model, size_t* out_count);
LR_API lr_status lr_model_output_name(const lr_model* model, size_t index, const char** out_name);

/* ---- session options -------------------------------------------------------------------- */

LR_API lr_status lr_session_options_create(lr_session_options** out_options);
LR_API void lr_session_options_free(lr_session_options* options);
/* "cpu" (default), "reference" or "cuda". */
LR_API lr_status lr_session_options_set_backend(lr_session_options* options, const char* backend);
/* Worker threads of the cpu backend: 1 (default) .. 1024, or 0 = all hardware threads the
 * process may use (oneTBB's default concurrency, which honours the process's CPU affinity
 * mask and cgroup limits), or with an affinity list, one thread per listed CPU. */
LR_API lr_status lr_session_options_set_threads(lr_session_options* options, int threads);
/* Thread affinity (cpu backend): pin the session's threads to cpus[0..count). While a
 * kernel runs in parallel, the thread in pool slot i (slot 0 is the thread that called
 * lr_session_run) is pinned to cpus[i % count]; each thread's previous CPU mask is restored
 * when it leaves the pool, so the caller's thread is not left pinned after the call. More
 * threads than CPUs share them. count = 0 (default) clears the list: no pinning to a list
 * (lr_session_options_set_auto_affinity then decides). Checked at
 * lr_session_create: an id that is negative, listed twice or not in the CPUs this process
 * may use (sched_getaffinity) fails with LR_INVALID_ARGUMENT naming the CPU and the allowed
 * set; LR_UNSUPPORTED for the reference and cuda backends, or where the OS cannot pin
 * (non-Linux). Outputs do not depend on affinity (only on the thread count). */
LR_API lr_status lr_session_options_set_affinity(lr_session_options* options, const int* cpus, size_t count);
/* cpu backend: after each parallel section the pool's worker threads busy-wait for `us`
 * microseconds (0 .. 1000000) instead of going back to sleep, so a kernel that starts within
 * that window runs on every thread at once. Waking a sleeping worker takes tens of
 * microseconds to milliseconds on a VM, longer than many kernels of a short run. Costs up
 * to threads - 1 CPUs busy for that long after every parallel section. 0 (default): workers
 * sleep when idle. Outputs do not depend on it. On VMs set an affinity list too: unpinned, a
 * spinning worker was measured sharing the caller's vCPU, slower than one thread. A value
 * over 1000000 fails with
 * LR_OUT_OF_RANGE; a non-zero value with the reference or cuda backend fails at
 * lr_session_create with LR_UNSUPPORTED. */
LR_API lr_status lr_session_options_set_spin_us(lr_session_options* options, uint32_t us);
/* cpu backend, no affinity list: with enabled = 1 (default), a session whose threads are as
 * many as the CPUs this process may use (threads = 0, or that count) pins each parallel
 * section's threads while it runs: the thread that called lr_session_run to the CPU it is on
 * (it is never moved) and each worker to another of those CPUs; every thread's previous mask
 * is restored after. Unpinned, a woken worker was measured landing on the caller's own vCPU,
 * slower than one thread. enabled = 0: no pinning without a list. Other backends ignore it.
 * Outputs do not depend on it. */
LR_API lr_status lr_session_options_set_auto_affinity(lr_session_options* options, int enabled);
/* cpu backend: force "scalar", "avx2" or "avx512" (default: the best this CPU has). */
LR_API lr_status lr_session_options_set_isa(lr_session_options* options, const char* isa);
/* The number format: "f32" (default), "bf16" (cpu backend on AVX2 and up, reference backend:
 * linear layers from bf16-rounded inputs and weights) or "int8" (cpu backend, AVX2 and up:
 * linear layers on the int8 GEMM); every other op stays f32 (docs/usage.md#precision). The
 * reference backend's "bf16" and "int8" are the formats' scalar emulations, the oracles of
 * the cpu's. An unknown name is LR_INVALID_ARGUMENT here; a precision the backend or CPU
 * lacks ("bf16" and "int8" on the cuda backend or below AVX2) is LR_UNSUPPORTED at
 * lr_session_create. */
LR_API lr_status lr_session_options_set_precision(lr_session_options* options, const char* precision);
/* Determinism switch. Outputs are always bitwise reproducible for the same build, ISA level
 * and thread count (README: "Determinism contract"). With deterministic = 1 the session
 * also fixes the two things that otherwise depend on the machine: the ISA level defaults to
 * "avx2" (or "scalar" on a CPU without AVX2) instead of the best one, and threads = 0 is
 * refused (LR_INVALID_ARGUMENT at lr_session_create) instead of meaning "all hardware
 * threads" (threads = 0 with an affinity list is allowed: one thread per listed CPU). So
 * one binary and one options set run the same kernels with the same work split
 * on every AVX2 machine. (Cross-machine identity is still not promised: FFTW, used by the
 * long DCTs, picks its own SIMD codelets per CPU.) */
LR_API lr_status lr_session_options_set_deterministic(lr_session_options* options, int deterministic);
/* When > 0: an input shape whose arena + kernel workspaces + the weight copies its
 * preparation makes (the cpu backend's prepacked GEMM weights; a copy already made for an
 * earlier shape or another session of the model is shared and not counted again) would
 * exceed this many bytes fails with LR_OUT_OF_MEMORY: the arena is not allocated, workspaces
 * and copies are freed again, and the session stays usable for shapes that fit.
 * 0 (default): no limit. */
LR_API lr_status lr_session_options_set_memory_limit(lr_session_options* options, uint64_t bytes);
/* 1: the caller provides the arena for intermediates on every run (lr_session_plan says
 * how many bytes; lr_session_run_with_arena). Host backends only (reference, cpu). */
LR_API lr_status lr_session_options_set_external_arena(lr_session_options* options, int external);
LR_API lr_status lr_session_options_set_log_callback(lr_session_options* options, lr_log_fn fn, void* user);
LR_API lr_status lr_session_options_set_progress_callback(lr_session_options* options, lr_progress_fn fn,
                                                          void* user);

/* ---- sessions --------------------------------------------------------------------------- */

/* options may be NULL (defaults). The session keeps the model alive. */
LR_API lr_status lr_session_create(const lr_model* model, const lr_session_options* options,
                                   lr_session** out_session);
LR_API void lr_session_free(lr_session* session);
/* "cpu (avx2, 1 thread)"; owned by the session. */
LR_API lr_status lr_session_backend(const lr_session* session, const char** out_description);

/* Plans these inputs (builds, plans and prepares the shape once; cached) and returns the
 * bytes of caller arena a run of that shape needs (0 is possible). */
LR_API lr_status lr_session_plan(lr_session* session, const char* const* input_names,
                                 const lr_tensor* const* inputs, size_t num_inputs, size_t* out_arena_bytes);

/* What planning a shape costs (lr_session_plan_memory). The session's memory limit compares
 * arena_bytes (0 with external_arena) + workspace_bytes + weight_copy_bytes to its bytes. */
typedef struct lr_memory_need {
  uint64_t arena_bytes;       /* intermediates: the caller's arena with external_arena */
  uint64_t workspace_bytes;   /* kernel scratch the backend reserved for the shape */
  uint64_t weight_copy_bytes; /* weight copies made planning it (cpu: prepacked GEMM weights;
                                 0 when an earlier shape or session already made them) */
} lr_memory_need;
/* Plans these inputs like lr_session_plan and reports the memory it took. */
LR_API lr_status lr_session_plan_memory(lr_session* session, const char* const* input_names,
                                        const lr_tensor* const* inputs, size_t num_inputs,
                                        lr_memory_need* out);

/* Runs on named inputs (each once; every required model input present) and returns the
 * requested outputs by name: outputs[i] receives a new tensor for output_names[i], which
 * the caller frees with lr_tensor_free. On failure no output is written. */
LR_API lr_status lr_session_run(lr_session* session, const char* const* input_names,
                                const lr_tensor* const* inputs, size_t num_inputs,
                                const char* const* output_names, lr_tensor** outputs, size_t num_outputs);
/* Same, for a session with external_arena: arena is at least lr_session_plan()'s bytes and
 * 64-byte aligned, and no other run uses it at the same time. */
LR_API lr_status lr_session_run_with_arena(lr_session* session, const char* const* input_names,
                                           const lr_tensor* const* inputs, size_t num_inputs,
                                           const char* const* output_names, lr_tensor** outputs,
                                           size_t num_outputs, void* arena, size_t arena_bytes);

/* ---- tensors ---------------------------------------------------------------------------- */

/* A contiguous row-major tensor of dtype and dims[0..rank) (rank <= 6, dims >= 0) over
 * `data` (nbytes = product(dims) * dtype size; data may be NULL only when that is 0). */
LR_API lr_status lr_tensor_create(lr_dtype dtype, const int64_t* dims, size_t rank, const void* data,
                                  lr_ownership ownership, lr_tensor** out_tensor);
LR_API void lr_tensor_free(lr_tensor* tensor);
LR_API lr_status lr_tensor_dtype(const lr_tensor* tensor, lr_dtype* out_dtype);
LR_API lr_status lr_tensor_rank(const lr_tensor* tensor, size_t* out_rank);
/* Copies min(rank, capacity) dims into dims. */
LR_API lr_status lr_tensor_dims(const lr_tensor* tensor, int64_t* dims, size_t capacity);
LR_API lr_status lr_tensor_nbytes(const lr_tensor* tensor, size_t* out_nbytes);
/* The tensor's bytes (read-only; valid until lr_tensor_free). */
LR_API lr_status lr_tensor_data(const lr_tensor* tensor, const void** out_data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LONGRUN_LONGRUN_H_ */
