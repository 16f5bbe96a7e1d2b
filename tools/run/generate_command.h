// longrun-run --generate: greedy / beam-search generation with an encoder-decoder model
// (longrun/models/generate.h). Flags are parsed here so that main.cpp only forwards them.
#pragma once

#include <memory>
#include <vector>

#include "longrun/models/generate.h"
#include "longrun/models/model.h"
#include "longrun/session.h"
#include "longrun/tensor.h"

namespace longrun_run {

struct GenerationFlags {
  bool enabled = false;  // --generate
  longrun::GenerateOptions options;
};

// If argv[*i] is a generation flag, consumes it (and its value, advancing *i) and returns 0,
// or 2 after printing a usage error. Returns -1 for any other argument.
int parse_generation_flag(int argc, char** argv, int* i, GenerationFlags* flags);

// The --help lines of the generation flags.
const char* generation_usage();

// Generates from the model inputs (input_ids, optional attention_mask) and prints every
// sentence's hypotheses (ids), their scores and the step count. Returns the exit status.
int run_generation(const std::shared_ptr<const longrun::Model>& model,
                   const std::vector<longrun::NamedTensor>& inputs, const longrun::SessionOptions& options,
                   const GenerationFlags& flags);

}  // namespace longrun_run
