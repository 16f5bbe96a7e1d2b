// Batch encoding and embedding pooling (longrun/models/text.h).
#include "longrun/models/text.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace longrun {

Result<std::optional<Tokenizer>> file_tokenizer(const SafetensorsFile& file) {
  const auto it = file.metadata().find(std::string(kTokenizerMetadataKey));
  if (it == file.metadata().end()) return std::optional<Tokenizer>{};
  auto tokenizer = Tokenizer::from_metadata(it->second);
  if (!tokenizer.ok())
    return tokenizer.status().with_context(file.path() + ": metadata '" + std::string(kTokenizerMetadataKey) +
                                           "'");
  return std::optional<Tokenizer>(std::move(tokenizer).value());
}

Result<TokenBatch> encode_batch(const Tokenizer& tokenizer, std::span<const std::string> texts,
                                const BatchEncodeOptions& o) {
  if (texts.empty()) return invalid_argument("encode_batch: no texts");
  if (o.max_length < 0)
    return invalid_argument("encode_batch: max_length must be >= 0, found " + std::to_string(o.max_length));
  if (o.pad_to_max_length && o.max_length == 0)
    return invalid_argument("encode_batch: padding to max_length needs max_length > 0");
  if (!o.names.empty() && o.names.size() != texts.size())
    return invalid_argument("encode_batch: " + std::to_string(o.names.size()) + " names for " +
                            std::to_string(texts.size()) + " texts");
  TokenBatch batch;
  std::vector<std::vector<int64_t>> rows;
  rows.reserve(texts.size());
  size_t longest = 0;
  for (size_t b = 0; b < texts.size(); ++b) {
    const auto context = [&] { return o.names.empty() ? "text " + std::to_string(b) : o.names[b]; };
    std::vector<int64_t> row;
    int64_t untruncated = 0;
    if (o.max_length > 0) {
      auto r = tokenizer.encode_truncated(texts[b], o.max_length, o.add_special_tokens);
      if (!r.ok()) return r.status().with_context(context());
      row = std::move(r->ids);
      untruncated = r->untruncated_length;
    } else {
      auto r = tokenizer.encode(texts[b], o.add_special_tokens);
      if (!r.ok()) return r.status().with_context(context());
      row = std::move(r).value();
      untruncated = int64_t(row.size());
    }
    longest = std::max(longest, row.size());
    batch.lengths.push_back(int64_t(row.size()));
    batch.untruncated_lengths.push_back(untruncated);
    rows.push_back(std::move(row));
  }
  if (o.pad_to_max_length) longest = size_t(o.max_length);
  const int64_t dims[] = {int64_t(rows.size()), int64_t(longest)};
  LR_ASSIGN_OR_RETURN(batch.input_ids, Tensor::zeros(DType::i64, dims));
  LR_ASSIGN_OR_RETURN(batch.attention_mask, Tensor::zeros(DType::i64, dims));
  const int64_t pad = tokenizer.pad_id().value_or(0);
  int64_t* ids = batch.input_ids.data<int64_t>();
  int64_t* mask = batch.attention_mask.data<int64_t>();
  for (size_t b = 0; b < rows.size(); ++b) {
    for (size_t i = 0; i < longest; ++i) {
      const bool real = i < rows[b].size();
      ids[b * longest + i] = real ? rows[b][i] : pad;
      mask[b * longest + i] = real ? 1 : 0;
    }
  }
  return batch;
}

Result<Pooling> parse_pooling(std::string_view name) {
  if (name == "mean") return Pooling::mean;
  if (name == "cls") return Pooling::cls;
  if (name == "max") return Pooling::max;
  return invalid_argument("pooling: expected 'mean', 'cls' or 'max', found '" + std::string(name) + "'");
}

namespace {

bool mask_at(const TensorView& m, int64_t i) {
  switch (m.desc.dtype()) {
    case DType::u8: return m.ptr<const uint8_t>()[i] != 0;
    case DType::i32: return m.ptr<const int32_t>()[i] != 0;
    case DType::i64: return m.ptr<const int64_t>()[i] != 0;
    case DType::f32: return m.ptr<const float>()[i] != 0.0f;
    default: return false;
  }
}

}  // namespace

Result<Tensor> pool_embeddings(const TensorView& h, const TensorView* mask, Pooling pooling, bool normalize) {
  const TensorDesc& d = h.desc;
  if (d.dtype() != DType::f32 || d.rank() != 3 || !d.is_contiguous())
    return invalid_argument("pooling: last_hidden_state: expected contiguous f32 [B, N, D], found " +
                            d.to_string());
  const int64_t batch = d.dim(0), n = d.dim(1), width = d.dim(2);
  if (mask != nullptr) {
    const TensorDesc& m = mask->desc;
    const bool dtype_ok = m.dtype() == DType::u8 || m.dtype() == DType::i32 || m.dtype() == DType::i64 ||
                          m.dtype() == DType::f32;
    if (!dtype_ok || m.rank() != 2 || m.dim(0) != batch || m.dim(1) != n || !m.is_contiguous())
      return invalid_argument("pooling: attention_mask: expected contiguous u8/i32/i64/f32 [" +
                              std::to_string(batch) + ", " + std::to_string(n) + "], found " + m.to_string());
  }
  const int64_t dims[] = {batch, width};
  LR_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(DType::f32, dims));
  const float* src = h.ptr<const float>();
  std::vector<double> acc(static_cast<size_t>(width));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t count = 0;
    if (pooling == Pooling::max)
      std::fill(acc.begin(), acc.end(), -std::numeric_limits<double>::infinity());
    else
      std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t r = 0; r < n; ++r) {
      if (mask != nullptr && !mask_at(*mask, b * n + r)) continue;
      if (pooling == Pooling::cls && count > 0) break;
      ++count;
      const float* row = src + (b * n + r) * width;
      for (int64_t c = 0; c < width; ++c)
        acc[size_t(c)] =
            pooling == Pooling::max ? std::max(acc[size_t(c)], double(row[c])) : acc[size_t(c)] + row[c];
    }
    if (count == 0)
      return invalid_argument("pooling: row " + std::to_string(b) + " has no tokens (attention_mask all 0)");
    if (pooling == Pooling::mean)
      for (double& v : acc) v /= double(count);
    double norm = 1.0;
    if (normalize) {
      norm = 0.0;
      for (double v : acc) norm += v * v;
      norm = std::sqrt(norm);
      if (norm == 0.0) norm = 1.0;
    }
    float* dst = out.data<float>() + b * width;
    for (int64_t c = 0; c < width; ++c) dst[c] = float(acc[size_t(c)] / norm);
  }
  return out;
}

}  // namespace longrun
