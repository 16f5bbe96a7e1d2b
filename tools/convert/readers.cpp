#include "readers.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "flax_source.h"
#include "longrun/safetensors.h"
#include "longrun/text_file.h"
#include "strict_json.h"
#include "torch_checkpoint.h"

namespace longrun::convert {
namespace fs = std::filesystem;
namespace {

void add_safetensors(const std::shared_ptr<SafetensorsFile>& f, SourceCheckpoint* out) {
  for (const SafetensorsEntry& e : f->tensors()) {
    SourceTensor t;
    t.name = e.name;
    t.dtype = from_runtime_dtype(e.desc.dtype());
    t.sizes.assign(e.desc.dims().begin(), e.desc.dims().end());
    t.strides.assign(t.sizes.size(), 1);
    for (size_t i = t.sizes.size(); i-- > 1;) t.strides[i - 1] = t.strides[i] * t.sizes[i];
    t.storage = e.bytes;
    t.storage_id = f->path() + "#" + e.name;
    out->tensors.push_back(std::move(t));
  }
  for (const auto& [k, v] : f->metadata()) out->metadata[k] = v;
  out->owners.push_back(f);
}

// Every shard is read, every tensor must come from exactly the shard the map names, and every
// shard tensor be mapped.
Status read_sharded(const std::string& index_path, const ReadOptions& options, SourceCheckpoint* out) {
  LR_ASSIGN_OR_RETURN(std::string text, read_json_file(index_path, kMaxIndexBytes));
  LR_ASSIGN_OR_RETURN(ShardIndex index, parse_shard_index(text, index_path));
  const std::map<std::string, std::string>& where = index.where;
  const std::set<std::string>& shards = index.shards;
  const fs::path dir = fs::path(index_path).parent_path();
  std::set<std::string> seen;
  for (const std::string& s : shards) {
    SourceCheckpoint part;
    LR_RETURN_IF_ERROR(read_checkpoint_file((dir / s).string(), options, &part));
    for (SourceTensor& t : part.tensors) {
      auto it = where.find(t.name);
      if (it == where.end() || it->second != s)
        return format_error(index_path + ": shard '" + s + "' holds tensor '" + t.name +
                            "', which the weight_map " +
                            (it == where.end() ? "does not list" : "assigns to '" + it->second + "'"));
      if (!seen.insert(t.name).second)
        return format_error(index_path + ": tensor '" + t.name + "' appears twice");
      out->tensors.push_back(std::move(t));
    }
    for (auto& o : part.owners) out->owners.push_back(std::move(o));
    for (auto& n : part.notes) out->notes.push_back(s + ": " + n);
    out->files.insert(out->files.end(), part.files.begin(), part.files.end());
    if (out->format.empty()) out->format = part.format + "-sharded";
  }
  for (const auto& [name, s] : where)
    if (!seen.count(name))
      return format_error(index_path + ": tensor '" + name + "' is not in its shard '" + s + "'");
  return {};
}

Status read_hf_dir(const std::string& dir, const ReadOptions& options, SourceCheckpoint* out) {
  const fs::path d(dir);
  if (fs::exists(d / "config.json")) {
    LR_ASSIGN_OR_RETURN(out->config_json, read_json_file((d / "config.json").string()));
  }
  for (const char* name : {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                           "pytorch_model.bin.index.json"}) {
    const fs::path p = d / name;
    if (!fs::exists(p)) continue;
    const std::string s = p.string();
    Status st =
        s.ends_with(".index.json") ? read_sharded(s, options, out) : read_checkpoint_file(s, options, out);
    if (!st.ok()) return st;
    out->format = "hf-dir/" + out->format;
    return {};
  }
  return not_found(dir +
                   ": no model.safetensors, model.safetensors.index.json, pytorch_model.bin or "
                   "pytorch_model.bin.index.json in this directory");
}

}  // namespace

Result<std::string> read_json_file(const std::string& path, size_t max_bytes) {
  return longrun::read_text_file(path, max_bytes);
}

Result<ShardIndex> parse_shard_index(std::string_view text, const std::string& label) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    return format_error(label + ": not a JSON object with a \"weight_map\" object");
  ShardIndex index;
  for (const auto& [name, shard] : j["weight_map"].items()) {
    if (!shard.is_string())
      return format_error(label + ": weight_map[" + json::quote_for_message(name) + "] is not a string");
    const std::string s = shard.get<std::string>();
    if (s.empty() || s.find('/') != std::string::npos || s.find("..") != std::string::npos)
      return format_error(label + ": shard name " + json::quote_for_message(s) +
                          " is not a file in the same folder");
    index.where[name] = s;
    index.shards.insert(s);
  }
  return index;
}

Status read_checkpoint_bytes(std::span<const std::byte> bytes, const std::string& label,
                             const ReadOptions& options, SourceCheckpoint* out) {
  if (looks_like_torch_zip(bytes)) return read_torch_zip(bytes, label, options, out);
  if (looks_like_torch_legacy(bytes)) return read_torch_legacy(bytes, label, options, out);
  if (looks_like_flax_msgpack(bytes)) return read_flax_checkpoint(bytes, label, out);
  if (bytes.size() >= 9) {
    auto f = SafetensorsFile::parse(bytes, nullptr, label);
    if (!f.ok()) return f.status();
    add_safetensors(*f, out);
    out->format = "safetensors";
    return {};
  }
  return format_error(label +
                      ": not a torch.save zip, a legacy torch.save file, Flax msgpack or safetensors");
}

Status read_checkpoint_file(const std::string& path, const ReadOptions& options, SourceCheckpoint* out) {
  LR_ASSIGN_OR_RETURN(auto mapped, map_file(path));
  auto [bytes, owner] = mapped;
  out->files.push_back(path);
  if (!looks_like_torch_zip(bytes) && !looks_like_torch_legacy(bytes) && !looks_like_flax_msgpack(bytes)) {
    // safetensors: the runtime's reader (maps the file itself, zero-copy, fully validated)
    LR_ASSIGN_OR_RETURN(auto f, SafetensorsFile::open(path));
    add_safetensors(f, out);
    out->format = "safetensors";
    return {};
  }
  out->owners.push_back(owner);
  return read_checkpoint_bytes(bytes, path, options, out);
}

Result<SourceCheckpoint> read_checkpoint(const std::string& path, const std::string& from,
                                         const ReadOptions& options) {
  SourceCheckpoint out;
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  if (!is_dir && !fs::exists(path, ec)) return not_found("input '" + path + "' does not exist");
  if (from == "hf" && !is_dir)
    return invalid_argument("--from hf expects a directory, '" + path + "' is a file");
  if (is_dir) {
    LR_RETURN_IF_ERROR(read_hf_dir(path, options, &out));
  } else if (from == "flax") {  // no sniffing: any first key is allowed
    LR_ASSIGN_OR_RETURN(auto mapped, map_file(path));
    out.files.push_back(path);
    out.owners.push_back(mapped.second);
    LR_RETURN_IF_ERROR(read_flax_checkpoint(mapped.first, path, &out));
  } else if (path.ends_with(".index.json")) {
    LR_RETURN_IF_ERROR(read_sharded(path, options, &out));
  } else {
    LR_RETURN_IF_ERROR(read_checkpoint_file(path, options, &out));
  }
  if (from == "pytorch" && !out.format.starts_with("pytorch") && !out.format.starts_with("hf-dir/pytorch"))
    return invalid_argument("--from pytorch, but '" + path + "' is " + out.format);
  if (from == "flax" && out.format != "flax-msgpack")
    return invalid_argument("--from flax, but '" + path + "' is " + out.format);
  if (from == "safetensors" && out.format.find("safetensors") == std::string::npos)
    return invalid_argument("--from safetensors, but '" + path + "' is " + out.format);
  return out;
}

}  // namespace longrun::convert
