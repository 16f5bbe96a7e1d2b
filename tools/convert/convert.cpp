#include "convert.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "longrun/checked_math.h"
#include "longrun/models/model.h"
#include "longrun/safetensors.h"
#include "official_config.h"
#include "registry.h"

namespace longrun::convert {
namespace {

float load_float(const std::byte* p, SourceDType t) {
  switch (t) {
    case SourceDType::f64: {
      double d;
      std::memcpy(&d, p, 8);
      return float(d);
    }
    case SourceDType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case SourceDType::f16:
    case SourceDType::bf16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return t == SourceDType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
    default: return 0.0f;
  }
}

std::string shape_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

void progress_bar(size_t done, size_t total) {
  const int width = 40;
  const int filled = total ? int(done * width / total) : width;
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu tensors", filled, "########################################",
               width - filled, "", done, total);
  if (done == total) std::fprintf(stderr, "\n");
}

// f32 zero tensors standing in for parameters a source format does not have (deques: the
// pointers handed out stay valid).
struct ZeroTensors {
  std::deque<SourceTensor> tensors;
  std::deque<std::vector<std::byte>> storage;

  Result<const SourceTensor*> add(const std::string& name, const std::vector<int64_t>& dims) {
    int64_t n = 0, bytes = 0;
    if (!checked_product(dims, &n) || !checked_mul(n, int64_t(4), &bytes))
      return invalid_argument("tensor '" + name + "': shape " + shape_string(dims) + " too large");
    storage.emplace_back(size_t(bytes));
    SourceTensor& z = tensors.emplace_back();
    z.name = name;
    z.dtype = SourceDType::f32;
    z.sizes = dims;
    z.strides.assign(dims.size(), 1);
    for (size_t k = dims.size(); k-- > 1;) z.strides[k - 1] = z.strides[k] * dims[k];
    z.storage = storage.back();
    return &z;
  }
};

}  // namespace

std::vector<std::byte> convert_floats(std::span<const std::byte> in, SourceDType from, DType to) {
  const size_t in_item = size_t(source_dtype_size(from));
  const size_t n = in.size() / in_item;
  std::vector<std::byte> out(n * dtype_size(to));
  for (size_t i = 0; i < n; ++i) {
    const float f = load_float(in.data() + i * in_item, from);
    if (to == DType::f32) {
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const uint16_t h = to == DType::f16 ? f32_to_f16(f) : f32_to_bf16(f);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

Result<std::string> merge_config(const std::string& config_text, const std::vector<std::string>& sets) {
  nlohmann::json j = nlohmann::json::object();
  if (!config_text.empty()) {
    j = nlohmann::json::parse(config_text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return invalid_argument("--config: not a JSON object");
  }
  for (const std::string& s : sets) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) return invalid_argument("--set '" + s + "': expected key=value");
    const std::string key = s.substr(0, eq), value = s.substr(eq + 1);
    nlohmann::json v = nlohmann::json::parse(value, nullptr, false);
    j[key] = v.is_discarded() ? nlohmann::json(value) : v;
  }
  return j.dump();
}

namespace {

bool all_zero(const SourceTensor& t) {
  const std::vector<std::byte> raw = materialize(t);
  const size_t item = size_t(source_dtype_size(t.dtype));
  for (size_t i = 0; i + item <= raw.size(); i += item)
    if (load_float(raw.data() + i, t.dtype) != 0.0f) return false;
  return true;
}

// One layout's mapping of a source: the tensor for every entry of the family's parameter
// table, or the problems that prevent it.
struct Plan {
  const SourceLayout* layout = nullptr;
  ConvertSummary summary;
  std::unique_ptr<models::Architecture> arch;
  std::vector<models::ParamSpec> table;
  std::vector<const SourceTensor*> chosen;
  std::vector<std::string> problems;
  std::deque<SourceTensor> derived;  // transposed views standing in for tied tensors
  ZeroTensors zeros;
};

// Maps `src` with `layout`; an error only when the config itself does not parse (tensor
// problems are collected in the plan).
Result<std::unique_ptr<Plan>> plan_mapping(const SourceCheckpoint& src, const ConvertOptions& options,
                                           const models::Family& family, const SourceLayout& layout) {
  auto plan = std::make_unique<Plan>();
  plan->layout = &layout;
  ConvertSummary& summary = plan->summary;
  std::vector<std::string>& problems = plan->problems;
  summary.layout = std::string(layout.name);
  // Source names without the layout's wrappers, renamed; ignored tensors drop out here.
  std::vector<std::pair<const SourceTensor*, std::string>> kept;  // (tensor, native name)
  for (const SourceTensor& t : src.tensors) {
    std::string_view name = t.name;
    for (std::string_view w : layout.wrappers)
      if (name.starts_with(w)) name.remove_prefix(w.size());
    const IgnoreRule* ignored = nullptr;
    for (const IgnoreRule& r : layout.ignore)
      if (t.name.starts_with(r.prefix) || name.starts_with(r.prefix)) ignored = &r;
    if (ignored) {
      summary.ignored.push_back(t.name + ": " + std::string(ignored->reason));
      continue;
    }
    std::string native(name);
    if (layout.rename) {
      auto renamed = layout.rename(name, options.config_json);
      if (!renamed.ok()) {
        problems.push_back(renamed.status().message());
        continue;
      }
      if (!renamed->zero_only.empty()) {
        if (!source_dtype_is_float(t.dtype) || !all_zero(t))
          problems.push_back("tensor '" + t.name + "': " + renamed->zero_only +
                             " is expected to be all zeros, found non-zero values (not representable)");
        else
          summary.ignored.push_back(t.name + ": " + renamed->zero_only);
        continue;
      }
      native = renamed->name;
    }
    kept.emplace_back(&t, std::string(layout.add_prefix) + native);
  }
  std::string config_json = options.config_json;
  if (layout.complete_config) {
    SourceShapes shapes;
    for (const auto& k : kept) shapes.emplace_back(k.second, k.first->sizes);
    auto completed = layout.complete_config(config_json, shapes);
    if (!completed.ok()) return completed.status().with_context("config for '" + options.arch + "'");
    config_json = *completed;
  }
  auto arch = family.parse_config(config_json);
  if (!arch.ok()) return arch.status().with_context("config for '" + options.arch + "'");
  plan->arch = std::move(*arch);
  plan->table = plan->arch->parameters();
  const std::vector<models::ParamSpec>& table = plan->table;

  std::unordered_map<std::string, size_t> by_name;
  for (size_t i = 0; i < table.size(); ++i) by_name.emplace(table[i].name, i);
  std::vector<const SourceTensor*>& chosen = plan->chosen;
  chosen.assign(table.size(), nullptr);
  // Shape and dtype of `t` as the table's entry `i`: an empty string when it fits.
  auto misfit = [&](const SourceTensor& t, size_t i) -> std::string {
    if (t.sizes != table[i].dims)
      return "tensor '" + t.name + "': expected shape " + shape_string(table[i].dims) + ", found " +
             shape_string(t.sizes);
    if (!source_dtype_is_float(t.dtype))
      return "tensor '" + t.name + "': expected a float dtype, found " +
             std::string(source_dtype_name(t.dtype));
    return {};
  };
  std::vector<std::pair<const SourceTensor*, const TiedCopyRule*>> copies;

  for (const auto& [tp, name] : kept) {
    const SourceTensor& t = *tp;
    const TiedCopyRule* copy = nullptr;
    if (!by_name.count(name))
      for (const TiedCopyRule& r : layout.tied_copies)
        if (r.copy == name &&
            (!copy || (!by_name.count(std::string(copy->target)) && by_name.count(std::string(r.target)))))
          copy = &r;
    if (copy) {
      copies.emplace_back(&t, copy);
      continue;
    }
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      problems.push_back("unexpected tensor '" + t.name + "' " + shape_string(t.sizes) + " (not in the " +
                         options.arch + " parameter table nor on the ignore list)");
      continue;
    }
    const models::ParamSpec& p = table[it->second];
    if (chosen[it->second]) {
      problems.push_back("tensor '" + p.name + "' appears twice (as '" + chosen[it->second]->name +
                         "' and '" + t.name + "')");
      continue;
    }
    if (std::string m = misfit(t, it->second); !m.empty()) {
      problems.push_back(m);
      continue;
    }
    chosen[it->second] = &t;
  }
  // Tied copies: dropped when identical to the stored tensor, its stand-in when it is absent.
  for (const auto& [tp, rule] : copies) {
    const SourceTensor& t = *tp;
    auto it = by_name.find(std::string(rule->target));
    if (it == by_name.end()) {  // e.g. the head of a config without one
      problems.push_back("unexpected tensor '" + t.name + "' (a tied copy of '" + std::string(rule->target) +
                         "', which this " + options.arch + " config does not have)");
      continue;
    }
    if (std::string m = misfit(t, it->second); !m.empty()) {
      problems.push_back(m);
      continue;
    }
    const SourceTensor* stored = chosen[it->second];
    if (!stored) {
      chosen[it->second] = &t;
      summary.retied.push_back(std::string(rule->target) + " <- " + t.name);
    } else if (stored->dtype != t.dtype || materialize(*stored) != materialize(t)) {
      problems.push_back("tensor '" + t.name + "' differs from '" + stored->name + "': the " + options.arch +
                         " family ties them (an untied fine-tune cannot be represented)");
    } else {
      summary.ignored.push_back(t.name + ": tied copy of " + std::string(rule->target) + " (identical)");
    }
  }
  ZeroTensors& zeros = plan->zeros;
  for (size_t i = 0; i < table.size(); ++i) {
    if (chosen[i] || std::find(layout.zeros_if_absent.begin(), layout.zeros_if_absent.end(), table[i].name) ==
                         layout.zeros_if_absent.end())
      continue;
    LR_ASSIGN_OR_RETURN(chosen[i], zeros.add(table[i].name, table[i].dims));
    summary.retied.push_back(table[i].name + " <- zeros (" + std::string(layout.name) +
                             " sources have none)");
  }
  for (size_t i = 0; i < table.size(); ++i) {
    if (chosen[i]) continue;
    bool tied = false;
    for (const TieRule& r : layout.ties) {
      if (r.target != table[i].name || tied) continue;
      auto s = by_name.find(std::string(r.source));
      if (s == by_name.end() || !chosen[s->second]) continue;
      std::vector<int64_t> dims = table[s->second].dims;
      if (r.transpose) std::reverse(dims.begin(), dims.end());
      if (dims != table[i].dims || (r.transpose && dims.size() != 2)) continue;
      if (r.transpose) {
        SourceTensor& v = plan->derived.emplace_back(*chosen[s->second]);
        std::reverse(v.sizes.begin(), v.sizes.end());
        std::reverse(v.strides.begin(), v.strides.end());
        chosen[i] = &v;
      } else {
        chosen[i] = chosen[s->second];
      }
      summary.retied.push_back(table[i].name + " <- " + std::string(r.source) +
                               (r.transpose ? " (transposed)" : ""));
      tied = true;
    }
    if (!tied) problems.push_back("missing tensor '" + table[i].name + "' " + shape_string(table[i].dims));
  }
  return plan;
}

std::string problems_message(const SourceCheckpoint& src, const ConvertOptions& options, const Plan& plan) {
  const auto& problems = plan.problems;
  std::string files;  // the file(s) read, so the message names the input
  if (!src.files.empty())
    files = " '" + src.files.front() + "'" +
            (src.files.size() > 1 ? " (and " + std::to_string(src.files.size() - 1) + " more files)" : "");
  std::string msg = "cannot map " + src.format + " checkpoint" + files + " to '" + options.arch +
                    "' (layout " + std::string(plan.layout->name) + "): " + std::to_string(problems.size()) +
                    " problem(s)";
  for (size_t i = 0; i < problems.size() && i < 20; ++i) msg += "\n  " + problems[i];
  if (problems.size() > 20) msg += "\n  ... and " + std::to_string(problems.size() - 20) + " more";
  return msg;
}

}  // namespace

Result<ConvertSummary> convert_checkpoint(const SourceCheckpoint& src, const ConvertOptions& given,
                                          const std::string& out_path) {
  // The official repositories' config keys -> the family's fields (official_config.h), once,
  // before any layout's rename hook or config completion reads the config.
  auto translated = translate_official_config(given.arch, given.config_json);
  if (!translated.ok()) return translated.status().with_context("config for '" + given.arch + "'");
  ConvertOptions options = given;
  options.config_json = translated->config_json;
  const models::Family* family = models::find_family(options.arch);
  if (!family) {
    std::string known;
    for (const std::string& a : model_architectures()) known += (known.empty() ? "" : ", ") + a;
    return unsupported("--arch '" + options.arch + "' is not a known architecture (known: " + known + ")");
  }
  std::vector<const SourceLayout*> candidates;
  if (!options.layout.empty()) {
    const SourceLayout* l = find_layout(options.layout);
    if (!l) return invalid_argument("--layout '" + options.layout + "' is not a known source layout");
    if (std::find(l->archs.begin(), l->archs.end(), options.arch) == l->archs.end())
      return invalid_argument("--layout '" + options.layout + "' does not map to architecture '" +
                              options.arch + "'");
    candidates.push_back(l);
  } else {
    candidates = layouts_for_arch(options.arch);
    if (candidates.empty())
      return unsupported("no source layout maps to architecture '" + options.arch + "' yet");
  }
  // Without --layout the first layout that maps the source cleanly is used. When none does,
  // the default (first) layout's config error is reported if it has one (the config is
  // what to fix), else the problems of the layout with the fewest.
  std::unique_ptr<Plan> best;
  Status default_error, any_error;  // config errors: of the first layout, of any
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto p = plan_mapping(src, options, *family, *candidates[i]);
    if (!p.ok()) {
      if (i == 0) default_error = p.status();
      if (any_error.ok()) any_error = p.status();
      continue;
    }
    if (!best || (*p)->problems.size() < best->problems.size()) best = std::move(*p);
    if (best->problems.empty()) break;
  }
  if (!best || !best->problems.empty()) {
    if (!default_error.ok()) return default_error;
    if (!best) return any_error;
    return format_error(problems_message(src, options, *best));
  }
  Plan& plan = *best;
  const std::vector<models::ParamSpec>& table = plan.table;
  const std::vector<const SourceTensor*>& chosen = plan.chosen;
  ConvertSummary& summary = plan.summary;
  const SourceLayout& layout = *plan.layout;
  summary.config_notes = std::move(translated->notes);

  std::vector<std::vector<std::byte>> buffers(table.size());
  std::vector<SafetensorsWriteEntry> entries;
  for (size_t i = 0; i < table.size(); ++i) {
    const SourceTensor& t = *chosen[i];
    DType to = options.dtype ? *options.dtype : to_runtime_dtype(t.dtype).value_or(DType::f32);
    std::vector<std::byte> raw = materialize(t);
    if (to_runtime_dtype(t.dtype) == to) {
      buffers[i] = std::move(raw);
    } else {
      buffers[i] = convert_floats(raw, t.dtype, to);
      ++summary.dtype_conversions;
    }
    LR_ASSIGN_OR_RETURN(TensorDesc desc, TensorDesc::make(to, table[i].dims));
    entries.push_back({table[i].name, desc, buffers[i]});
    summary.bytes += buffers[i].size();
    if (options.progress) progress_bar(i + 1, table.size());
  }
  summary.mapped = int(table.size());

  auto& m = summary.metadata;
  m["format"] = "pt";
  m["longrun.format"] = "1";
  m["longrun.arch"] = options.arch;
  m["longrun.config"] = plan.arch->config_json();
  m["longrun.converter"] = kConverterVersion;
  m["longrun.source"] = options.source_label + " (layout " + std::string(layout.name) + ")";
  std::string digests;
  for (const auto& [file, hex] : options.source_sha256)
    digests += (digests.empty() ? "" : " ") + file + "=" + hex;
  m["longrun.source_sha256"] = digests;
  if (!options.tokenizer_metadata.empty()) m["longrun.tokenizer"] = options.tokenizer_metadata;
  LR_RETURN_IF_ERROR(write_safetensors(out_path, entries, m));
  return std::move(summary);
}

}  // namespace longrun::convert
