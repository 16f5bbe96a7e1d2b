// lr_model_*: Model::load plus the file identity that later detects a changed file.
//
// Why: the model's weights are memory-mapped. A file truncated after load would make the
// mapping fault (SIGBUS) on first touch, and a rewritten one would feed unvalidated bytes to
// the kernels. So the (device, inode, size, mtime) seen around the load is kept, and
// lr_session_create / every run compare it with the file on disk (one stat, ~1 us) and
// refuse with LR_FORMAT_ERROR when it differs. A change between that check and the run's
// reads is not caught (no lock on the file); the check targets the common cases: a model
// re-exported in place, a copy still being written, a file removed.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "c_api_internal.h"

namespace longrun::capi {

Result<FileIdentity> file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return io_error("'" + path + "': cannot stat: " + std::strerror(errno));
  FileIdentity id;
  id.device = st.st_dev;
  id.inode = st.st_ino;
  id.size = int64_t(st.st_size);
  id.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + int64_t(st.st_mtim.tv_nsec);
  return id;
}

Status check_unchanged(const std::string& path, const FileIdentity& loaded) {
  auto now = file_identity(path);
  if (!now.ok())
    return format_error("model file '" + path + "' changed since it was loaded (" + now.status().message() +
                        "); load it again");
  if (*now == loaded) return {};
  std::string what;
  if (now->device != loaded.device || now->inode != loaded.inode)
    what = "replaced by another file";
  else if (now->size != loaded.size)
    what = "size " + std::to_string(loaded.size) + " -> " + std::to_string(now->size) + " bytes";
  else
    what = "modified (mtime changed)";
  return format_error("model file '" + path + "' changed since it was loaded (" + what + "); load it again");
}

}  // namespace longrun::capi

using longrun::capi::fail;
using longrun::capi::guarded;

extern "C" {

lr_status lr_model_load(const char* path, lr_model** out_model) {
  return guarded("lr_model_load", [&] {
    LR_CAPI_REQUIRE(path, "lr_model_load");
    LR_CAPI_REQUIRE(out_model, "lr_model_load");
    auto before = longrun::capi::file_identity(path);
    if (!before.ok()) return fail(before.status().with_context("lr_model_load"));
    auto model = longrun::Model::load(path);
    if (!model.ok()) return fail(model.status());
    // The identity must be the same after the load, or the file changed while it was read.
    if (auto st = longrun::capi::check_unchanged(path, *before); !st.ok()) return fail(st);
    auto m = std::make_unique<lr_model>();
    m->model = std::move(model).value();
    m->identity = *before;
    m->input_names = m->model->input_names();
    m->output_names = m->model->output_names();
    *out_model = m.release();
    return LR_OK;
  });
}

void lr_model_free(lr_model* model) { delete model; }

lr_status lr_model_arch(const lr_model* model, const char** out_arch) {
  return guarded("lr_model_arch", [&] {
    LR_CAPI_REQUIRE(model, "lr_model_arch");
    LR_CAPI_REQUIRE(out_arch, "lr_model_arch");
    *out_arch = model->model->arch().c_str();
    return LR_OK;
  });
}

static lr_status name_at(const char* function, const std::vector<std::string>* names, size_t index,
                         const char** out_name) {
  return guarded(function, [&] {
    LR_CAPI_REQUIRE(out_name, function);
    if (index >= names->size())
      return fail(LR_OUT_OF_RANGE, std::string(function) + ": index " + std::to_string(index) + " >= count " +
                                       std::to_string(names->size()));
    *out_name = (*names)[index].c_str();
    return LR_OK;
  });
}

lr_status lr_model_num_inputs(const lr_model* model, size_t* out_count) {
  return guarded("lr_model_num_inputs", [&] {
    LR_CAPI_REQUIRE(model, "lr_model_num_inputs");
    LR_CAPI_REQUIRE(out_count, "lr_model_num_inputs");
    *out_count = model->input_names.size();
    return LR_OK;
  });
}

lr_status lr_model_input_name(const lr_model* model, size_t index, const char** out_name) {
  if (model == nullptr)
    return longrun::capi::fail_noexcept(LR_INVALID_ARGUMENT, "lr_model_input_name", "model is NULL");
  return name_at("lr_model_input_name", &model->input_names, index, out_name);
}

lr_status lr_model_num_outputs(const lr_model* model, size_t* out_count) {
  return guarded("lr_model_num_outputs", [&] {
    LR_CAPI_REQUIRE(model, "lr_model_num_outputs");
    LR_CAPI_REQUIRE(out_count, "lr_model_num_outputs");
    *out_count = model->output_names.size();
    return LR_OK;
  });
}

lr_status lr_model_output_name(const lr_model* model, size_t index, const char** out_name) {
  if (model == nullptr)
    return longrun::capi::fail_noexcept(LR_INVALID_ARGUMENT, "lr_model_output_name", "model is NULL");
  return name_at("lr_model_output_name", &model->output_names, index, out_name);
}

}  // extern "C"
