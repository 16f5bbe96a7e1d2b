// lr_session_*: sessions over a model, planning and running on named caller tensors.
#include <algorithm>
#include <cstdio>

#include "c_api_internal.h"

using longrun::capi::fail;
using longrun::capi::guarded;

namespace longrun::capi {
namespace {

void log(const lr_session_options& o, lr_log_level level, const std::string& message) {
  if (o.log) o.log(o.log_user, level, message.c_str());
}

static_assert(int(LR_LOG_DEBUG) == int(LogLevel::debug) && int(LR_LOG_ERROR) == int(LogLevel::error),
              "lr_log_level must mirror LogLevel");

// The C log callback as the C++ session's log (the C++ session logs new shapes and failed
// runs; the C API adds the session line).
void bridge_log(lr_session_options* o) {
  if (!o->log) return;
  o->session.log = [fn = o->log, user = o->log_user](LogLevel level, const std::string& message) {
    fn(user, static_cast<lr_log_level>(level), message.c_str());
  };
}

// The C++ session for this set of input names, created on first use.
Result<Session*> variant_for(lr_session& s, std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto& v : s.variants)
    if (v.names == names) return v.session.get();
  LR_ASSIGN_OR_RETURN(auto session, s.model->create_session(s.options.session, names));
  s.variants.push_back({std::move(names), std::move(session)});
  return s.variants.back().session.get();
}

// Validates the caller's input arrays and returns them as NamedTensorRefs, sorted by name
// (the order of variant_for's sessions).
Result<std::vector<NamedTensorRef>> named_inputs(const lr_session& s, const char* function,
                                                 const char* const* names, const lr_tensor* const* inputs,
                                                 size_t count) {
  const std::string fn(function);
  if (count == 0) return invalid_argument(fn + ": no inputs given");
  if (names == nullptr) return invalid_argument(fn + ": input_names is NULL");
  if (inputs == nullptr) return invalid_argument(fn + ": inputs is NULL");
  const std::vector<std::string> accepted = s.model->input_names();
  std::vector<NamedTensorRef> refs;
  for (size_t i = 0; i < count; ++i) {
    if (names[i] == nullptr) return invalid_argument(fn + ": input_names[" + std::to_string(i) + "] is NULL");
    if (inputs[i] == nullptr)
      return invalid_argument(fn + ": inputs[" + std::to_string(i) + "] ('" + names[i] + "') is NULL");
    const std::string name = names[i];
    if (std::find(accepted.begin(), accepted.end(), name) == accepted.end()) {
      std::string list;
      for (const auto& a : accepted) list += (list.empty() ? "" : ", ") + a;
      return not_found(fn + ": unknown input '" + name + "' (this " + s.model->arch() +
                       " model takes: " + list + ")");
    }
    for (const auto& r : refs)
      if (r.name == name) return invalid_argument(fn + ": input '" + name + "' given twice");
    refs.push_back({name, inputs[i]->view});
  }
  std::sort(refs.begin(), refs.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return refs;
}

std::vector<std::string> names_of(const std::vector<NamedTensorRef>& refs) {
  std::vector<std::string> names;
  for (const auto& r : refs) names.push_back(r.name);
  return names;
}

std::vector<TensorDesc> descs_of(const std::vector<NamedTensorRef>& refs) {
  std::vector<TensorDesc> descs;
  for (const auto& r : refs) descs.push_back(r.view.desc);
  return descs;
}

struct ProgressBridge {
  const lr_session_options* options;
  bool operator()(int done, int total) const {
    return options->progress(options->progress_user, done, total) != 0;
  }
};

lr_status run_session(const char* function, lr_session* session, const char* const* input_names,
                      const lr_tensor* const* inputs, size_t num_inputs, const char* const* output_names,
                      lr_tensor** outputs, size_t num_outputs, void* arena, size_t arena_bytes) {
  LR_CAPI_REQUIRE(session, function);
  const std::string fn(function);
  if (num_outputs > 0 && (output_names == nullptr || outputs == nullptr))
    return fail(LR_INVALID_ARGUMENT, fn + ": output_names or outputs is NULL");
  for (size_t i = 0; i < num_outputs; ++i)
    if (output_names[i] == nullptr)
      return fail(LR_INVALID_ARGUMENT, fn + ": output_names[" + std::to_string(i) + "] is NULL");
  if (arena == nullptr && arena_bytes > 0) return fail(LR_INVALID_ARGUMENT, fn + ": arena is NULL");
  auto st = check_unchanged(session->model->path(), session->identity);
  if (!st.ok()) return fail(st);
  auto refs = named_inputs(*session, function, input_names, inputs, num_inputs);
  if (!refs.ok()) return fail(refs.status());
  auto cxx = variant_for(*session, names_of(*refs));
  if (!cxx.ok()) return fail(cxx.status().with_context(fn));
  RunHooks hooks;
  if (session->options.progress) hooks.progress = ProgressBridge{&session->options};
  auto result = (*cxx)->run(*refs, session->options.progress ? &hooks : nullptr,
                            {static_cast<std::byte*>(arena), arena ? arena_bytes : 0});
  if (!result.ok()) return fail(result.status());  // the C++ session logged it
  // Every requested output or none.
  std::vector<std::unique_ptr<lr_tensor>> made(num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) {
    const std::string want = output_names[i];
    auto it =
        std::find_if(result->begin(), result->end(), [&](const NamedTensor& t) { return t.name == want; });
    if (it == result->end()) {
      std::string list;
      for (const auto& t : *result) list += (list.empty() ? "" : ", ") + t.name;
      return fail(LR_NOT_FOUND, fn + ": unknown output '" + want + "' (outputs: " + list + ")");
    }
    made[i] = std::make_unique<lr_tensor>();
    made[i]->owned = it->tensor;  // shares the bytes; several names may ask for one output
    made[i]->view = it->tensor.view();
  }
  for (size_t i = 0; i < num_outputs; ++i) outputs[i] = made[i].release();
  return LR_OK;
}

}  // namespace
}  // namespace longrun::capi

extern "C" {

lr_status lr_session_create(const lr_model* model, const lr_session_options* options,
                            lr_session** out_session) {
  return guarded("lr_session_create", [&] {
    LR_CAPI_REQUIRE(model, "lr_session_create");
    LR_CAPI_REQUIRE(out_session, "lr_session_create");
    if (auto st = longrun::capi::check_unchanged(model->model->path(), model->identity); !st.ok())
      return fail(st);
    auto s = std::make_unique<lr_session>();
    s->model = model->model;
    s->identity = model->identity;
    if (options) s->options = *options;
    longrun::capi::bridge_log(&s->options);
    // The session for the required inputs now, so a bad backend/ISA/thread count fails here.
    auto first = longrun::capi::variant_for(*s, s->model->required_inputs());
    if (!first.ok()) return fail(first.status().with_context("lr_session_create"));
    s->description = (*first)->backend().description();
    longrun::capi::log(s->options, LR_LOG_INFO,
                       "session on " + s->description + " for " + s->model->arch() + " model '" +
                           s->model->path() + "'" +
                           (s->options.session.deterministic ? " (deterministic)" : ""));
    *out_session = s.release();
    return LR_OK;
  });
}

void lr_session_free(lr_session* session) { delete session; }

lr_status lr_session_backend(const lr_session* session, const char** out_description) {
  return guarded("lr_session_backend", [&] {
    LR_CAPI_REQUIRE(session, "lr_session_backend");
    LR_CAPI_REQUIRE(out_description, "lr_session_backend");
    *out_description = session->description.c_str();
    return LR_OK;
  });
}

namespace {

// Plans these inputs on the session (cached) and returns the shape's memory report.
longrun::Result<longrun::MemoryReport> plan_report(const char* call, lr_session* session,
                                                   const char* const* input_names,
                                                   const lr_tensor* const* inputs, size_t num_inputs) {
  LR_RETURN_IF_ERROR(longrun::capi::check_unchanged(session->model->path(), session->identity));
  auto refs = longrun::capi::named_inputs(*session, call, input_names, inputs, num_inputs);
  if (!refs.ok()) return refs.status();
  auto cxx = longrun::capi::variant_for(*session, longrun::capi::names_of(*refs));
  if (!cxx.ok()) return cxx.status().with_context(call);
  auto report = (*cxx)->memory_report(longrun::capi::descs_of(*refs));
  if (!report.ok()) return report.status().with_context(call);
  return report;
}

}  // namespace

lr_status lr_session_plan(lr_session* session, const char* const* input_names, const lr_tensor* const* inputs,
                          size_t num_inputs, size_t* out_arena_bytes) {
  return guarded("lr_session_plan", [&] {
    LR_CAPI_REQUIRE(session, "lr_session_plan");
    LR_CAPI_REQUIRE(out_arena_bytes, "lr_session_plan");
    auto report = plan_report("lr_session_plan", session, input_names, inputs, num_inputs);
    if (!report.ok()) return fail(report.status());
    *out_arena_bytes = size_t(report->arena_bytes);
    return LR_OK;
  });
}

lr_status lr_session_plan_memory(lr_session* session, const char* const* input_names,
                                 const lr_tensor* const* inputs, size_t num_inputs, lr_memory_need* out) {
  return guarded("lr_session_plan_memory", [&] {
    LR_CAPI_REQUIRE(session, "lr_session_plan_memory");
    LR_CAPI_REQUIRE(out, "lr_session_plan_memory");
    auto report = plan_report("lr_session_plan_memory", session, input_names, inputs, num_inputs);
    if (!report.ok()) return fail(report.status());
    out->arena_bytes = uint64_t(report->arena_bytes);
    out->workspace_bytes = uint64_t(report->workspace_bytes);
    out->weight_copy_bytes = uint64_t(report->weight_bytes_copied);
    return LR_OK;
  });
}

lr_status lr_session_run(lr_session* session, const char* const* input_names, const lr_tensor* const* inputs,
                         size_t num_inputs, const char* const* output_names, lr_tensor** outputs,
                         size_t num_outputs) {
  return guarded("lr_session_run", [&] {
    return longrun::capi::run_session("lr_session_run", session, input_names, inputs, num_inputs,
                                      output_names, outputs, num_outputs, nullptr, 0);
  });
}

lr_status lr_session_run_with_arena(lr_session* session, const char* const* input_names,
                                    const lr_tensor* const* inputs, size_t num_inputs,
                                    const char* const* output_names, lr_tensor** outputs, size_t num_outputs,
                                    void* arena, size_t arena_bytes) {
  return guarded("lr_session_run_with_arena", [&] {
    return longrun::capi::run_session("lr_session_run_with_arena", session, input_names, inputs, num_inputs,
                                      output_names, outputs, num_outputs, arena, arena_bytes);
  });
}

}  // extern "C"
