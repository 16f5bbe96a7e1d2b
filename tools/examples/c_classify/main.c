/* A C99 program on longrun's C API, built against the INSTALLED library with pkg-config:
 *   cc -std=c99 main.c $(pkg-config --cflags --libs longrun) -o c_classify
 *   ./c_classify MODEL.safetensors 23 26 3 21 10 26 15
 * Loads a converted model, runs one sequence of token ids (input_ids [1, N], i64) in a
 * session whose arena the program provides (lr_session_plan -> bytes), and prints the
 * logits. Every call's lr_status is checked; failures print lr_last_error(). */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <longrun/longrun.h>
#include <stdio.h>
#include <stdlib.h>

static int check(lr_status status, const char* what) {
  if (status == LR_OK) return 0;
  fprintf(stderr, "c_classify: %s: %s\n", what, lr_last_error());
  return 1;
}

static void log_line(void* user, lr_log_level level, const char* message) {
  (void)user;
  if (level >= LR_LOG_INFO) fprintf(stderr, "[longrun] %s\n", message);
}

int main(int argc, char** argv) {
  lr_model* model = NULL;
  lr_session_options* options = NULL;
  lr_session* session = NULL;
  lr_tensor* ids = NULL;
  lr_tensor* logits = NULL;
  int64_t* values = NULL;
  void* arena = NULL;
  int rc = 1;
  if (argc < 3) {
    fprintf(stderr, "usage: c_classify MODEL.safetensors ID [ID ...]\n");
    return 2;
  }
  const int64_t n = argc - 2;
  values = (int64_t*)malloc((size_t)n * sizeof(int64_t));
  if (!values) return 1;
  for (int64_t i = 0; i < n; ++i) values[i] = strtoll(argv[i + 2], NULL, 10);

  printf("longrun %s\n", lr_version());
  if (check(lr_model_load(argv[1], &model), "load")) goto done;
  if (check(lr_session_options_create(&options), "options")) goto done;
  if (check(lr_session_options_set_threads(options, 1), "threads")) goto done;
  if (check(lr_session_options_set_external_arena(options, 1), "external arena")) goto done;
  if (check(lr_session_options_set_log_callback(options, log_line, NULL), "log callback")) goto done;
  if (check(lr_session_create(model, options, &session), "session")) goto done;

  const int64_t dims[2] = {1, n};
  if (check(lr_tensor_create(LR_I64, dims, 2, values, LR_BORROW, &ids), "input tensor")) goto done;
  const char* input_names[1] = {"input_ids"};
  const lr_tensor* inputs[1] = {ids};
  size_t arena_bytes = 0;
  if (check(lr_session_plan(session, input_names, inputs, 1, &arena_bytes), "plan")) goto done;
  if (posix_memalign(&arena, 64, arena_bytes ? arena_bytes : 64) != 0) {
    fprintf(stderr, "c_classify: cannot allocate the %zu-byte arena\n", arena_bytes);
    goto done;
  }
  const char* output_names[1] = {"logits"};
  if (check(lr_session_run_with_arena(session, input_names, inputs, 1, output_names, &logits, 1, arena,
                                      arena_bytes),
            "run"))
    goto done;

  int64_t out_dims[2] = {0, 0};
  const void* data = NULL;
  if (check(lr_tensor_dims(logits, out_dims, 2), "dims") || check(lr_tensor_data(logits, &data), "data"))
    goto done;
  printf("arena %zu bytes\nlogits:", arena_bytes);
  for (int64_t c = 0; c < out_dims[1]; ++c) printf(" %.6f", (double)((const float*)data)[c]);
  printf("\n");
  rc = 0;
done:
  lr_tensor_free(logits);
  lr_tensor_free(ids);
  lr_session_free(session);
  lr_session_options_free(options);
  lr_model_free(model);
  free(arena);
  free(values);
  return rc;
}
