// JSON <-> OpAttrs. The per-op dispatch is generated from op_list.inc; each attrs struct has
// one field table below (C++ has no reflection), checked at compile time to exist for every
// op of the list.
#include "conformance/attrs_json.h"

#include <cmath>
#include <concepts>
#include <limits>
#include <set>
#include <string>
#include <type_traits>

namespace longrun::conformance {
namespace {

using nlohmann::json;

template <class T>
struct IsNoAttrs : std::false_type {};
template <OpKind K>
struct IsNoAttrs<NoAttrs<K>> : std::true_type {};

// ---- field tables: for_each_field(attrs, f) calls f("name", attrs.name) for every field ----
#define LR_FIELDS(Type, ...)                             \
  template <class Self, class F>                         \
  requires std::same_as<std::remove_const_t<Self>, Type> \
  void for_each_field(Self& a, F&& f) { __VA_ARGS__ }
#define LR_F(field) f(#field, a.field);

template <class Self, class F>
requires IsNoAttrs<std::remove_const_t<Self>>::value void for_each_field(Self&, F&&) {}

LR_FIELDS(MatmulAttrs,
          LR_F(trans_a) LR_F(trans_b) LR_F(alpha) LR_F(beta) LR_F(has_bias) LR_F(has_c) LR_F(activation))
LR_FIELDS(ScaleAttrs, LR_F(scale) LR_F(shift))
LR_FIELDS(CastAttrs, LR_F(to))
LR_FIELDS(SoftmaxAttrs, LR_F(axis) LR_F(scale) LR_F(causal) LR_F(has_mask))
LR_FIELDS(LayerNormAttrs, LR_F(eps))
LR_FIELDS(DctAttrs, LR_F(axis) LR_F(keep))
LR_FIELDS(IdctAttrs, LR_F(axis) LR_F(n))
LR_FIELDS(SpectralFilterAttrs, LR_F(axis) LR_F(keep) LR_F(method))
LR_FIELDS(TopkMaskAttrs, LR_F(k) LR_F(axis) LR_F(output_scores))
LR_FIELDS(TopkIndicesAttrs, LR_F(k) LR_F(axis))
LR_FIELDS(MatmulTopkAttrs, LR_F(k) LR_F(alpha) LR_F(causal) LR_F(has_key_mask) LR_F(has_row_k))
LR_FIELDS(CummaxAttrs, LR_F(axis) LR_F(reverse) LR_F(exclusive))
LR_FIELDS(CumsumAttrs, LR_F(axis) LR_F(reverse) LR_F(exclusive))
LR_FIELDS(SegmentMaxAttrs, LR_F(axis) LR_F(segment))
LR_FIELDS(UpsampleNearestAttrs, LR_F(axis) LR_F(size))
LR_FIELDS(ConcatAttrs, LR_F(axis))
LR_FIELDS(SliceAttrs, LR_F(axis) LR_F(start) LR_F(end) LR_F(step))
LR_FIELDS(PadAttrs, LR_F(axis) LR_F(before) LR_F(after) LR_F(value))
LR_FIELDS(TransposeAttrs, LR_F(rank) LR_F(perm))
LR_FIELDS(ReshapeAttrs, LR_F(rank) LR_F(dims))
LR_FIELDS(RollAttrs, LR_F(axis) LR_F(shift))
LR_FIELDS(AttentionAttrs, LR_F(scale) LR_F(causal) LR_F(has_key_padding_mask) LR_F(with_lse))
LR_FIELDS(SparseAttentionAttrs, LR_F(scale))
LR_FIELDS(AxialAttentionAttrs,
          LR_F(scale) LR_F(segment) LR_F(causal) LR_F(has_key_padding_mask) LR_F(has_direct_state))
#undef LR_F
#undef LR_FIELDS

// Every attrs type of the op list must have a field table.
struct AnyField {
  template <class T>
  void operator()(const char*, T&) const {}
};
#define LR_OP(name, Attrs)                                    \
  static_assert(                                              \
      requires(Attrs & a) { for_each_field(a, AnyField{}); }, \
      "tests/conformance/attrs_json.cpp: no field table for " #Attrs " (" #name ")");
#include "longrun/ops/op_list.inc"

// ---- enums as strings ----
constexpr std::pair<Activation, const char*> kActivations[] = {{Activation::none, "none"},
                                                               {Activation::relu, "relu"},
                                                               {Activation::gelu, "gelu"},
                                                               {Activation::gelu_tanh, "gelu_tanh"}};
constexpr std::pair<SpectralMethod, const char*> kMethods[] = {{SpectralMethod::automatic, "automatic"},
                                                               {SpectralMethod::fft, "fft"},
                                                               {SpectralMethod::matrix, "matrix"}};

template <class E, size_t N>
Status read_enum(const json& j, E& out, const std::pair<E, const char*> (&table)[N],
                 const std::string& field) {
  if (j.is_string())
    for (const auto& [value, name] : table)
      if (j.get<std::string>() == name) {
        out = value;
        return {};
      }
  return invalid_argument("field '" + field + "': unknown value " + j.dump());
}
template <class E, size_t N>
json write_enum(E value, const std::pair<E, const char*> (&table)[N]) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return nullptr;
}

// ---- scalar readers ----
Status read_int64(const json& j, int64_t& out, const std::string& field) {
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
      return invalid_argument("field '" + field + "': " + j.dump() + " exceeds int64");
    out = int64_t(u);
    return {};
  }
  if (!j.is_number_integer())
    return invalid_argument("field '" + field + "': expected an integer, found " + j.dump());
  out = j.get<int64_t>();
  return {};
}

Status read_field(const json& j, bool& out, const std::string& field) {
  if (!j.is_boolean())
    return invalid_argument("field '" + field + "': expected true/false, found " + j.dump());
  out = j.get<bool>();
  return {};
}
Status read_field(const json& j, int64_t& out, const std::string& field) { return read_int64(j, out, field); }
Status read_field(const json& j, int& out, const std::string& field) {
  int64_t v = 0;
  LR_RETURN_IF_ERROR(read_int64(j, v, field));
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    return invalid_argument("field '" + field + "': " + j.dump() + " does not fit int");
  out = int(v);
  return {};
}
Status read_field(const json& j, float& out, const std::string& field) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "inf")
      out = std::numeric_limits<float>::infinity();
    else if (s == "-inf")
      out = -std::numeric_limits<float>::infinity();
    else if (s == "nan")
      out = std::numeric_limits<float>::quiet_NaN();
    else
      return invalid_argument("field '" + field +
                              "': expected a number, \"inf\", \"-inf\" or \"nan\", found " + s);
    return {};
  }
  if (!j.is_number()) return invalid_argument("field '" + field + "': expected a number, found " + j.dump());
  const double d = j.get<double>();
  if (double(float(d)) != d)  // the golden was computed with the f32 value: it must be exact
    return invalid_argument("field '" + field + "': " + j.dump() + " is not exactly representable as f32");
  out = float(d);
  return {};
}
Status read_field(const json& j, DType& out, const std::string& field) {
  std::optional<DType> t = j.is_string() ? parse_dtype(j.get<std::string>()) : std::nullopt;
  if (!t) return invalid_argument("field '" + field + "': unknown dtype " + j.dump());
  out = *t;
  return {};
}
Status read_field(const json& j, Activation& out, const std::string& field) {
  return read_enum(j, out, kActivations, field);
}
Status read_field(const json& j, SpectralMethod& out, const std::string& field) {
  return read_enum(j, out, kMethods, field);
}
template <class T>
Status read_field(const json& j, std::array<T, kMaxRank>& out, const std::string& field) {
  if (!j.is_array() || j.size() > size_t(kMaxRank))
    return invalid_argument("field '" + field + "': expected an array of at most " +
                            std::to_string(kMaxRank) + " integers, found " + j.dump());
  out.fill(T{});
  for (size_t i = 0; i < j.size(); ++i) LR_RETURN_IF_ERROR(read_field(j[i], out[i], field));
  return {};
}

json write_field(bool v) { return v; }
json write_field(int v) { return v; }
json write_field(int64_t v) { return v; }
json write_field(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return double(v);
}
json write_field(DType v) { return std::string(dtype_name(v)); }
json write_field(Activation v) { return write_enum(v, kActivations); }
json write_field(SpectralMethod v) { return write_enum(v, kMethods); }
template <class T>
json write_field(const std::array<T, kMaxRank>& v) {
  return json(std::vector<T>(v.begin(), v.end()));
}

template <class A>
Result<OpAttrs> parse(const json& j, std::string_view op) {
  const std::string where = "attrs of " + std::string(op) + ": ";
  if (!j.is_object()) return invalid_argument(where + "expected a JSON object, found " + j.dump());
  A a{};
  std::set<std::string> known;
  size_t array_len = 0;
  Status st;
  for_each_field(a, [&](const char* name, auto& field) {
    known.insert(name);
    auto it = j.find(name);
    if (!st.ok() || it == j.end()) return;
    if (it->is_array()) array_len = it->size();
    st = read_field(*it, field, name);
  });
  if (!st.ok()) return invalid_argument(where + st.message());
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) return invalid_argument(where + "unknown field '" + key + "'");
  if constexpr (requires { a.rank; }) {  // perm/dims carry exactly `rank` entries
    if (a.rank < 0 || a.rank > kMaxRank || array_len != size_t(a.rank))
      return invalid_argument(where + "rank " + std::to_string(a.rank) + " does not match an array of " +
                              std::to_string(array_len) + " entries");
  }
  return OpAttrs{a};
}

}  // namespace

Result<OpAttrs> attrs_from_json(OpKind kind, const json& j) {
  switch (kind) {
    // clang-format off
#define LR_OP(name, Attrs) case OpKind::name: return parse<Attrs>(j, #name);
#include "longrun/ops/op_list.inc"
    // clang-format on
  }
  return invalid_argument("attrs_from_json: unknown op kind " + std::to_string(int(kind)));
}

json attrs_to_json(const OpAttrs& attrs) {
  return std::visit(
      [](const auto& a) -> json {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, std::monostate>) {
          return nullptr;
        } else {
          json j = json::object();
          for_each_field(a, [&](const char* name, const auto& field) { j[name] = write_field(field); });
          if constexpr (requires { a.rank; }) {
            for (const char* arr : {"perm", "dims"})
              if (j.contains(arr)) j[arr].get_ref<json::array_t&>().resize(size_t(std::max(0, a.rank)));
          }
          return j;
        }
      },
      attrs);
}

}  // namespace longrun::conformance
