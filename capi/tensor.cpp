// lr_tensor_*: caller tensors (copied into a longrun::Tensor or borrowed as a TensorView)
// and the output tensors lr_session_run hands back.
#include <cstring>

#include "c_api_internal.h"

using longrun::capi::fail;
using longrun::capi::guarded;

// lr_dtype mirrors DType code for code, both ways: lr_tensor_create casts an lr_dtype to a
// DType and lr_tensor_dtype casts back.
static_assert(int(LR_F32) == int(longrun::DType::f32) && int(LR_F16) == int(longrun::DType::f16) &&
                  int(LR_BF16) == int(longrun::DType::bf16) && int(LR_I32) == int(longrun::DType::i32) &&
                  int(LR_I64) == int(longrun::DType::i64) && int(LR_U8) == int(longrun::DType::u8) &&
                  int(LR_I8) == int(longrun::DType::i8),
              "lr_dtype must mirror DType");
static_assert(int(LR_I8) + 1 == longrun::kNumDTypes, "every DType needs an lr_dtype code");

extern "C" {

lr_status lr_tensor_create(lr_dtype dtype, const int64_t* dims, size_t rank, const void* data,
                           lr_ownership ownership, lr_tensor** out_tensor) {
  return guarded("lr_tensor_create", [&] {
    LR_CAPI_REQUIRE(out_tensor, "lr_tensor_create");
    if (int(dtype) < 0 || int(dtype) > int(LR_I8))
      return fail(LR_INVALID_ARGUMENT, "lr_tensor_create: unknown dtype code " + std::to_string(int(dtype)) +
                                           " (LR_F32 .. LR_I8)");
    if (ownership != LR_COPY && ownership != LR_BORROW)
      return fail(LR_INVALID_ARGUMENT, "lr_tensor_create: ownership must be LR_COPY or LR_BORROW, found " +
                                           std::to_string(int(ownership)));
    if (rank > size_t(longrun::kMaxRank))
      return fail(LR_INVALID_ARGUMENT, "lr_tensor_create: rank " + std::to_string(rank) + " exceeds " +
                                           std::to_string(longrun::kMaxRank));
    if (rank > 0 && dims == nullptr)
      return fail(LR_INVALID_ARGUMENT, "lr_tensor_create: dims is NULL for rank > 0");
    auto desc = longrun::TensorDesc::make(static_cast<longrun::DType>(int(dtype)), {dims, rank});
    if (!desc.ok()) return fail(desc.status().with_context("lr_tensor_create"));
    const size_t nbytes = size_t(desc->nbytes());
    if (data == nullptr && nbytes > 0)
      return fail(LR_INVALID_ARGUMENT, "lr_tensor_create: data is NULL for " + desc->to_string() + " (" +
                                           std::to_string(nbytes) + " bytes)");
    auto t = std::make_unique<lr_tensor>();
    if (ownership == LR_COPY) {
      auto owned = longrun::Tensor::zeros(*desc);
      if (!owned.ok()) return fail(owned.status().with_context("lr_tensor_create"));
      t->owned = std::move(owned).value();
      if (nbytes > 0) std::memcpy(t->owned.bytes().data(), data, nbytes);
      t->view = t->owned.view();
    } else {
      // Inputs are only read; the const_cast is undone by the executor's const bindings.
      t->view = longrun::TensorView{*desc, const_cast<void*>(data)};
    }
    *out_tensor = t.release();
    return LR_OK;
  });
}

void lr_tensor_free(lr_tensor* tensor) { delete tensor; }

lr_status lr_tensor_dtype(const lr_tensor* tensor, lr_dtype* out_dtype) {
  return guarded("lr_tensor_dtype", [&] {
    LR_CAPI_REQUIRE(tensor, "lr_tensor_dtype");
    LR_CAPI_REQUIRE(out_dtype, "lr_tensor_dtype");
    *out_dtype = static_cast<lr_dtype>(int(tensor->view.desc.dtype()));
    return LR_OK;
  });
}

lr_status lr_tensor_rank(const lr_tensor* tensor, size_t* out_rank) {
  return guarded("lr_tensor_rank", [&] {
    LR_CAPI_REQUIRE(tensor, "lr_tensor_rank");
    LR_CAPI_REQUIRE(out_rank, "lr_tensor_rank");
    *out_rank = size_t(tensor->view.desc.rank());
    return LR_OK;
  });
}

lr_status lr_tensor_dims(const lr_tensor* tensor, int64_t* dims, size_t capacity) {
  return guarded("lr_tensor_dims", [&] {
    LR_CAPI_REQUIRE(tensor, "lr_tensor_dims");
    if (capacity > 0 && dims == nullptr) return fail(LR_INVALID_ARGUMENT, "lr_tensor_dims: dims is NULL");
    const size_t rank = size_t(tensor->view.desc.rank());
    for (size_t i = 0; i < rank && i < capacity; ++i) dims[i] = tensor->view.desc.dim(int(i));
    return LR_OK;
  });
}

lr_status lr_tensor_nbytes(const lr_tensor* tensor, size_t* out_nbytes) {
  return guarded("lr_tensor_nbytes", [&] {
    LR_CAPI_REQUIRE(tensor, "lr_tensor_nbytes");
    LR_CAPI_REQUIRE(out_nbytes, "lr_tensor_nbytes");
    *out_nbytes = size_t(tensor->view.desc.nbytes());
    return LR_OK;
  });
}

lr_status lr_tensor_data(const lr_tensor* tensor, const void** out_data) {
  return guarded("lr_tensor_data", [&] {
    LR_CAPI_REQUIRE(tensor, "lr_tensor_data");
    LR_CAPI_REQUIRE(out_data, "lr_tensor_data");
    *out_data = tensor->view.data;
    return LR_OK;
  });
}

}  // extern "C"
