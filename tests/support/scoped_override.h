// Sets a process-wide tunable (a `T&` such as cpu::stream_min_bytes()) for a scope and puts the
// old value back, so that a test can steer a kernel onto the route it wants to check.
#pragma once

namespace longrun::test_support {

template <class T>
class ScopedOverride {
 public:
  ScopedOverride(T& target, T value) : target_(target), saved_(target) { target_ = value; }
  ~ScopedOverride() { target_ = saved_; }
  ScopedOverride(const ScopedOverride&) = delete;
  ScopedOverride& operator=(const ScopedOverride&) = delete;

 private:
  T& target_;
  T saved_;
};

}  // namespace longrun::test_support
