#include "conformance/golden_cases.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "conformance/attrs_json.h"

#ifndef LONGRUN_GOLDEN_DIR
#error "LONGRUN_GOLDEN_DIR must be defined (tests/CMakeLists.txt sets it)"
#endif

namespace longrun::conformance {

std::string golden_path(OpKind op) {
  return std::string(LONGRUN_GOLDEN_DIR) + "/ops/" + std::string(op_name(op)) + ".safetensors";
}

std::optional<OpKind> op_kind_from_name(std::string_view name) {
  for (int i = 0; i < kNumOps; ++i)
    if (op_name(OpKind(i)) == name) return OpKind(i);
  return std::nullopt;
}

Result<GoldenFile> load_golden_file(OpKind op) {
  const std::string path = golden_path(op);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return not_found("no golden file " + path + " (run tests/oracles/make_op_goldens.py)");
  LR_ASSIGN_OR_RETURN(std::shared_ptr<SafetensorsFile> file, SafetensorsFile::open(path));
  const auto it = file->metadata().find("longrun.golden");
  if (it == file->metadata().end()) return format_error(path + ": no 'longrun.golden' metadata");
  const nlohmann::json list = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) return format_error(path + ": 'longrun.golden' is not a JSON list");

  GoldenFile out;
  out.file = file;
  std::set<std::string> names;
  size_t referenced = 0;
  for (const nlohmann::json& c : list) {
    static const std::set<std::string> kKeys = {"name", "op", "attrs", "inputs"};
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string())
      return format_error(path + ": a case without a string 'name': " + c.dump());
    GoldenCase g;
    g.name = c["name"].get<std::string>();
    const std::string where = path + ": case '" + g.name + "': ";
    for (const auto& [key, value] : c.items())
      if (!kKeys.count(key)) return format_error(where + "unknown key '" + key + "'");
    if (!names.insert(g.name).second) return format_error(where + "duplicate case name");
    if (!c.contains("op") || !c["op"].is_string() || c["op"].get<std::string>() != op_name(op))
      return format_error(where + "'op' must be \"" + std::string(op_name(op)) + "\"");
    g.op = op;
    if (!c.contains("inputs") || !c["inputs"].is_number_unsigned())
      return format_error(where + "'inputs' must be a non-negative integer");
    const size_t n_in = c["inputs"].get<size_t>();
    const nlohmann::json attrs = c.contains("attrs") ? c["attrs"] : nlohmann::json::object();
    Result<OpAttrs> a = attrs_from_json(op, attrs);
    if (!a.ok()) return a.status().with_context(path + ": case '" + g.name + "'");
    g.attrs = std::move(a).value();
    for (size_t j = 0; j < n_in; ++j) {
      const std::string tname = g.name + "/in" + std::to_string(j);
      const SafetensorsEntry* e = file->find(tname);
      if (!e) return format_error(where + "missing tensor '" + tname + "'");
      g.inputs.push_back(e);
    }
    g.output = file->find(g.name + "/out0");
    if (!g.output) return format_error(where + "missing tensor '" + g.name + "/out0'");
    referenced += n_in + 1;
    out.cases.push_back(std::move(g));
  }
  if (referenced != file->tensors().size())
    return format_error(path + ": " + std::to_string(file->tensors().size() - referenced) +
                        " tensors are not referenced by any case");
  return out;
}

}  // namespace longrun::conformance
