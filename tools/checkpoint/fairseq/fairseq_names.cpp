// fairseq upgrade rules as a table, a dotted-name pattern matcher, and the planner.
#include "fairseq_names.h"

#include <unordered_map>

#include "longrun/checked_math.h"

namespace longrun::checkpoint::fairseq {
namespace {

using A = RuleAction;

// Sources: fairseq/modules/transformer_layer.py (TransformerEncoderLayer and
// TransformerDecoderLayer upgrade_state_dict_named: layer_norms.{0,1[,2]}),
// fairseq/modules/multihead_attention.py (in_proj_weight/in_proj_bias -> q/k/v_proj),
// fairseq/models/transformer/transformer_{encoder,decoder}.py (embed_positions.weights cache,
// _float_tensor, version, embed_out -> output_projection.weight).
constexpr NameRule kTransformerRules[] = {
    {"**.in_proj_weight", A::split_qkv, {"$1.q_proj.weight", "$1.k_proj.weight", "$1.v_proj.weight"}, ""},
    {"**.in_proj_bias", A::split_qkv, {"$1.q_proj.bias", "$1.k_proj.bias", "$1.v_proj.bias"}, ""},
    {"encoder.layers.*.layer_norms.0.*", A::rename, {"encoder.layers.$1.self_attn_layer_norm.$2"}, ""},
    {"encoder.layers.*.layer_norms.1.*", A::rename, {"encoder.layers.$1.final_layer_norm.$2"}, ""},
    {"decoder.layers.*.layer_norms.0.*", A::rename, {"decoder.layers.$1.self_attn_layer_norm.$2"}, ""},
    {"decoder.layers.*.layer_norms.1.*", A::rename, {"decoder.layers.$1.encoder_attn_layer_norm.$2"}, ""},
    {"decoder.layers.*.layer_norms.2.*", A::rename, {"decoder.layers.$1.final_layer_norm.$2"}, ""},
    {"decoder.embed_out", A::rename, {"decoder.output_projection.weight"}, ""},
    {"**.embed_positions._float_tensor", A::drop, {}, "dummy buffer of sinusoidal position embeddings"},
    {"**.embed_positions.weights", A::drop, {}, "old cache of sinusoidal position embeddings (recomputed)"},
    {"**.version",
     A::drop,
     {},
     "fairseq version buffer (a value < 2 means no final LayerNorm; read it from the file)"},
};

std::vector<std::string_view> segments(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    out.push_back(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

bool match_from(const std::vector<std::string_view>& p, size_t pi, const std::vector<std::string_view>& n,
                size_t ni, std::vector<std::string>& caps) {
  if (pi == p.size()) return ni == n.size();
  if (ni == n.size()) return false;
  if (p[pi] == "**") {
    // One or more segments; the longest capture that lets the rest match.
    for (size_t end = n.size(); end > ni; --end) {
      std::string cap(n[ni]);
      for (size_t k = ni + 1; k < end; ++k) (cap += '.') += n[k];
      caps.push_back(std::move(cap));
      if (match_from(p, pi + 1, n, end, caps)) return true;
      caps.pop_back();
    }
    return false;
  }
  if (p[pi] == "*") {
    caps.emplace_back(n[ni]);
    if (match_from(p, pi + 1, n, ni + 1, caps)) return true;
    caps.pop_back();
    return false;
  }
  return p[pi] == n[ni] && match_from(p, pi + 1, n, ni + 1, caps);
}

std::string substitute(std::string_view target, const std::vector<std::string>& caps) {
  std::string out;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == '$' && i + 1 < target.size() && target[i + 1] >= '1' && target[i + 1] <= '9') {
      const size_t k = size_t(target[i + 1] - '1');
      if (k < caps.size()) out += caps[k];
      ++i;
    } else {
      out += target[i];
    }
  }
  return out;
}

std::string shape_str(std::span<const int64_t> s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// in_proj_weight [3D, D] -> 3 x [D, D]; in_proj_bias [3D] -> 3 x [D].
Result<std::vector<int64_t>> qkv_part_shape(const SourceParam& p) {
  const auto& s = p.shape;
  const bool ok =
      (s.size() == 1 || s.size() == 2) && s[0] > 0 && s[0] % 3 == 0 && (s.size() == 1 || s[1] == s[0] / 3);
  if (!ok)
    return invalid_argument("fairseq tensor '" + p.name +
                            "': a fused q/k/v projection must be [3*D, D] or [3*D], found " + shape_str(s));
  std::vector<int64_t> part = s;
  part[0] = s[0] / 3;
  return part;
}

}  // namespace

std::span<const NameRule> transformer_rules() { return kTransformerRules; }

std::optional<std::vector<std::string>> match_pattern(std::string_view pattern, std::string_view name) {
  std::vector<std::string> caps;
  if (!match_from(segments(pattern), 0, segments(name), 0, caps)) return std::nullopt;
  return caps;
}

Result<std::vector<PlanEntry>> plan_state_dict(std::span<const SourceParam> params,
                                               std::span<const NameRule> rules) {
  std::vector<PlanEntry> plan;
  std::unordered_map<std::string, std::string> producer;  // target -> source
  for (const SourceParam& p : params) {
    PlanEntry e;
    e.source = p.name;
    const NameRule* rule = nullptr;
    std::vector<std::string> caps;
    for (const NameRule& r : rules) {
      if (auto m = match_pattern(r.pattern, p.name)) {
        rule = &r;
        caps = std::move(*m);
        break;
      }
    }
    if (rule == nullptr) {
      e.targets = {p.name};
      e.target_shapes = {p.shape};
    } else if (rule->action == A::drop) {
      e.kind = PlanEntry::Kind::drop;
      e.reason = std::string(rule->reason);
    } else if (rule->action == A::rename) {
      e.kind = PlanEntry::Kind::rename;
      e.targets = {substitute(rule->targets[0], caps)};
      e.target_shapes = {p.shape};
    } else {
      e.kind = PlanEntry::Kind::split_qkv;
      LR_ASSIGN_OR_RETURN(const std::vector<int64_t> part, qkv_part_shape(p));
      for (const std::string_view t : rule->targets) {
        e.targets.push_back(substitute(t, caps));
        e.target_shapes.push_back(part);
      }
    }
    for (const std::string& t : e.targets) {
      const auto [it, inserted] = producer.emplace(t, p.name);
      if (!inserted)
        return invalid_argument("fairseq state dict: tensors '" + it->second + "' and '" + p.name +
                                "' both map to '" + t + "'");
    }
    plan.push_back(std::move(e));
  }
  return plan;
}

Result<std::vector<std::span<const std::byte>>> split_rows(std::span<const std::byte> bytes,
                                                           std::span<const int64_t> shape, size_t elem_size,
                                                           size_t parts, std::string_view name) {
  const std::string who = "fairseq tensor '" + std::string(name) + "'";
  if (shape.empty() || parts == 0 || shape[0] % int64_t(parts) != 0)
    return invalid_argument(who + ": cannot split shape " + shape_str(shape) + " into " +
                            std::to_string(parts) + " equal row blocks");
  int64_t numel = 0;
  uint64_t nbytes = 0;
  if (!checked_product(shape, &numel) || !checked_mul(uint64_t(numel), uint64_t(elem_size), &nbytes))
    return overflow_error(who + ": byte size of shape " + shape_str(shape) + " overflows");
  if (nbytes != bytes.size())
    return invalid_argument(who + ": shape " + shape_str(shape) + " needs " + std::to_string(nbytes) +
                            " bytes, found " + std::to_string(bytes.size()));
  const size_t block = bytes.size() / parts;
  std::vector<std::span<const std::byte>> out;
  for (size_t k = 0; k < parts; ++k) out.push_back(bytes.subspan(k * block, block));
  return out;
}

}  // namespace longrun::checkpoint::fairseq
